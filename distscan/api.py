"""Public functions: ``scan``, ``cumsum``, ``cumprod``, ``cummax``, ``cummin``, ``reduce``.

Each rank passes its local part; the result is its part of the scan of the
concatenation of all parts in rank order.  The call is collective over ``comm``:
every rank calls it, and a failure on any rank raises the same exception on
every rank (:mod:`distscan.dist.agree`).

Shape of a distributed scan (``strategy``):

``reduce_then_scan`` (default; 3N bytes)
    local reduce -> ``Exscan`` of totals -> local scan seeded with the offset.
``scan_then_add`` (4N bytes)
    local scan -> ``Exscan`` of totals -> add the offset to every element.
"""

from __future__ import annotations

import inspect

import numpy as np

from ._arrays import foreign_device, to_native
from ._call import BACKENDS, Part
from ._kinds import KINDS, NOT_THIS_KIND, options_key, state_options
from .dist.agree import default_comm
from .dist.arguments import (MISSING, SUM, Default, by_keyword, check_arguments, group_of, missing_parts, parts_of,
                             refuse_communicator_as_op, refuse_communicator_as_part)
from .dist.exchange import raise_everywhere
from .dist.nodes import node_size_of_call
from .dist.totals import reduce_result
from .ops.options import NO_COEFFICIENTS

__all__ = ["scan", "cumsum", "cumprod", "cummax", "cummin", "nancumsum", "nancumprod", "cumulative_sum",
           "cumulative_prod", "linear_recurrence", "exclusive_scan", "reduce", "BACKENDS"]


