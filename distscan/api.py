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
from collections import OrderedDict

import numpy as np

from . import hierarchy as _hierarchy
from ._arrays import current_device_id, foreign_device, to_native
from ._collective import default_comm
from ._core import ScanPlan, fail_exchange, resolve_algorithm, resolve_hierarchy, resolve_strategy
from ._dtypes import ScanTypes, scan_types
from .backends import get_backend
from .ops import Op, get_op

BACKENDS = ("auto", "cpu", "cuda")


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
    comm = default_comm(comm)
    single = comm is None or comm.Get_size() == 1
    if single and initial is None and timings is None and algorithm == "auto":
        result = _local_fast_path(x, op, exclusive, dtype, out, axis, strategy, hierarchy, backend)
        if result is not None:
            return result
    lean = not single and initial is None and timings is None and algorithm == "auto"
    if lean:
        # The common distributed call, after the first one of its kind: one lookup, one
        # collective (ScanPlan.call_1d decides whether the arrays suit it).
        try:
            key = (type(x), x.dtype, op, dtype, exclusive, axis, strategy, hierarchy, backend, node_size, id(comm))
            plan = _LEAN.get(key)
        except (TypeError, AttributeError):  # unhashable arguments, or not an array
            key, plan, lean = None, None, False
        if plan is not None and plan.comm is comm:
            result = plan.call_1d(x, out)
            if result is not None:
                return result
    device = foreign_device(x)
    if device is not None:  # run where the data is: its device made current for the whole call
        with device:
            return scan(x, op, exclusive=exclusive, initial=initial, dtype=dtype, out=out, comm=comm, axis=axis,
                        strategy=strategy, hierarchy=hierarchy, backend=backend, timings=timings,
                        node_size=node_size, algorithm=algorithm)
    try:
        call = _Call(x, op, exclusive, initial, dtype, out, axis, strategy, hierarchy, backend, algorithm)
        plan = call.plan(None if single else comm, node_size)
    except Exception as exc:  # noqa: BLE001 - every rank must learn it: join the plan's exchange
        if single:
            raise
        fail_exchange(comm, exc)
    if lean and call.distributed and x.dtype == plan.types.input == call.rows.dtype:
        _LEAN[key] = plan
        if len(_LEAN) > _MAX_PLANS:
            _LEAN.pop(next(iter(_LEAN)))
    if call.distributed:
        rows = plan(call.rows, out=call.out_rows, initial=call.initial, timings=timings)
    else:
        # Another axis: each rank scans its own part; the exchange only agrees on failures
        # and arguments (its offsets are not used).
        error, rows = None, None
        try:
            rows, _ = plan.seeded_scan(call.rows, call.initial, out=call.out_rows)
        except Exception as exc:  # noqa: BLE001
            if single:
                raise
            error = exc
        if not single:
            plan.exchange(None, error, rows=int(call.rows.shape[0]))
    return call.finish(rows)


_fast_plans: dict = {}


def _local_fast_path(x, op, exclusive, dtype, out, axis, strategy, hierarchy, backend):
    """The common single-rank call (contiguous 1-D NumPy or CuPy array; ``dtype=`` and an
    ``out=`` of the same kind, shape and result dtype allowed) in one dictionary lookup, so
    small scans cost little more than the kernel launch.

    Returns None whenever anything is unusual; :class:`_Call` then handles (or rejects) it.
    """
    try:
        key = (type(x), x.dtype, op, dtype, exclusive, axis, strategy, hierarchy, backend)
        plan = _fast_plans[key]
    except KeyError:
        plan = _fast_plans[key] = _fast_plan(type(x), x.dtype, op, exclusive, dtype, axis, strategy,
                                             hierarchy, backend)
    except (TypeError, AttributeError):  # unhashable arguments, or not an array at all
        return None
    if plan is None:
        return None
    be, op_row, types, exclusive, fast = plan
    if fast is not None:  # the backend's own checks and launch (the CUDA backend's: a few us)
        return fast(x, op_row, types, exclusive, out)
    if x.ndim != 1 or not x.flags.c_contiguous:
        return None
    if out is not None and (type(out) is not type(x) or out.shape != x.shape or out.dtype != types.result
                            or not out.flags.c_contiguous or _may_overlap(out, x)):
        return None
    result, _ = be.scan(x, op_row, types, exclusive=exclusive, out=out)
    return result if out is None else out


def _fast_plan(array_type, x_dtype, op, exclusive, dtype, axis, strategy, hierarchy, backend):
    """``(backend, Op, ScanTypes, exclusive, backend's fast_scan or None)`` for the fast path, or
    None where it does not apply."""
    if array_type is np.ndarray:
        be = get_backend("cpu")
    elif array_type.__module__.startswith("cupy") and array_type.__name__ == "ndarray":
        be = get_backend("cuda")
    else:
        return None
    if backend not in ("auto", be.name) or axis not in (0, -1, None) or hierarchy not in _hierarchy.METHODS:
        return None
    try:
        resolve_strategy(strategy)
        op_row = get_op(op)
        types = scan_types(op_row, x_dtype, dtype)
    except (TypeError, ValueError):
        return None  # let _Call raise with its full context
    if x_dtype != types.input or (types.acc != types.result and x_dtype != types.result):
        return None  # non-native byte order, or a cast to float16 that must round first (_Call)
    return be, op_row, types, bool(exclusive), getattr(be, "fast_scan", None)


