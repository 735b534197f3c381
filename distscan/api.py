"""Public functions: ``scan``, ``cumsum``, ``cumprod``, ``cummax``, ``cummin``, ``reduce``.

Each rank passes its local part; the result is its part of the scan of the
concatenation of all parts in rank order.  The call is collective over ``comm``:
every rank calls it, and a failure on any rank raises the same exception on
every rank (:mod:`distscan._collective`).

Shape of a distributed scan (``strategy``):

``reduce_then_scan`` (default; 3N bytes)
    local reduce -> ``Exscan`` of totals -> local scan seeded with the offset.
``scan_then_add`` (4N bytes)
    local scan -> ``Exscan`` of totals -> add the offset to every element.
"""

from __future__ import annotations

import math
import time
from contextlib import contextmanager
from typing import Optional

import numpy as np

from . import hierarchy as _hierarchy
from ._arrays import to_native
from ._carry import Carries, zero_absorbs
from ._collective import agree, collectively
from ._dtypes import ScanTypes, scan_types
from .backends import get_backend
from .ops import Op, get_op

STRATEGIES = ("auto", "reduce_then_scan", "scan_then_add")
_STRATEGY_ALIASES = {"3n": "reduce_then_scan", "4n": "scan_then_add",
                     "reduce-then-scan": "reduce_then_scan", "scan-then-add": "scan_then_add"}
DEFAULT_STRATEGY = "reduce_then_scan"
BACKENDS = ("auto", "cpu", "cuda")


_world = []


def _default_comm(comm):
    """``comm`` or ``MPI.COMM_WORLD``; None when mpi4py is not installed (single process)."""
    if comm is not None:
        return comm
    if not _world:
        try:
            from mpi4py import MPI
            _world.append(MPI.COMM_WORLD)
        except ImportError:
            _world.append(None)
    return _world[0]


def _resolve_strategy(strategy: str) -> str:
    s = _STRATEGY_ALIASES.get(strategy, strategy)
    if s not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
    return DEFAULT_STRATEGY if s == "auto" else s


def _normalize_axis(axis, ndim: int):
    """None (flatten) or an axis in ``range(ndim)``."""
    if axis is None:
        return None
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise TypeError(f"axis must be an integer or None, got {axis!r}")
    if ndim == 0:
        raise np.exceptions.AxisError(f"axis {axis} is out of bounds for a 0-d array (use axis=None)")
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return int(axis) % ndim


class _NoTiming:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


_NO_TIMING = _NoTiming()


class _Timer:
    """Per-phase wall times into ``timings`` (device work synchronised first)."""

    def __init__(self, timings: Optional[dict], backend):
        self.timings = timings
        self._sync = getattr(backend, "synchronize", None) if timings is not None else None

    def phase(self, name: str):
        return self._timed(name) if self.timings is not None else _NO_TIMING

    @contextmanager
    def _timed(self, name: str):
        if self._sync:
            self._sync()
        t0 = time.perf_counter()
        yield
        if self._sync:
            self._sync()
        self.timings[name] = self.timings.get(name, 0.0) + time.perf_counter() - t0


def _initial_row(initial, types: ScanTypes, w: int):
    if initial is None:
        return None
    row = np.asarray(initial)
    if types.acc.kind == "b" and row.dtype.kind != "b":
        row = row != 0  # logical scans read any number as a truth value
    elif row.dtype.kind == "c" and types.acc.kind != "c":
        raise TypeError(f"initial value {initial!r} is complex but the scan is {types.result}")
    try:
        return np.broadcast_to(row.astype(types.acc), (w,)).copy()
    except ValueError:
        raise ValueError(f"initial must be a scalar or match the trailing shape; got shape {row.shape}") from None


def _check_out(out, shape, types: ScanTypes, backend):
    if not backend.is_native(out):
        raise TypeError(f"out must be a {backend.name} array like the input, got {type(out).__name__}")
    if tuple(out.shape) != tuple(shape):
        raise ValueError(f"out has shape {tuple(out.shape)}, expected {tuple(shape)}")
    if np.dtype(out.dtype).newbyteorder("=") != types.result:  # byte order is storage: NumPy converts
        raise TypeError(f"out has dtype {np.dtype(out.dtype)}, expected {types.result} (pass dtype= to change it)")


