"""One call's arguments, resolved and checked on this rank alone, before any collective.

:func:`resolve` turns what a caller passed (any array kind, a list, a scalar, ``out=`` of any
numeric dtype, ``axis=``) into a :class:`Part`: the backend rows the plan scans, the array
that receives them, the plan itself, and how the result goes back to the caller's form.

The common call (a contiguous 1-D NumPy or CuPy array of a dtype seen before, ``out=`` of
the same kind or none) is resolved from a cache of call kinds (:class:`Kind`) in one
dictionary lookup, so that small scans cost little more than their kernel.  That cache only
shortens this rank's own preparation: the plan runs the same collectives whichever way the
part was resolved (distscan.dist.plan).
"""

from __future__ import annotations

import math

import numpy as np

from ._arrays import as_is, current_device_id, may_overlap, to_native
from ._kinds import plan_of
from .dist.options import resolve_algorithm, resolve_hierarchy, resolve_strategy
from .dist.plan import ScanPlan
from .gpus import ensure_device
from ._dtypes import (ScanTypes, check_coefficients, check_int_coefficient, is_host_number, recurrence_dtype,
                      scan_types)
from .backends import get_backend
from .ops import Op
from .ops.options import call_op

BACKENDS = ("auto", "cpu", "cuda")


def normalize_axis(axis, ndim: int):
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


def _views_memory(out, out_native) -> bool:
    """Whether ``out_native`` (``out`` as a host array) views ``out``'s own memory, so that a result
    written into it reaches the caller: it shares memory with a second conversion, or, empty (two
    empty arrays share none), ``out`` has the buffer protocol (an empty ``array.array``)."""
    if np.may_share_memory(out_native, to_native(out)[0]):
        return True
    if out_native.size == 0:
        try:
            memoryview(out)
        except TypeError:
            return False
        return True
    return False


def initial_row(initial, types: ScanTypes, trailing: tuple):
    """``initial`` as one row of ``w = prod(trailing)`` accumulator items: a scalar, or an array that
    broadcasts to the trailing shape (or, as before it was read so, to the flattened row)."""
    if initial is None:
        return None
    row = np.asarray(initial)
    if types.acc.kind == "b" and row.dtype.kind != "b":
        row = row != 0  # logical scans read any number as a truth value
    elif row.dtype.kind == "c" and types.acc.kind != "c":
        raise TypeError(f"initial value {initial!r} is complex but the scan computes in {types.acc}")
    elif row.dtype.kind == "O" and types.acc.kind in "iu" and all(type(v) is int for v in row.flat):
        # a Python int past 64 bits, which NumPy keeps as an object: its cast said only "Python
        # int too large to convert to C long" (found 2026-11-27)
        raise OverflowError(f"initial value {initial!r} is out of the range of {types.acc}")
    elif row.dtype.kind in "fiu" and types.acc.kind in "iu":
        # Past the integer range refused, not cast to garbage: an integer as NumPy 2 refuses a
        # Python int (cummax(int8, initial=300) wrapped to 44; found 2026-11-25), a float as NumPy's
        # reductions take an initial= (NaN and the infinities refused too).  A float's fraction is
        # truncated, so it fits below max + 1 (exact as a float, where max may round up to it).
        if row.dtype.kind == "f" and not np.isfinite(row).all():
            raise ValueError(f"cannot convert initial value {initial!r} to {types.acc}: not a finite number")
        info = np.iinfo(types.acc)
        past = row >= float(info.max) + 1 if row.dtype.kind == "f" else row > info.max
        if (row < info.min).any() or past.any():
            raise OverflowError(f"initial value {initial!r} is out of the range of {types.acc}")
    row = row.astype(types.acc)
    for shape in (trailing, (math.prod(trailing),)):
        try:
            return np.broadcast_to(row, shape).reshape(-1).copy()
        except ValueError:
            continue
    raise ValueError(f"initial must be a scalar or match the trailing shape {trailing}; got shape {row.shape}")


def recurrence_initial_row(initial, types: ScanTypes, trailing: tuple):
    """:func:`initial_row` of a linear recurrence's ``y[-1]``, or None where it is all zeros: a zero
    contributes nothing (``y[0] = b[0]``; an infinite ``a[0]`` gives no NaN), so it is the default.
    Its shape is checked first: a zero array of the wrong shape is refused like any other."""
    row = initial_row(initial, types, trailing)
    return None if row is None or not row.any() else row


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


