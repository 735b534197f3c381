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

import numpy as np

from ._arrays import foreign_device
from ._call import KINDS, BACKENDS, Part, kind_key
from .dist.agree import default_comm
from .dist.plan import fail_exchange

__all__ = ["scan", "cumsum", "cumprod", "cummax", "cummin", "exclusive_scan", "reduce", "BACKENDS"]


def scan(x, op="sum", *, exclusive=False, initial=None, dtype=None, out=None, comm=None, axis=0,
         strategy="auto", hierarchy="auto", backend="auto", timings=None, node_size=None, algorithm="auto"):
    """Scan the distributed array whose local part is ``x``.

    Parameters
    ----------
    x : array_like
        This rank's part (NumPy, CuPy, PyTorch, DLPack or CUDA-array-interface
        array).  Axis 0 is distributed: the global array is the concatenation of
        all ranks' parts in rank order.  Parts may differ in length and be empty;
        trailing dimensions must agree.
    op : str, numpy.ufunc or Op
        ``"sum"``, ``"prod"``, ``"max"``, ``"min"``, ``"logical_and"``, ``"logical_or"``,
        ``"logical_xor"``, ``"bitwise_and"``, ``"bitwise_or"``, ``"bitwise_xor"``.
    exclusive : bool
        Exclusive scan: element i combines the elements before i; the first
        element of the global result is ``initial`` (or the operator's identity).
    initial : scalar or array, optional
        Value folded in before the first element of the global array (rank 0's
        value is used).  Shape: scalar or the trailing shape.
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
        fastest: NumPy's sequential scan on the CPU, the coarsened block scan with decoupled
        look-back on the GPU), a block-level name (``kogge_stone``,
        ``kogge_stone_double_buffer``, ``brent_kung``, ``blelloch``, ``coarsened``) for the scan
        inside a tile, or a device-level one (``hierarchical``, ``domino``, ``lookback``).
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
        Unsupported dtype for the operator, or a mismatched ``out``.
    ValueError
        Unknown operator/strategy, bad ``axis``/``initial``/``out`` shape, or
        arguments (op, dtypes, axis, trailing shape, ...) that differ across ranks.
    DistScanError
        Any other failure on some rank (e.g. out of device memory), raised on all.
    """
    return _scan(x, op, exclusive, initial, dtype, out, default_comm(comm), axis, strategy, hierarchy, backend,
                 timings, node_size, algorithm)


def _scan(x, op, exclusive, initial, dtype, out, comm, axis, strategy, hierarchy, backend, timings, node_size,
          algorithm):
    """:func:`scan` with its arguments in order: the one route from a call to its plan.

    The part is resolved on this rank alone (the cheap way for a kind of call seen before, else
    as a :class:`distscan._call.Part`); a rank that cannot resolve it joins the plan's exchange
    as failed.  Then every rank runs its plan: the same collectives whichever way the part was
    resolved (:mod:`distscan.dist.plan`)."""
    group = comm if comm is not None and comm.Get_size() > 1 else None
    key = None
    if initial is None:
        try:
            key = kind_key(x, op, exclusive, dtype, out, axis, strategy, hierarchy, backend, algorithm, node_size)
            kind = KINDS.lookup(key)
        except AttributeError:  # not an array: a list, a scalar
            kind = None
        if kind is not None and kind.takes(x, out):
            return kind.plan(group).run(x, out=out, timings=timings, fast=True)
    device = foreign_device(x)
    if device is not None:  # run where the data is: its device made current for the whole call
        with device:
            return _scan(x, op, exclusive, initial, dtype, out, comm, axis, strategy, hierarchy, backend, timings,
                         node_size, algorithm)
    try:
        part = Part(x, op, exclusive, initial, dtype, out, axis, strategy, hierarchy, backend, algorithm)
        plan = part.plan(group, node_size)
    except Exception as exc:  # noqa: BLE001 - every rank must learn it: join the plan's exchange
        if group is None:
            raise
        fail_exchange(group, exc)
    KINDS.remember(key, x, part, node_size)
    if part.distributed:
        return plan.run(part.rows, out=part.out_rows, initial=part.initial, timings=timings,
                        finish=part.finish, finish_may_fail=part.finish_may_fail)
    # Another axis: each rank scans its own part; the exchange only agrees on failures and
    # arguments (after the work, so that one collective agrees on both).
    error, result = None, None
    try:
        rows, _ = plan.seeded_scan(part.rows, part.initial, out=part.out_rows)
        result = part.finish(rows)
    except Exception as exc:  # noqa: BLE001
        if group is None:
            raise
        error = exc
    plan.agree(error, rows=int(part.rows.shape[0]))
    return result