def _unwrap(x, op: Op):
    """``(array, wrap)``: NumPy subclasses as plain arrays, and how to give the result their form.

    ``numpy.matrix`` comes back as a matrix, as NumPy's scans return it (``axis=None``: one
    row).  A masked array follows ``numpy.ma``: masked elements count as the operator's
    identity and stay masked in the result.
    """
    if not isinstance(x, np.ndarray) or type(x) is np.ndarray:
        return x, None
    if isinstance(x, np.ma.MaskedArray):
        mask = np.ma.getmaskarray(x)
        data = x.filled(op.identity(np.dtype(x.dtype)) if x.dtype.kind in "biufc" else 0)
        return np.asarray(data), lambda r: np.ma.MaskedArray(r, mask=mask.reshape(r.shape))
    if isinstance(x, np.matrix):
        return np.asarray(x), np.asmatrix
    return np.asarray(x), None


def _may_overlap(a, b) -> bool:
    """Whether two arrays of one backend may share memory (bounds only: cheap and safe)."""
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and np.may_share_memory(a, b)
    import cupy
    return isinstance(b, cupy.ndarray) and cupy.may_share_memory(a, b)


def _need_cupy_backend():
    try:
        import cupy
    except ImportError:
        raise RuntimeError("backend='cuda' needs CuPy and an NVIDIA GPU: pip install 'distscan[gpu]' "
                           "(CuPy for CUDA 13; use cupy-cuda12x on CUDA 12 drivers)") from None
    return cupy


def _as_rows(x):
    """``x`` as a C-contiguous ``(n, w)`` array: rows along axis 0, w = product of the rest."""
    n = x.shape[0]
    w = math.prod(x.shape[1:])
    if not x.flags.c_contiguous:
        x = x.copy()  # keeps the array type (NumPy or CuPy), C order by default
    return x.reshape(n, w)


def scan(x, op="sum", *, exclusive=False, initial=None, dtype=None, out=None, comm=None, axis=0,
         strategy="auto", hierarchy="auto", backend="auto", timings=None, node_size=None):
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
    strategy : {"auto", "reduce_then_scan", "scan_then_add"}
        See the module docstring; auto is ``reduce_then_scan``.
    hierarchy : {"auto", "flat", "node"}
        How totals are exchanged (:mod:`distscan.hierarchy`).
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
    comm = _default_comm(comm)
    if comm is None or comm.Get_size() == 1:
        # One rank: nothing to agree on, local errors are raised as they are.
        if initial is None and out is None and timings is None:
            result = _local_fast_path(x, op, exclusive, dtype, axis, strategy, hierarchy, backend)
            if result is not None:
                return result
        return _Plan(x, op, exclusive, initial, dtype, out, axis, strategy, hierarchy, backend).run(
            comm, timings, node_size)
    error = None
    plan = None
    try:
        plan = _Plan(x, op, exclusive, initial, dtype, out, axis, strategy, hierarchy, backend)
        timer = _Timer(timings, plan.be)
        plan.begin(comm, timer)
    except Exception as exc:  # noqa: BLE001 - agreed below, then raised on every rank
        error = exc
    # One collective agrees both on local failures (arguments, the local reduce or scan) and on
    # the metadata all ranks must share; the exchange of totals follows.
    agree(comm, error, same=("scan arguments", plan.signature if plan is not None else None))
    return plan.complete(comm, timer, node_size)


_fast_plans: dict = {}