class Part:
    """One call's arrays: the input as ``(n, w)`` rows of the backend, the output, and how the
    result goes back to the caller's form.  Resolved and checked locally, before any collective.

    Raises
    ------
    TypeError, ValueError
        Unsupported dtypes, names, shapes, ``axis``, ``initial`` or ``out``.
    """

    def __init__(self, x, op, exclusive, initial, dtype, out, axis, strategy, hierarchy, backend, algorithm="auto",
                 *, reverse=False, segments=None, include_initial=False, compensated=False, coefficients=None,
                 first=True):
        self.reverse = bool(reverse)
        self.op: Op = call_op(op, segments=segments, compensated=compensated, coefficients=coefficients,
                              reverse=self.reverse)
        self.exclusive = bool(exclusive)
        if self.exclusive and self.op.state is not None and not self.op.state.exclusive_ok:
            raise ValueError(f"an exclusive {self.op.name} is not defined")
        self.include_initial = bool(include_initial)
        if self.include_initial and self.exclusive:
            raise ValueError("include_initial=True and exclusive=True together are not defined: the "
                             "inclusive scan with the initial value in front is the exclusive scan and its total")
        self.strategy = resolve_strategy(strategy)
        self.strategy_arg = strategy  # as named: the plan's lean integer call depends on it (ScanPlan._adds)
        self.hierarchy = resolve_hierarchy(hierarchy)
        self.algorithm = resolve_algorithm(algorithm)
        self.axis_arg = axis
        if backend not in BACKENDS:
            raise ValueError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
        # A Python or NumPy scalar is a part of one element and gives a scalar (the write-offset
        # idiom: exclusive_scan(n_local)); 0-d arrays follow NumPy (axis=None gives 1-D).
        # (not a memoryview, an array of the buffer protocol that np.isscalar calls a scalar, as
        # numpy.ScalarType lists it: its part was refused "cannot reshape", 2026-11-27)
        self.scalar = np.isscalar(x) and not isinstance(x, memoryview)
        x, self.wrap = _unwrap(x, self.op)
        native, self.native_backend, self.restore = to_native(x)
        self.backend_name = self.native_backend if backend == "auto" else backend
        self.be = get_backend(self.backend_name)
        work = self._to_backend(native)
        out_native = None
        if out is not None:
            out_native, out_backend, _ = to_native(out)
            if out_backend == "cpu" and out_native is not out and not _views_memory(out, out_native):
                # converted to a new array each time (a list, a tuple, a scalar, an __array__ that
                # copies): the result would be written into a copy and lost (NumPy: "output must be
                # an array"); a tensor, DLPack or the buffer protocol are views of the caller's memory
                raise TypeError(f"out must be an array the result can be written into, got "
                                f"{type(out).__name__} (it would be copied and the result lost)")
            if not get_backend(self.native_backend).is_native(out_native):
                raise TypeError(f"out must be a {self.native_backend} array like the input, "
                                f"got {type(out).__name__}")
            if not getattr(getattr(out_native, "flags", None), "writeable", True):
                # as NumPy says it; here, before any collective (written after the exchange, a
                # read-only out failed on its rank alone)
                raise ValueError("output array is read-only")
        coef = None
        if coefficients is not None:
            # a NumPy a (or a number) beside CuPy b; a CuPy a of another GPU
            coef = self._on_device(self._to_backend(*to_native(coefficients)[:2]))
            python_number = isinstance(coefficients, (int, float, complex)) and not isinstance(coefficients, bool)
            if dtype is None:  # y = a*y + b computes in the dtype NumPy gives a*b + b (a Python number is weak)
                dtype = recurrence_dtype(coefficients if python_number else coef.dtype, work.dtype)
            else:  # a float a with an integer dtype= was truncated silently (found 2026-11-25)
                # (a Python number by its kind: 2**70 is an object array, which dtype=float refused
                # where NumPy's a*y takes it; an integer dtype's range is check_int_coefficient's)
                check_coefficients(type(coefficients) if python_number else coef.dtype, dtype)
        self.types = scan_types(self.op, work.dtype, dtype, None if out_native is None else out_native.dtype)
        check_int_coefficient(coefficients, self.types.acc)  # (None passes)
        self.dtype_arg = dtype
        if work.dtype != self.types.input:  # non-native byte order
            work = work.astype(self.types.input)
        # nancumsum/nancumprod of floats with dtype= an integer: NumPy replaces NaN with the identity
        # before converting (a NaN cast to int64 first became INT64_MIN, and was summed); the call
        # kinds leave such calls to this route (_kinds.Kinds.remember)
        replacement = self.op.core.nan_replacement(work.dtype, self.types.compute)
        self.nan_first = replacement is not None
        if self.nan_first:
            work = self.xp.where(self.xp.isnan(work), replacement, work)
        if self.types.rounds_inputs:
            # NumPy converts the input to the computation's dtype first: a float16 sum rounds every
            # input to float16 before the float32 accumulator sees it.
            work = work.astype(self.types.compute)
        if self.scalar:
            if axis not in (0, -1, None):
                raise np.exceptions.AxisError(f"axis {axis} is out of bounds for a scalar (use 0 or None)")
            work, axis = work.reshape(1), 0
        self.input_shape = tuple(int(s) for s in work.shape)
        ax = normalize_axis(axis, work.ndim)
        if self.axis_arg is not None:
            # the plan's axis as an int in range(ndim): np.int64(0) and 0 (and -1 and 0 of a 1-D
            # part) are one axis, which the ranks agree on by value (the fingerprint is a repr)
            self.axis_arg = ax
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
        self.initial = (initial_row if coefficients is None else recurrence_initial_row)(initial, self.types,
                                                                                         self.trailing)
        self.rows = _as_rows(work)
        self.aux = self._aux(segments, coef, coefficients)
        if getattr(self.op, "check", False):  # a declared operator in debug mode: test it on this input
            from .ops.declared import check_associative  # loaded already: the operator was declared there
            sample = self.rows[:64]
            check_associative(self.op, sample.get() if hasattr(sample, "get") else sample, self.types.acc)
        # include_initial: the first rank in scan order (every rank, scanning another axis) holds one
        # row more, the initial value (or the identity), before its first (reverse: after its last)
        self.extra = 1 if self.include_initial and (first or not self.distributed) else 0

        self.out = out
        out_rows = None
        if out is not None:
            expected = () if self.scalar and not self.extra else self._shape_with_extra(self.result_shape)
            if tuple(out_native.shape) != tuple(expected):
                raise ValueError(f"out has shape {tuple(out_native.shape)}, expected {tuple(expected)}")
            if current_device_id(out_native) != current_device_id(native):
                raise ValueError(f"out is on GPU {current_device_id(out_native)}, the input on GPU "
                                 f"{current_device_id(native)}: pass an out on the input's device")
            self.out_native = out_native
            # Write straight into the caller's array when the layouts agree and it overlaps
            # neither the input nor the flags and coefficients (NumPy's scans give the same answer
            # for any overlap; a scan may read an input after it wrote the output: a segmented
            # part's finish, another tile's items).
            if (self.distributed and self.backend_name == self.native_backend and out_native.flags.c_contiguous
                    and out_native.dtype == self.types.result and not self.scalar
                    and not any(may_overlap(out_native, a) for a in (native, *self.aux))):
                out_rows = out_native.reshape(self.rows.shape[0] + self.extra, self.rows.shape[1])
        self.direct_out = out_rows is not None
        self.full = None  # with include_initial: the rows and the extra one
        if self.extra:
            self.full = out_rows if out_rows is not None else self.xp.empty(
                (self.rows.shape[0] + 1, self.rows.shape[1]), self.types.result)
            out_rows = self.full[:-1] if self.reverse else self.full[1:]
        self.out_rows = out_rows
        # Whether finish() may raise: a conversion into out, to another backend or array kind.
        self.finish_may_fail = not self.direct_out and (
            out is not None or self.native_backend != self.backend_name or self.restore is not as_is or self.extra)

    def _shape_with_extra(self, shape) -> tuple:
        """``shape`` with the extra row of include_initial along the scanned axis."""
        if not self.extra:
            return tuple(shape)
        shape = list(shape)
        shape[self.axis] += 1
        return tuple(shape)

    def _aux(self, segments, coef, host_coef=None) -> tuple:
        """The auxiliary inputs of the operator, as the backend scans them: segment flags ``(n,)``
        bool along the scanned axis, coefficients as rows ``(n, w)`` of the accumulator dtype."""
        if self.op.state is None:
            return ()
        n = self.rows.shape[0]
        aux = []
        for name in self.op.state.aux:
            if name == "segments":
                flags = self._on_device(self._to_backend(*to_native(segments)[:2]))
                if flags.ndim != 1 or flags.shape[0] != n:
                    raise ValueError(f"segments must be a 1-D array of one flag per element along the scanned "
                                     f"axis ({n} here), got shape {tuple(flags.shape)}")
                aux.append(self.xp.ascontiguousarray(flags if flags.dtype == np.bool_ else flags != 0))
            elif self.backend_name == "cuda" and n > 1 and is_host_number(host_coef):
                # a number the host holds: one device word (cached) whose bound the kernels may use
                aux.append(self.be.one_coefficient(host_coef, self.types.acc, self.rows.shape))
            else:
                aux.append(self._coefficient_rows(coef))
        return tuple(aux)

    def _coefficient_rows(self, coef):
        """``a`` of a linear recurrence broadcast to the part's shape, as ``(n, w)`` rows."""
        xp = self.xp
        try:
            a = xp.broadcast_to(coef, self.input_shape)
        except ValueError:
            raise ValueError(f"a has shape {tuple(coef.shape)}, which does not broadcast to the part's shape "
                             f"{self.input_shape}") from None
        a = a.reshape(self.result_shape)  # axis=None: flattened in C order, as the part
        if not self.distributed:
            a = xp.moveaxis(a, self.axis, 0)
        if self.backend_name == "cuda" and a.ndim and a.shape[0] > 1 and a.strides[0] == 0:
            # the same coefficients in every row (a scalar a, a row of a per channel): one row,
            # broadcast again, whose values the kernels read for every row instead of n copies
            # written here and read again (backends/cuda/ext_states.coefficient_row)
            row = self.be.astype(a[:1], self.types.acc).reshape(1, -1)
            return xp.broadcast_to(row, (a.shape[0], row.shape[1]))
        # (the backend's cast: CuPy's own flushes float32 subnormals, backends/cuda/casts.py)
        return _as_rows(self.be.astype(a, self.types.acc))

    def plan(self, comm, node_size) -> ScanPlan:
        """The reusable plan of this call's kind (built once, then taken from :data:`PLANS`)."""
        return plan_of(self.plan_fields(), comm, node_size)

    def plan_fields(self) -> tuple:
        """What fixes this call's plan, apart from the communicator and node size (no arrays); the
        last, what a declared operator's code reads now (:meth:`distscan.Operator.reads_key`: a
        changed global is another plan, whose definition the ranks compare)."""
        return (self.op, self.types.input, self.dtype_arg, self.types.result if self.out is not None else None,
                self.exclusive, self.trailing if self.distributed else (), self.backend_name, self.strategy_arg,
                self.hierarchy, self.axis_arg, self.algorithm, self.reverse, self.include_initial,
                self.op.reads_key())

    @property
    def xp(self):
        """The array module of the backend (NumPy or CuPy)."""
        return self.be.array_module()

    def _to_backend(self, arr, kind=None):
        """``arr`` (native to the input's backend, or to ``kind``) on the backend that scans."""
        if (self.native_backend if kind is None else kind) == self.backend_name:
            return arr
        if self.backend_name == "cuda":
            cupy = _need_cupy_backend()
            if self.native_backend != "cuda":
                # The input itself is on the host (backend="cuda"): no array says which GPU, so the
                # binding's rules do (non-collective: an earlier bind_gpu, DISTSCAN_GPU or the
                # launcher's local rank).  Host flags or coefficients beside a GPU input go to the
                # input's device, current here (api._scan): binding there moved them to the local
                # rank's GPU, or refused ranks that share one GPU (found 2026-11-29, GPU fuzz).
                ensure_device()
            return cupy.asarray(arr)
        return arr.get()

    def _on_device(self, arr):
        """An auxiliary input (flags, coefficients) where the scan runs: on the GPU, an array of
        another device copied to the current one (the input's: ``api._scan`` makes it current),
        as ``cupy.asarray`` does (the kernels would read another GPU's memory); else as it is."""
        if self.backend_name != "cuda" or current_device_id(arr) in (None, self.xp.cuda.runtime.getDevice()):
            return arr
        return self.xp.asarray(arr)

    def _to_native(self, arr):
        if self.native_backend == self.backend_name:
            return arr
        if self.native_backend == "cuda":
            import cupy
            return cupy.asarray(arr)
        return arr.get()

    def finish(self, rows):
        """The caller's result from the scanned rows (into ``out`` where one was given)."""
        if self.extra:
            self.full[-1 if self.reverse else 0] = self.xp.asarray(self.extra_row())  # a NumPy row, onto the GPU too
            rows = self.full
        if self.direct_out:
            return self.out
        result = rows.reshape((rows.shape[0],) + self.work_shape[1:])
        if not self.distributed:
            # C order, as NumPy returns it (a moveaxis view is not, and MPI cannot send it).
            result = self.xp.ascontiguousarray(self.xp.moveaxis(result, 0, self.axis))
        result = self._to_native(result)
        if self.scalar and not self.extra:
            result = result.reshape(())
        if self.out is not None:
            self.out_native[...] = result  # NumPy's (and CuPy's) cast into out's dtype and byte order
            return self.out
        result = self.restore(result)
        if self.scalar and not self.extra and isinstance(result, np.ndarray):
            return result[()]
        return self.wrap(result) if self.wrap is not None else result

    def extra_row(self):
        """include_initial's row: ``initial``, or the value of an empty prefix (the identity).  A
        declared state's is what its exclusive scan gives first, the projection of the state of
        ``initial`` (or of its identity): the identity is a state, not a value."""
        state = self.op.state
        if getattr(state, "kind", None) == "declared" and state.fields is not None:
            acc, w = self.types.acc, self.rows.shape[1]
            states = (state.constant(self.initial, acc) if self.initial is not None
                      else np.full(w, state.neutral(acc), state.dtype(acc)))
            return np.asarray(state.project(states)).astype(self.types.result)
        if self.initial is not None:
            return self.initial.astype(self.types.result)
        return np.full(self.rows.shape[1], self.op.identity(self.types.acc), self.types.result)