# ---------------------------------------------------------------------------
# Named scans and the global reduction
# ---------------------------------------------------------------------------

def _named_scan(x, op, exclusive, initial, dtype, out, comm, axis, kwargs):
    """``scan(x, op, ...)`` for the named scans, without passing ten keywords on (their cost shows
    in a loop of small calls: benchmarks/RESULTS.md, "Issue 10, eleventh pass")."""
    if kwargs:
        return scan(x, op, exclusive=exclusive, initial=initial, dtype=dtype, out=out, comm=comm, axis=axis, **kwargs)
    return _scan(x, op, exclusive, initial, dtype, out, default_comm(comm), axis, "auto", "auto", "auto", None, None,
                 "auto")


def cumsum(x, *, exclusive=False, initial=None, dtype=None, out=None, comm=None, axis=0, **kwargs):
    """Cumulative sum of the distributed array; see :func:`scan`."""
    return _named_scan(x, "sum", exclusive, initial, dtype, out, comm, axis, kwargs)


def cumprod(x, *, exclusive=False, initial=None, dtype=None, out=None, comm=None, axis=0, **kwargs):
    """Cumulative product of the distributed array; see :func:`scan`."""
    return _named_scan(x, "prod", exclusive, initial, dtype, out, comm, axis, kwargs)


def cummax(x, *, exclusive=False, initial=None, dtype=None, out=None, comm=None, axis=0, **kwargs):
    """Running maximum (NaN propagates, as in ``numpy.maximum.accumulate``); see :func:`scan`."""
    return _named_scan(x, "max", exclusive, initial, dtype, out, comm, axis, kwargs)


def cummin(x, *, exclusive=False, initial=None, dtype=None, out=None, comm=None, axis=0, **kwargs):
    """Running minimum (NaN propagates, as in ``numpy.minimum.accumulate``); see :func:`scan`."""
    return _named_scan(x, "min", exclusive, initial, dtype, out, comm, axis, kwargs)


def exclusive_scan(x, op="sum", **kwargs):
    """Exclusive scan: ``scan(x, op, exclusive=True, ...)``."""
    return scan(x, op, exclusive=True, **kwargs)


def reduce(x, op="sum", *, dtype=None, comm=None, axis=0, backend="auto"):
    """The global total of the distributed array, returned on every rank.

    Reduces over the distributed axis 0 (``axis=None``: over all elements).
    The result is a NumPy scalar (1-D input) or NumPy array of the trailing
    shape, in the dtype NumPy's ``sum``/``prod``/... would give.

    Raises
    ------
    ValueError
        If the global array is empty and the operator has no identity in NumPy
        (``max``, ``min``), as ``numpy.max`` does.
    """
    device = foreign_device(x)
    if device is not None:  # run where the data is
        with device:
            return reduce(x, op, dtype=dtype, comm=comm, axis=axis, backend=backend)
    comm = default_comm(comm)
    group = comm if comm is not None and comm.Get_size() > 1 else None
    part, plan = None, None
    try:
        if axis not in (0, None):
            raise ValueError(f"reduce works over the distributed axis: axis must be 0 or None, got {axis!r}")
        part = Part(x, op, False, None, dtype, None, axis, "auto", "auto", backend)
        plan = part.plan(group, None)
    except Exception as exc:  # noqa: BLE001 - every rank must learn it: join the plan's exchange
        if group is None:
            raise
        fail_exchange(group, exc, what="reduce arguments")
    total, rows = plan.total(part.rows, what="reduce arguments")
    if rows == 0 and plan.op.name in ("max", "min"):
        raise ValueError(f"zero-size array to reduction operation {plan.op.name} which has no identity")
    acc = plan.types.acc
    identity = np.full(plan.w, plan.op.identity(acc), acc)
    # NumPy's reductions start from the identity (np.sum([-0.0]) is +0.0); carries start from the
    # neutral element (-0.0 for float sums), which keeps a part's own signs.
    total = identity if total is None else plan.op.ufunc(identity, np.asarray(total, acc)).astype(acc)
    total = np.asarray(total).astype(plan.types.result)
    return total.reshape(plan.trailing)[()] if plan.trailing else total[0]