def _local_fast_path(x, op, exclusive, dtype, axis, strategy, hierarchy, backend):
    """The common single-rank call (contiguous 1-D NumPy or CuPy array, defaults) in one
    dictionary lookup, so small scans cost little more than the kernel launch.

    Returns None whenever anything is unusual; :class:`_Plan` then handles (or rejects) it.
    """
    try:
        key = (type(x), x.dtype, op, dtype, exclusive, axis, strategy, hierarchy, backend)
        plan = _fast_plans[key]
    except KeyError:
        plan = _fast_plans[key] = _fast_plan(type(x), x.dtype, op, exclusive, dtype, axis, strategy,
                                             hierarchy, backend)
    except (TypeError, AttributeError):  # unhashable arguments, or not an array at all
        return None
    if plan is None or x.ndim != 1 or not x.flags.c_contiguous:
        return None
    be, op_row, types, exclusive = plan
    result, _ = be.scan(x, op_row, types, exclusive=exclusive)
    return result


def _fast_plan(array_type, x_dtype, op, exclusive, dtype, axis, strategy, hierarchy, backend):
    """``(backend, Op, ScanTypes, exclusive)`` for the fast path, or None where it does not apply."""
    if array_type is np.ndarray:
        be = get_backend("cpu")
    elif array_type.__module__.startswith("cupy") and array_type.__name__ == "ndarray":
        be = get_backend("cuda")
    else:
        return None
    if backend not in ("auto", be.name) or axis not in (0, -1, None) or hierarchy not in _hierarchy.METHODS:
        return None
    try:
        _resolve_strategy(strategy)
        op_row = get_op(op)
        types = scan_types(op_row, x_dtype, dtype)
    except (TypeError, ValueError):
        return None  # let _Plan raise with its full context
    if x_dtype != types.input or (types.acc != types.result and x_dtype != types.result):
        return None  # non-native byte order, or a cast to float16 that must round first (_Plan)
    return be, op_row, types, bool(exclusive)