def scan(x=MISSING, op=SUM, /, *extra, exclusive=False, initial=None, dtype=None, out=None, comm=None, axis=0, reverse=False,
         segments=None, include_initial=False, compensated=False, strategy="auto", hierarchy="auto", backend="auto",
         timings=None, node_size=None, algorithm="auto", **unknown):
    """Scan the distributed array whose local part is ``x``.

    Parameters
    ----------
    x : array_like
        This rank's part (NumPy, CuPy, PyTorch, DLPack or CUDA-array-interface
        array).  Axis 0 is distributed: the global array is the concatenation of
        all ranks' parts in rank order.  Parts may differ in length and be empty;
        trailing dimensions must agree.
    op : str, numpy.ufunc or Operator
        ``"sum"``, ``"prod"``, ``"max"``, ``"min"``, ``"logical_and"``, ``"logical_or"``,
        ``"logical_xor"``, ``"bitwise_and"``, ``"bitwise_or"``, ``"bitwise_xor"``; the NaN-aware
        ``"nansum"``, ``"nanprod"``, ``"nanmax"`` (``np.fmax``), ``"nanmin"`` (``np.fmin``);
        ``"logaddexp"`` (logcumsumexp), ``"logaddexp2"``, ``"gcd"``, ``"lcm"``; those NumPy ufuncs
        themselves; or a :class:`distscan.Operator`.  Non-associative ufuncs (``np.subtract``,
        ``np.divide``, ``np.power``, ...) are refused: split across ranks they would compute
        something else.
    exclusive : bool
        Exclusive scan: element i combines the elements before i; the first
        element of the global result is ``initial`` (or the operator's identity).
    initial : scalar or array, optional
        Value folded in before the first element of the global array (rank 0's
        value is used; with ``reverse=True`` the last rank's).  Shape: scalar or the trailing
        shape.  With ``segments=``, every segment starts from it: its elements give
        ``initial op (x[s] op ... op x[i])`` (a float product: ``initial`` multiplied in first, so
        that a zero absorbs as in ``numpy.cumprod``), an exclusive scan gives it at each segment's
        first element; every rank must then pass the same value.
    reverse : bool
        Suffix scan: element i combines the elements from i to the end of the global array
        (the last rank's part is scanned first), inclusive or exclusive.
    segments : array_like of bool, optional
        One flag per element along the scanned axis; True starts a new segment, which does not
        see the elements before it.  Segments may span any number of ranks.  With
        ``reverse=True`` the segments are the same runs, each scanned right to left.
    include_initial : bool
        As the Array API's ``cumulative_sum``: the result has one element more, ``initial`` (or
        the identity), in front of the first rank's part (after the last rank's with
        ``reverse=True``).  Not with ``exclusive=True``.
    compensated : bool
        Float and complex sums only: carry each prefix as (sum, error) pairs (TwoSum), within
        tiles and between tiles, GPUs and ranks: a double-length sum, rounded once.  Where the
        items are multiples of one power of two ``2**k`` and every sum of consecutive items is
        below ``2**(k + 40)`` (float32; ``2**(k + 98)`` for float64), each result is the exact
        prefix correctly rounded; in general each is within 2 ulp plus
        ``(3 m + R**2) u**2 sum|x|`` of the exact prefix of ``m`` items (``u = eps/2``; ``R``
        the items a GPU thread sums alone, at most 32; 0 on the CPU), where a plain sum's bound
        is ``m u sum|x|`` (docs/operators.md).
    dtype : dtype, optional
        Result dtype; the input is cast to it first, as in NumPy.  Default follows
        NumPy (``cumsum`` of int32 is int64; logical operators give bool).
        float16 sums and products accumulate in float32.
    out : array, optional
        Output of the result's shape and dtype, of the input's array type.
    comm : mpi4py.MPI.Comm, optional
        Default ``MPI.COMM_WORLD`` (or no communication if mpi4py is not installed).
    axis : int or None
        0 (default) scans the distributed axis.  Another axis scans each rank's
        part locally (no communication).  None scans the flattened array in C
        order, which with axis 0 distributed is the concatenation of the
        flattened parts; the result is 1-D.
    algorithm : str
        The scan algorithm (``distscan.ALGORITHMS``; docs/algorithms.md): ``"auto"`` (the
        fastest: NumPy's sequential scan on the CPU; on the GPU the coarsened block scan with
        decoupled look-back, or for large arrays the look-ahead kernel), a block-level name
        (``kogge_stone``, ``kogge_stone_double_buffer``, ``brent_kung``, ``blelloch``,
        ``coarsened``) for the scan inside a tile, or a device-level one (``hierarchical``,
        ``domino``, ``lookback``, ``lookahead``).
    strategy : {"auto", "reduce_then_scan", "scan_then_add"}
        See the module docstring; auto is ``reduce_then_scan``.
    hierarchy : {"auto", "flat", "node"}
        How totals are exchanged (:mod:`distscan.dist.exchange`).
    backend : {"auto", "cpu", "cuda"}
        auto follows the input: GPU arrays on ``cuda``, the rest on ``cpu``.  A
        backend other than the input's moves the data there and back.
    timings : dict, optional
        Filled with seconds per phase: ``reduce``, ``exscan``, ``scan``, ``combine``.
    node_size : int, optional
        Force blocks of this many consecutive ranks to act as nodes (tests).

    Returns
    -------
    array
        This rank's part of the global scan, of the input's array type and device.

    Raises
    ------
    TypeError
        Unsupported dtype for the operator, or a mismatched ``out``; an unknown keyword or a
        positional argument past ``x`` and ``op`` (on any rank: raised on every rank, as every
        failure is).
    ValueError
        Unknown operator/strategy, bad ``axis``/``initial``/``out`` shape, or
        arguments (op, dtypes, axis, trailing shape, ...) that differ across ranks.
    DistScanError
        Any other failure on some rank (e.g. out of device memory), raised on all.
    """
    checked = False  # (whether parts_of has tested x for a communicator: not twice)
    if unknown or extra or x is MISSING:
        if len(unknown) == 1 and type(op) is Default and not extra and x is not MISSING:
            op = unknown.pop("op", op)  # scan(x, op="max"), op alone by keyword: as by_keyword takes it
        if unknown or extra or x is MISSING:
            x, op = parts_of("scan", x, op, comm, extra, unknown)
            checked = True
    refuse_communicator_as_op("scan", op, comm)
    if type(x) is not np.ndarray and comm is None and not checked:  # (the common call pays this test alone)
        refuse_communicator_as_part("scan", comm, {"x": x})
    return _scan(x, op, exclusive, initial, dtype, out, default_comm(comm), axis, strategy, hierarchy, backend,
                 timings, node_size, algorithm, state_options(reverse, segments, include_initial, compensated))