# Plans by call kind (operator, dtypes, exclusive, trailing shape, backend, strategy,
# hierarchy, node size, axis, communicator); the oldest go first past _MAX_PLANS.
_PLANS: "OrderedDict" = OrderedDict()
_MAX_PLANS = 256
# Plans for the lean distributed call (ScanPlan.call_1d), by the raw arguments of scan().
_LEAN: dict = {}


class _Call:
    """One call's arrays: the input as ``(n, w)`` rows of the backend, the output, and how the
    result goes back to the caller's form.  Resolved and checked locally, before any collective."""

    def __init__(self, x, op, exclusive, initial, dtype, out, axis, strategy, hierarchy, backend, algorithm="auto"):
        self.op: Op = get_op(op)
        self.exclusive = bool(exclusive)
        self.strategy = resolve_strategy(strategy)
        self.hierarchy = resolve_hierarchy(hierarchy)
        self.algorithm = resolve_algorithm(algorithm)
        self.axis_arg = axis
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
        self.dtype_arg = dtype
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
            if current_device_id(out_native) != current_device_id(native):
                raise ValueError(f"out is on GPU {current_device_id(out_native)}, the input on GPU "
                                 f"{current_device_id(native)}: pass an out on the input's device")
            self.out_native = out_native
            # Write straight into the caller's array when the layouts agree and it does not
            # overlap the input (NumPy's scans give the same answer for any overlap).
            if (self.distributed and self.backend_name == self.native_backend and out_native.flags.c_contiguous
                    and out_native.dtype == self.types.result and not self.scalar
                    and not _may_overlap(out_native, native)):
                out_rows = out_native.reshape(self.rows.shape)
        self.direct_out = out_rows is not None
        self.out_rows = out_rows if out_rows is not None else self.xp.empty(self.rows.shape, self.types.result)

    def plan(self, comm, node_size) -> ScanPlan:
        """The reusable plan of this call's kind (built once, then taken from a cache)."""
        trailing = self.trailing if self.distributed else ()
        key = (self.op, self.types.input, self.dtype_arg, self.exclusive, trailing, self.backend_name, self.strategy,
               self.hierarchy, node_size, self.axis_arg, self.algorithm, id(comm))
        try:
            plan = _PLANS.get(key)
        except TypeError:  # an unhashable dtype= argument
            key, plan = None, None
        if plan is None or plan.comm is not comm:
            plan = ScanPlan(self.op, self.types.input, dtype=self.dtype_arg, exclusive=self.exclusive,
                            trailing=trailing, comm=comm, backend=self.backend_name, strategy=self.strategy,
                            hierarchy=self.hierarchy, node_size=node_size, agree_on={"axis": self.axis_arg},
                            algorithm=self.algorithm)
            if key is not None:
                _PLANS[key] = plan
                if len(_PLANS) > _MAX_PLANS:
                    _PLANS.popitem(last=False)
        return plan

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

    def finish(self, rows):
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

def _named_scan(x, op, exclusive, initial, dtype, out, comm, axis, kwargs):
    """``scan(x, op, ...)`` for the named scans.  The common single-rank call goes to the fast
    path directly: passing ten keywords on to scan() costs more than the rest of the host's
    work before the launch (benchmarks/RESULTS.md, "Issue 10, eleventh pass")."""
    if initial is None and not kwargs:
        group = default_comm(comm)
        if group is None or group.Get_size() == 1:
            result = _local_fast_path(x, op, exclusive, dtype, out, axis, "auto", "auto", "auto")
            if result is not None:
                return result
    return scan(x, op, exclusive=exclusive, initial=initial, dtype=dtype, out=out, comm=comm, axis=axis, **kwargs)


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
    single = comm is None or comm.Get_size() == 1
    try:
        if axis not in (0, None):
            raise ValueError(f"reduce works over the distributed axis: axis must be 0 or None, got {axis!r}")
        call = _Call(x, op, False, None, dtype, None, axis, "auto", "auto", backend)
        plan = call.plan(None if single else comm, None)
    except Exception as exc:  # noqa: BLE001 - every rank must learn it: join the plan's exchange
        if single:
            raise
        fail_exchange(comm, exc, what="reduce arguments")
    error, carry, rows = None, None, int(call.rows.shape[0])
    try:
        carry = plan.local_carry(call.rows)
    except Exception as exc:  # noqa: BLE001
        if single:
            raise
        error = exc
    if single:
        total = plan.carries.value(carry)
    else:
        _, total, rows = plan.exchange(carry, error, rows=rows, what="reduce arguments", want_total=True)
    if rows == 0 and plan.op.name in ("max", "min"):
        raise ValueError(f"zero-size array to reduction operation {plan.op.name} which has no identity")
    total = np.asarray(total).astype(plan.types.result)
    return total.reshape(plan.trailing)[()] if plan.trailing else total[0]
