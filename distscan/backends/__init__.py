"""Backends: the per-rank (local) part of a scan.

A backend is a module with the functions below.  Every array it gets is a
C-contiguous 2-D array ``x`` of shape ``(n, w)`` in the backend's own array type
(NumPy for ``cpu``, CuPy for ``cuda``): ``n`` rows along the scanned axis, ``w``
independent columns (``w == 1`` for 1-D data).  Carries (seeds, totals, offsets)
are small host NumPy arrays of shape ``(w,)`` in the accumulator dtype, because
they travel through MPI.

``scan(x, op, types, *, exclusive=False, seed=None, out=None, want_total=False)``
    Scan ``x`` along axis 0 with ``op`` (a :class:`distscan.ops.Op`); ``types`` is a
    :class:`distscan._dtypes.ScanTypes`.  ``seed`` (or None) is folded in before the
    first row: inclusive ``out[i] = seed op x[0] op ... op x[i]``; exclusive
    ``out[0] = seed`` (identity without a seed), ``out[i] = seed op x[0] ... op x[i-1]``.
    ``out`` is an ``(n, w)`` array of ``types.result`` to write into, or None to
    allocate one.  Returns ``(out, total)``; ``total`` is None unless ``want_total``,
    then the host array ``seed op x[0] op ... op x[n-1]`` in ``types.acc`` (the
    identity when ``n == 0`` and there is no seed), taken from the accumulator,
    not from the (possibly narrower) output.  A 1-D ``x`` (one column) is accepted
    too and gives a 1-D result: the single-rank fast path of the API uses it.

``reduce(x, op, types)``
    Host array ``(w,)`` in ``types.acc``: ``x[0] op ... op x[n-1]``, identity if empty.

``combine(y, op, types, offset)``
    In place, ``y[i] = offset op y[i]`` for every row; ``offset`` is a host array ``(w,)``.

``astype(a, dtype)``
    ``a`` (the backend's array) as a C-contiguous array of ``dtype`` with NumPy's values (``a``
    itself where it is one already): how a recurrence's coefficients become the accumulator's
    (``cuda``: float32 subnormals kept, which CuPy's own cast flushes).

``lean_arrays(x, out, types)``
    Whether the plan's lean call (``ScanPlan.run(fast=True)``: the backend's ``reduce`` and
    ``scan`` with nothing around them) takes these arrays: a contiguous 1-D ``x`` of the
    backend's type (``cuda``: on the current device), and an ``out`` it can write (contiguous,
    of ``x``'s shape and ``types.result``, not overlapping ``x``; ``cpu``: writable too, since
    the lean call writes it after the exchange).

``scan_lean(x, op, types, exclusive, out, seed=None)``
    ``scan(x, ..., seed=seed, out=out)[0]`` for arrays ``lean_arrays`` accepted, without
    checking them again: the lean call's seeded scan.

``lean_scanner(op, types, exclusive)``
    ``scan_lean`` without a seed as a function of ``(x, out)``, made once per plan
    (``ScanPlan.one_rank``): the single-rank call of the API runs it straight from its call
    kind, so each backend puts as little as it can between the call and its kernel.  It holds
    no array and nothing read from one.

``lean_state_scanner(op, types, exclusive, reverse, algorithm, general)`` (optional; ``cpu``, ``cuda``)
    A reverse or state scan of one rank's part without a seed, as a function of ``(x, out,
    aux)`` made once per plan (``ScanPlan.one_rank_state``), or None where no call of this kind
    takes it (the plan then runs ``general``): the single-rank call of the API runs it straight
    from its call kind, with the arrays the kind checked (``distscan._kinds.Kind.aux``).
    ``general(x, out, aux)`` is the plan's own route, which the function hands the calls it does
    not take (an empty part, say).  It holds no array and nothing read from one.

``prepare(op, types, exclusive, w)`` (optional; ``cpu``)
    A state operator's loops for one plan, made once (compiled, constant rows), or None:
    an object with ``rows(x)`` (``x`` as the loops read it), ``carry(rows, aux, reverse)`` and
    ``scan(rows, aux, seed=, out=, initial=, reverse=)``.  A plan makes them before its first
    exchange (a compile that fails is agreed in it); its finish then runs code that cannot fail
    and compiles nothing (distscan.backends.cpu_states.Loops states the assumption), and asks
    for no agreement after it.

``is_native(x)`` / ``name``
    Whether ``x`` is this backend's array type; the backend's name.
"""

from __future__ import annotations

import importlib

BACKEND_NAMES = ("cpu", "cuda")
_loaded: dict = {}


def get_backend(name: str):
    """Return the backend module called ``name`` (``"cpu"`` or ``"cuda"``).

    Raises
    ------
    ValueError
        For an unknown name.
    RuntimeError
        If the CUDA backend is asked for and CuPy or a GPU is missing.
    """
    module = _loaded.get(name)
    if module is None:
        if name not in BACKEND_NAMES:
            raise ValueError(f"unknown backend {name!r}; choose one of {', '.join(BACKEND_NAMES)}")
        module = _loaded[name] = importlib.import_module(f"distscan.backends.{name}")
    return module