# scan()'s keywords, which the functions built on it pass on
_SCAN_KEYWORDS = frozenset(inspect.signature(scan).parameters) - {"x", "op", "extra", "unknown"}


def _scan(x, op, exclusive, initial, dtype, out, comm, axis, strategy, hierarchy, backend, timings, node_size,
          algorithm, options=None):
    """:func:`scan` with its arguments in order: the one route from a call to its plan.

    The part is resolved on this rank alone (the cheap way for a kind of call seen before, else
    as a :class:`distscan._call.Part`); a rank that cannot resolve it joins the plan's exchange
    as failed.  Then every rank runs its plan: the same collectives whichever way the part was
    resolved (:mod:`distscan.dist.plan`)."""
    group = group_of(comm)
    if node_size is None and group is not None:
        # DISTSCAN_NODE_SIZE as it is now, in the key of the call's kind and plan: a call after the
        # variable changed finds the plan of its new value (distscan.dist.nodes.node_size_of_call)
        node_size = node_size_of_call(None)
    key = None
    if initial is None:
        try:
            # The raw arguments that fix a call's kind (AttributeError for a part without a dtype),
            # built here rather than in a function: the common call's host time shows every call.
            # (an axis that is not an int is keyed with its type: 0.0 == 0, and a float axis must
            # reach Part's TypeError, not the kind of axis=0)
            # (a declared operator with what its code reads now: a global changed since its last call
            # is another kind of call, with its own plan: Operator.reads_key)
            reads = getattr(op, "reads_key", None)
            key = (type(x), x.dtype, type(out), None if out is None else out.dtype, op, exclusive, dtype,
                   axis if axis is None or type(axis) is int else (type(axis), axis),
                   strategy, hierarchy, backend, algorithm, node_size, None if reads is None else reads(),
                   None if options is None else options_key(options))
            kind = KINDS.get(key)
        except Exception:  # noqa: BLE001 - not an array (a list, a scalar), an unhashable argument, or
            kind = None     # one whose dtype or hash raises: Part below meets it inside the agreement
        if kind is not None:
            result = kind.run(x, out, options, group, timings)
            if result is not NOT_THIS_KIND:
                return result
    device = foreign_device(x)
    if device is not None:  # run where the data is: its device made current for the whole call
        with device:
            return _scan(x, op, exclusive, initial, dtype, out, comm, axis, strategy, hierarchy, backend, timings,
                         node_size, algorithm, options)
    try:
        first = group is None or group.Get_rank() == (group.Get_size() - 1 if options and options.get("reverse")
                                                       else 0)
        part = Part(x, op, exclusive, initial, dtype, out, axis, strategy, hierarchy, backend, algorithm,
                    first=first, **(options or {}))
        plan = part.plan(group, node_size)
    except BaseException as exc:  # noqa: BLE001 - every rank must learn it: join the plan's exchange
        raise_everywhere(group, exc)  # (a KeyboardInterrupt of check=True's combine too: agree.raise_agreed)
    if not getattr(part.op, "check", False):  # check=True samples every call's input: each takes this route
        KINDS.remember(key, x, part, node_size)
    if part.distributed:
        return plan.run(part.rows, out=part.out_rows, initial=part.initial, timings=timings,
                        finish=part.finish, finish_may_fail=part.finish_may_fail, aux=part.aux)
    # Another axis: each rank scans its own part; the exchange only agrees on failures and
    # arguments (after the work, so that one collective agrees on both).
    error, result = None, None
    try:
        rows, _ = plan.seeded_scan(part.rows, plan.initial_seed(part.initial), out=part.out_rows, aux=part.aux,
                                   initial=part.initial)
        result = part.finish(rows)
    except BaseException as exc:  # noqa: BLE001 - a user's combine may raise KeyboardInterrupt too
        if group is None:
            raise
        error = exc
    plan.agree(error, rows=int(part.rows.shape[0]))
    return result