class _Plan:
    """Everything a scan needs, resolved and checked locally before any collective."""

    def __init__(self, x, op, exclusive, initial, dtype, out, axis, strategy, hierarchy, backend):
        self.op: Op = get_op(op)
        self.exclusive = bool(exclusive)
        self.strategy = _resolve_strategy(strategy)
        if hierarchy not in _hierarchy.METHODS:
            raise ValueError(f"unknown hierarchy method {hierarchy!r}; choose one of {', '.join(_hierarchy.METHODS)}")
        self.hierarchy = hierarchy
        if backend not in BACKENDS:
            raise ValueError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
        # A Python or NumPy scalar is a part of one element and gives a scalar (the write-offset
        # idiom: exclusive_scan(n_local)); 0-d arrays follow NumPy (axis=None gives 1-D).
        self.scalar = np.isscalar(x)
        x, self.wrap = _unwrap(x, self.op)
        native, self.native_backend, self.restore = to_native(x)
        self.backend_name = self.native_backend if backend == "auto" else backend
        self.be = get_backend(self.backend_name)
        work = self._to_backend(native)
        self.types = scan_types(self.op, work.dtype, dtype)
        self.carries = Carries(self.op, self.types.acc)
        if self.carries.flagged:
            # Only the seeded scan sees the elements a zero must absorb (see distscan._carry).
            self.strategy = "reduce_then_scan"
        if work.dtype != self.types.input:  # non-native byte order
            work = work.astype(self.types.input)
        if self.types.acc != self.types.result and work.dtype != self.types.result:
            # NumPy casts the input to dtype= first: a float16 result rounds every input to float16
            # before the float32 accumulator sees it.
            work = work.astype(self.types.result)
        if self.scalar:
            if axis not in (0, -1, None):
                raise np.exceptions.AxisError(f"axis {axis} is out of bounds for a scalar (use 0 or None)")
            work, axis = work.reshape(1), 0
        ax = _normalize_axis(axis, work.ndim)
        if ax is None:
            work, ax = work.reshape(-1), 0
        self.axis = ax
        self.distributed = ax == 0
        self.result_shape = tuple(int(s) for s in work.shape)
        if not self.distributed:
            # Scanning another axis is purely local: bring it to the front.
            work = self.xp.moveaxis(work, ax, 0)
        self.work_shape = tuple(int(s) for s in work.shape)
        self.trailing = self.work_shape[1:]
        self.initial = _initial_row(initial, self.types, math.prod(self.trailing))
        self.rows = _as_rows(work)

        self.out = out
        out_rows = None
        if out is not None:
            out_native, _, _ = to_native(out)
            _check_out(out_native, () if self.scalar else self.result_shape, self.types,
                       get_backend(self.native_backend))
            self.out_native = out_native
            # Write straight into the caller's array when the layouts agree and it does not
            # overlap the input (NumPy's scans give the same answer for any overlap).
            if (self.distributed and self.backend_name == self.native_backend and out_native.flags.c_contiguous
                    and out_native.dtype == self.types.result and not self.scalar
                    and not _may_overlap(out_native, native)):
                out_rows = out_native.reshape(self.rows.shape)
        self.direct_out = out_rows is not None
        self.out_rows = out_rows if out_rows is not None else self.xp.empty(self.rows.shape, self.types.result)
        self.signature = {
            "operator": self.op.name, "exclusive": self.exclusive, "dtype": str(self.types.input),
            "result dtype": str(self.types.result), "axis": axis,
            "trailing shape": self.trailing if self.distributed else None, "strategy": self.strategy,
            "hierarchy": self.hierarchy, "backend": self.backend_name,
            "_rows": int(self.rows.shape[0]),
        }

    @property
    def xp(self):
        """The array module of the backend (NumPy or CuPy)."""
        if self.backend_name == "cpu":
            return np
        import cupy
        return cupy

    def _to_backend(self, arr):
        if self.native_backend == self.backend_name:
            return arr
        if self.backend_name == "cuda":
            cupy = _need_cupy_backend()

            from ._binding import ensure_device
            ensure_device()  # non-collective: an earlier bind_gpu, DISTSCAN_GPU or the launcher's local rank
            return cupy.asarray(arr)
        return arr.get()

    def _to_native(self, arr):
        if self.native_backend == self.backend_name:
            return arr
        if self.native_backend == "cuda":
            import cupy
            return cupy.asarray(arr)
        return arr.get()

    # -- execution ---------------------------------------------------------

    def run(self, comm, timings, node_size):
        """The whole scan on a single rank (or ``comm`` None)."""
        timer = _Timer(timings, self.be)
        self.begin(comm, timer)
        return self.complete(comm, timer, node_size)

    def _exchanges(self, comm) -> bool:
        return self.distributed and comm is not None and comm.Get_size() > 1

    def begin(self, comm, timer):
        """The local work before totals are exchanged (may fail on some ranks: the caller agrees).

        ``reduce_then_scan``: this rank's total.  ``scan_then_add``: the local scan and its total.
        No exchange (one rank, or a local axis): the whole scan.
        """
        if not self._exchanges(comm):
            with timer.phase("scan"):
                self.result_rows, _ = self.be.scan(self.rows, self.op, self.types, exclusive=self.exclusive,
                                                   seed=self.initial, out=self.out_rows)
        elif self.strategy == "reduce_then_scan":
            with timer.phase("reduce"):
                if comm.Get_rank() == comm.Get_size() - 1:
                    # Nobody needs the last rank's total: skip the pass over its data.
                    total = self.carries.identity(self.rows.shape[1])
                else:
                    total = self.carries.of_part(self.be, self.rows, self.types)
            self.total = self._rank0_seeded(comm, total)
        else:
            with timer.phase("scan"):
                self.result_rows, total = self.be.scan(
                    self.rows, self.op, self.types, exclusive=self.exclusive,
                    seed=self.initial if comm.Get_rank() == 0 else None, out=self.out_rows, want_total=True)
            self.total = total

    def complete(self, comm, timer, node_size):
        """Exchange totals (every rank has passed :meth:`begin`), finish the local part, agree."""
        if not self._exchanges(comm):
            return self._finish(self.result_rows)
        with timer.phase("exscan"):
            offset = self.carries.value(
                _hierarchy.exclusive_prefix(self.total, self.carries.op, comm, self.hierarchy, node_size))
        with collectively(comm):
            if self.strategy == "reduce_then_scan":
                seed = offset if comm.Get_rank() > 0 else self.initial
                with timer.phase("scan"):
                    self.result_rows, _ = self.be.scan(self.rows, self.op, self.types, exclusive=self.exclusive,
                                                       seed=seed, out=self.out_rows)
            elif offset is not None:
                with timer.phase("combine"):
                    self.be.combine(self.result_rows, self.op, self.types, offset)
        return self._finish(self.result_rows)

    def _rank0_seeded(self, comm, total):
        """On rank 0, ``initial`` comes first, so it is part of what later ranks receive."""
        if comm.Get_rank() == 0 and self.initial is not None:
            return self.carries.combine(self.carries.of_values(self.initial), total)
        return total

    def _finish(self, rows):
        if self.direct_out:
            return self.out
        result = rows.reshape(self.work_shape)
        if not self.distributed:
            # C order, as NumPy returns it (a moveaxis view is not, and MPI cannot send it).
            result = self.xp.ascontiguousarray(self.xp.moveaxis(result, 0, self.axis))
        result = self._to_native(result)
        if self.scalar:
            result = result.reshape(())
        if self.out is not None:
            self.out_native[...] = result
            return self.out
        result = self.restore(result)
        if self.scalar and isinstance(result, np.ndarray):
            return result[()]
        return self.wrap(result) if self.wrap is not None else result