# ---------------------------------------------------------------------------
# Named scans and the global reduction
# ---------------------------------------------------------------------------

def _named_scan(name: str, op: str, doc: str):
    """The named scan ``name`` of ``op`` (``cumsum`` is ``_named_scan("cumsum", "sum", ...)``):
    ``scan(x, op, ...)`` that goes to :func:`_scan` itself, one Python call fewer and without
    passing ten keywords on (each shows in a loop of small calls: benchmarks/RESULTS.md, "Issue
    10, eleventh pass")."""
    def named(x=MISSING, /, *extra, exclusive=False, initial=None, dtype=None, out=None, comm=None, axis=0,
              reverse=False, segments=None, **kwargs):
        if kwargs or extra or x is MISSING:
            if len(kwargs) == 1 and x is MISSING and not extra:
                x = kwargs.pop("x", MISSING)  # cumsum(x=x), the part alone by keyword: as by_keyword takes it
            if kwargs or extra or x is MISSING:  # (a communicator among them first: it says which ranks call)
                refuse_communicator_as_part(name, comm, {"x": x}, extra, kwargs)
                if "x" in kwargs:
                    (x,) = by_keyword(name, kwargs, comm, extra, x=x)
                check_arguments(name, kwargs, comm, _SCAN_KEYWORDS, extra, missing=missing_parts(x=x))
                return scan(x, op, exclusive=exclusive, initial=initial, dtype=dtype, out=out, comm=comm, axis=axis,
                            reverse=reverse, segments=segments, **kwargs)
        if type(x) is not np.ndarray and comm is None:  # (the common call pays this test alone)
            refuse_communicator_as_part(name, comm, {"x": x})
        # reverse= and segments= alone (the common state scans) go straight on as well
        return _scan(x, op, exclusive, initial, dtype, out, default_comm(comm), axis, "auto", "auto", "auto", None,
                     None, "auto", state_options(reverse, segments, False, False))
    named.__name__ = named.__qualname__ = name
    named.__doc__ = doc + "; see :func:`scan`."
    return named


cumsum = _named_scan("cumsum", "sum", "Cumulative sum of the distributed array")
cumprod = _named_scan("cumprod", "prod", "Cumulative product of the distributed array")
cummax = _named_scan("cummax", "max", "Running maximum (NaN propagates, as in ``numpy.maximum.accumulate``)")
cummin = _named_scan("cummin", "min", "Running minimum (NaN propagates, as in ``numpy.minimum.accumulate``)")
nancumsum = _named_scan("nancumsum", "nansum", "Cumulative sum with NaN counted as zero, as ``numpy.nancumsum``")
nancumprod = _named_scan("nancumprod", "nanprod", "Cumulative product with NaN counted as one, as ``numpy.nancumprod``")


# the keywords of scan() that cumulative_sum() and cumulative_prod() pass on
_CUMULATIVE_KEYWORDS = _SCAN_KEYWORDS - {"dtype", "axis", "include_initial"}


def _cumulative(x, op, axis, dtype, include_initial, comm, kwargs, extra):
    """The Array API's ``cumulative_sum``/``cumulative_prod``: ``axis`` may be None only for 1-D
    parts, and 0-d parts are refused (NumPy 2 does the same): on every rank, when one rank's part is
    (the others are in the plan's exchange by then: that rank joins it as failed)."""
    if kwargs or extra or type(x) is not np.ndarray:  # (before default_comm: a communicator in them may be the call's)
        refuse_communicator_as_part(f"cumulative_{op}", comm, {"x": x}, extra)
        if kwargs or extra or x is MISSING:
            check_arguments(f"cumulative_{op}", kwargs, comm, _CUMULATIVE_KEYWORDS, extra, missing=missing_parts(x=x))
    comm = default_comm(comm)
    error = None
    try:  # a DLPack or CUDA-array-interface object has no ndim: its array's (np.ndim took it as 0-d)
        ndim = x.ndim if hasattr(x, "ndim") else to_native(x)[0].ndim
        if ndim == 0:  # (an ndim that is not a number raises here too, on every rank)
            error = ValueError(f"cumulative_{op} does not take 0-d arrays")
        elif axis is None:
            if ndim > 1:
                error = ValueError(f"cumulative_{op}: axis is required for arrays of more than one dimension")
            axis = 0
    except Exception as exc:  # noqa: BLE001 - what cannot be converted fails on every rank, as in scan
        error = exc
    if error is not None:
        raise_everywhere(group_of(comm), error)
    return scan(x, op, dtype=dtype, comm=comm, axis=axis, include_initial=include_initial, **kwargs)


def cumulative_sum(x=MISSING, /, *extra, axis=None, dtype=None, include_initial=False, comm=None, **kwargs):
    """Cumulative sum as in the Array API standard and NumPy 2 (``numpy.cumulative_sum``); with
    ``include_initial=True`` the first rank's part holds the leading zero.  See :func:`scan`."""
    return _cumulative(x, "sum", axis, dtype, include_initial, comm, kwargs, extra)


def cumulative_prod(x=MISSING, /, *extra, axis=None, dtype=None, include_initial=False, comm=None, **kwargs):
    """Cumulative product as in the Array API standard and NumPy 2 (``numpy.cumulative_prod``);
    with ``include_initial=True`` the first rank's part holds the leading one.  See :func:`scan`."""
    return _cumulative(x, "prod", axis, dtype, include_initial, comm, kwargs, extra)


# the keywords of scan() that linear_recurrence() passes on
_RECURRENCE_KEYWORDS = frozenset(("strategy", "hierarchy", "backend", "timings", "node_size", "algorithm"))


def linear_recurrence(a=MISSING, b=MISSING, /, *extra, initial=0, reverse=False, out=None, comm=None, axis=0,
                      segments=None, dtype=None, **kwargs):
    """``y[i] = a[i] * y[i-1] + b[i]`` over the distributed array whose local parts are ``a`` and
    ``b``, with ``y[-1] = initial``; ``reverse=True``: ``y[i] = a[i] * y[i+1] + b[i]`` from the
    end of the last rank's part.

    The recurrence is a scan of affine maps ``y -> a*y + b`` (composed in order); each rank
    composes its part's maps, the ranks exchange one map each, and each rank runs its
    recurrence from the value before it.  Float and complex (state-space models), and integer
    (wrapping as NumPy's arithmetic does) dtypes; ``a`` broadcasts to ``b``'s part (a scalar:
    a constant decay).  The dtype is NumPy's for ``a*b + b``, or ``dtype=``.

    ``segments``: one flag per element along the axis; a flagged element starts the recurrence
    again, from ``initial``: ``y[i] = a[i] * initial + b[i]`` (with ``reverse=True`` the flags
    still mark each run's first element in array order, and each run is run right to left).
    ``initial`` (the same on every rank) is a scalar or of the trailing shape; with
    ``initial=0`` the first ``y`` is ``b`` itself: a zero contributes nothing, and an infinite
    or NaN ``a`` times ``y == 0`` is 0, not NaN (docs/operators.md), wherever the array is split.

    Floats are not associative: the result is within a few ulp times the condition of the
    recurrence of a sequential float64 loop (tests/ops/__init__.py states the bounds).
    Other keywords (``backend=``, ``strategy=``, ...) as :func:`scan`.
    """
    # a communicator among the arguments first, before by_keyword refuses: it says which ranks call (a
    # Python float a, the common constant decay, is tested as cheaply as an array)
    if kwargs or extra or type(b) is not np.ndarray or type(a) is not np.ndarray and type(a) is not float:
        refuse_communicator_as_part("linear_recurrence", comm, {"a": a, "b": b}, extra, kwargs)
    if kwargs and ("a" in kwargs or "b" in kwargs):  # (a and b by keyword, as they may be)
        a, b = by_keyword("linear_recurrence", kwargs, comm, extra, a=a, b=b)
    if a is None:  # (None in the options is "no recurrence": Part refuses this one on every rank)
        a = NO_COEFFICIENTS
    # y[-1] = 0 contributes nothing.  The default (a Python 0, or any Python number equal to 0:
    # the same truth np.any gives it) is tested without NumPy (np.any took 4.9 us of a small call).
    # An array of zeros is left to the call, which checks its shape first (a zero array of any
    # shape went unchecked) and then drops it alike.
    # (an initial NumPy cannot read, a ragged list, raised here on its rank alone, before any
    # collective, and the others waited in the exchange forever (2026-11-27): left to the call,
    # whose Part raises it on every rank)
    if type(initial) in (int, float, complex):
        if initial == 0:
            initial = None
    elif initial is not None:
        try:
            # (a number's zero only: an empty string, b"", COMM_NULL are false too, and were dropped
            # as a zero where the call refuses them; red team, s43)
            zero = np.ndim(initial) == 0 and np.asarray(initial).dtype.kind in "biufc" and not np.any(initial)
        except Exception:  # noqa: BLE001 - raised by Part on every rank (api._scan's raise_everywhere)
            zero = False
        if zero:
            initial = None
    options = {"reverse": reverse, "segments": segments, "coefficients": a}
    if kwargs or extra or a is MISSING or b is MISSING:  # (before default_comm: a communicator in them may be the call's)
        check_arguments("linear_recurrence", kwargs, comm, _RECURRENCE_KEYWORDS, extra, (2, 2),
                        missing_parts(a=a, b=b))
    comm = default_comm(comm)
    return _scan(b, "sum", False, initial, dtype, out, comm, axis, kwargs.get("strategy", "auto"),
                 kwargs.get("hierarchy", "auto"), kwargs.get("backend", "auto"), kwargs.get("timings"),
                 kwargs.get("node_size"), kwargs.get("algorithm", "auto"), options)