# ---------------------------------------------------------------------------
# Named scans and the global reduction
# ---------------------------------------------------------------------------

def cumsum(x, *, exclusive=False, initial=None, dtype=None, out=None, comm=None, axis=0, **kwargs):
    """Cumulative sum of the distributed array; see :func:`scan`."""
    return scan(x, "sum", exclusive=exclusive, initial=initial, dtype=dtype, out=out, comm=comm, axis=axis, **kwargs)


def cumprod(x, *, exclusive=False, initial=None, dtype=None, out=None, comm=None, axis=0, **kwargs):
    """Cumulative product of the distributed array; see :func:`scan`."""
    return scan(x, "prod", exclusive=exclusive, initial=initial, dtype=dtype, out=out, comm=comm, axis=axis, **kwargs)


def cummax(x, *, exclusive=False, initial=None, dtype=None, out=None, comm=None, axis=0, **kwargs):
    """Running maximum (NaN propagates, as in ``numpy.maximum.accumulate``); see :func:`scan`."""
    return scan(x, "max", exclusive=exclusive, initial=initial, dtype=dtype, out=out, comm=comm, axis=axis, **kwargs)


def cummin(x, *, exclusive=False, initial=None, dtype=None, out=None, comm=None, axis=0, **kwargs):
    """Running minimum (NaN propagates, as in ``numpy.minimum.accumulate``); see :func:`scan`."""
    return scan(x, "min", exclusive=exclusive, initial=initial, dtype=dtype, out=out, comm=comm, axis=axis, **kwargs)


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
    comm = _default_comm(comm)
    error, plan, total = None, None, None
    try:
        if axis not in (0, None):
            raise ValueError(f"reduce works over the distributed axis: axis must be 0 or None, got {axis!r}")
        plan = _Plan(x, op, False, None, dtype, None, axis, "auto", "auto", backend)
        total = plan.carries.of_part(plan.be, plan.rows, plan.types)
        count = np.array([plan.rows.shape[0]], dtype=np.int64)
    except Exception as exc:  # noqa: BLE001
        error = exc
    agree(comm, error, same=("reduce arguments", plan.signature if plan is not None else None))
    if comm is not None and comm.Get_size() > 1:
        from mpi4py import MPI
        message, mpi_op = _hierarchy.wire(total, plan.carries.op)
        comm.Allreduce(MPI.IN_PLACE, message, op=mpi_op)
        comm.Allreduce(MPI.IN_PLACE, count, op=MPI.SUM)
    if count[0] == 0 and plan.op.name in ("max", "min"):
        raise ValueError(f"zero-size array to reduction operation {plan.op.name} which has no identity")
    total = plan.carries.value(total).astype(plan.types.result)
    return total.reshape(plan.trailing)[()] if plan.trailing else total[0]