_EXCLUSIVE_KEYWORDS = _SCAN_KEYWORDS - {"exclusive"}


def exclusive_scan(x=MISSING, op=SUM, /, *extra, **kwargs):
    """Exclusive scan: ``scan(x, op, exclusive=True, ...)``."""
    if kwargs or extra or type(x) is not np.ndarray:  # (MISSING is not an ndarray)
        x, op = parts_of("exclusive_scan", x, op, kwargs.get("comm"), extra, kwargs, _EXCLUSIVE_KEYWORDS)
    refuse_communicator_as_op("exclusive_scan", op, kwargs.get("comm"))
    return scan(x, op, exclusive=True, **kwargs)


def reduce(x=MISSING, op=SUM, /, *extra, dtype=None, comm=None, axis=0, backend="auto", **unknown):
    """The global total of the distributed array, returned on every rank.

    Reduces over the distributed axis 0 (``axis=None``: over all elements).
    The result is a NumPy scalar (1-D input) or NumPy array of the trailing
    shape, in the dtype NumPy's ``sum``/``prod``/... would give.

    Raises
    ------
    ValueError
        If the global array is empty and the operator has no identity in NumPy
        (``max``, ``min``, ``nanmax``, ``nanmin``, ``lcm``), as ``numpy.max`` does.
    """
    if unknown or extra or type(x) is not np.ndarray:  # (no initial=: NumPy's sum(initial=) is not offered)
        x, op = parts_of("reduce", x, op, comm, extra, unknown)
    refuse_communicator_as_op("reduce", op, comm)
    device = foreign_device(x)
    if device is not None:  # run where the data is
        with device:
            return reduce(x, op, dtype=dtype, comm=comm, axis=axis, backend=backend)
    comm = default_comm(comm)
    group = group_of(comm)
    part, plan = None, None
    try:
        if axis not in (0, None):
            raise ValueError(f"reduce works over the distributed axis: axis must be 0 or None, got {axis!r}")
        part = Part(x, op, False, None, dtype, None, axis, "auto", "auto", backend)
        plan = part.plan(group, None if group is None else node_size_of_call(None))
    except BaseException as exc:  # noqa: BLE001 - every rank must learn it: join the plan's exchange
        raise_everywhere(group, exc)  # (a KeyboardInterrupt of check=True's combine too: agree.raise_agreed)
    return plan.total(part.rows, finish=lambda total, rows: reduce_result(plan, total, rows),
                      what="reduce arguments")
