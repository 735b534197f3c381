"""The extended module's states on the host (reverse scans and state operators, for the 1-D
kernels of ``extended`` and the columns kernels of ``state_columns``): the kernels' accumulator
dtype (a state's C struct, ``kernels/util/states.cuh``), host states as its bytes and back, the
module's compile key, and the auxiliary inputs and parameters as the kernels read them."""

from __future__ import annotations

import numpy as np

from ..._dtypes import ScanTypes
from ...ops import Op
from . import compile as cc
from .device import cp, side_stream
from .settings import SETTINGS


def struct_state(op: Op) -> str:
    """The state kind whose C struct is the kernels' accumulator ("" for values: plain operators
    and declared operators of values)."""
    if op.state is None or op.state.kind == "declared":
        return ""
    return op.state.kind


def kernel_state(op: Op, types: ScanTypes) -> np.dtype:
    """The kernels' accumulator: the state's C struct over the kernel's value dtype (float16 values
    are combined in float32), or that value dtype for a plain operator.  A segmented float
    product's struct is (value, flag) without the host state's zero-absorption fields
    (``Segmented.kernel_dtype``): :func:`restate` copies the fields both have, and
    :func:`absorbing.absorbs` says where the host completes the rest."""
    value = cc.kernel_acc_dtype(types.acc)
    return op.state.kernel_dtype(value) if struct_state(op) else value


def has_gpu_form(op: Op) -> bool:
    """Whether the kernels can scan ``op``: every operator but a declared one without ``cuda=``."""
    return op.state is None or op.state.kind != "declared" or getattr(op, "gpu_ready", False)


def check_gpu(op: Op) -> None:
    if not has_gpu_form(op):
        raise TypeError(f"declared operator {op.name!r} has no GPU form: give it cuda= (a C++ expression of a "
                        "and b); declared operators of structured states run on the CPU (backend='cpu')")


def restate(rows, dtype: np.dtype) -> np.ndarray:
    """State rows in another dtype of the same fields (values widened or narrowed), or values."""
    rows = np.asarray(rows)
    if rows.dtype == dtype:
        return np.ascontiguousarray(rows)
    if dtype.names is None:
        return rows.astype(dtype)
    out = np.zeros(rows.shape, dtype)
    for name in dtype.names:
        if name in rows.dtype.names:
            out[name] = rows[name]
    return out


def ext_module_key(in_dtype, types: ScanTypes, op: Op, device: str, reverse: bool,
                   coef_one: int = 0) -> cc.ModuleKey:
    """The compile key of the extended module (no GPU needed: tests compile its names with nvcc);
    ``coef_one``: a linear recurrence's coefficients are one (a column) for every row (1), and
    tame (2: ``coefficient_row``)."""
    tuning = cc.choose_tuning(in_dtype, kernel_state(op, types), types.result, SETTINGS.tuning, "coarsened", device,
                              struct_state(op))
    return cc.ModuleKey(np.dtype(in_dtype), cc.kernel_acc_dtype(types.acc), np.dtype(types.result), op.functor,
                        tuning, "coarsened", device, ext=True, state=struct_state(op), reverse=reverse,
                        source=op.source, coef_one=coef_one)


def aux_places(op: Op) -> tuple:
    """Where the segment flags and the coefficients sit in a call's ``aux`` (-1: absent), by the
    operator's auxiliary input names."""
    names = tuple(op.state.aux) if op.state is not None else ()
    return (names.index("segments") if "segments" in names else -1), (names.index("a") if "a" in names else -1)


# One-item device arrays of the coefficients the host knows (a Python or NumPy number: Kind.aux,
# Part), by (value, dtype, device): a call of one makes none.  A real one with whether it is tame
# (finite, |a| <= 1), by its device pointer, which coefficient_row reads.  Assumptions:
# - only the broadcast views of calls hold these arrays, never a caller, and nothing writes them
#   after their fill;
# - an entry holds its value before any stream reads it: it is filled on the device's side stream,
#   which never captures, and waited for (filled on the caller's stream, a capture would only
#   record the fill, and a call on another stream could read the word before the fill ran);
# - an entry is never freed while a call's kernels may read it: kernels on any stream read it and
#   nothing says when they are done, so entries stay until clear_caches, which waits for the
#   devices first (freed sooner, the side stream's next allocation could take the word and fill
#   it under a kernel still queued).  So at most _MAX_ONES distinct numbers (all devices) get an entry;
#   later ones get a word of their own on the caller's stream, ordered with the call's kernels
#   like any temporary, and not tame (its pointer is not in _TAME_AT, so never mistaken for one).
ONE_COEFFICIENTS: dict = {}
_TAME_AT: dict = {}
_MAX_ONES = 256


def one_coefficient(value, dtype, shape):
    """``value`` (a host number) in ``dtype`` broadcast to ``shape`` from one device word."""
    v = np.asarray(value).astype(dtype)
    key = (v.tobytes(), v.dtype.str, cp.cuda.runtime.getDevice())
    one = ONE_COEFFICIENTS.get(key)
    if one is None:
        if len(ONE_COEFFICIENTS) >= _MAX_ONES:
            return cp.broadcast_to(cp.full((1,), v[()], v.dtype), shape)
        side = side_stream()
        with side:
            made = cp.full((1,), v[()], v.dtype)
        side.synchronize()
        if v.dtype.kind == "f":
            # (not complex: without the rule the complex64 look-back took 185 registers against
            # 128 and ran 36 % slower, 1.04 -> 1.42 ms at 2^27 on an H200: exp8)
            _TAME_AT[made.data.ptr] = bool(np.isfinite(v) and abs(v) <= 1)
        # (another thread may have made the same entry meanwhile: one wins, the other word was
        # read by nothing yet)
        one = ONE_COEFFICIENTS.setdefault(key, made)
        if one is not made:
            _TAME_AT.pop(made.data.ptr, None)
    return cp.broadcast_to(one, shape)


def coefficient_devices() -> set:
    """The devices that hold entries (clear_caches waits for them before forget_coefficients)."""
    return {key[2] for key in list(ONE_COEFFICIENTS)}


def forget_coefficients() -> None:
    ONE_COEFFICIENTS.clear()
    _TAME_AT.clear()


def coefficient_row(a):
    """``(row, mode)``: the one row of coefficients that ``a`` (``(n,)`` or ``(n, w)``, on the
    device) repeats along the scanned axis, as a contiguous ``(1,)`` or ``(w,)`` array, and
    ``ModuleKey.coef_one``'s mode: 1, or 2 where it is a tame one of :func:`one_coefficient`;
    ``(None, 0)`` where its rows may differ.  Such an ``a`` is a broadcast view, a zero stride
    along axis 0 (a scalar or a row of ``a`` that ``distscan._call`` broadcast to the part, or a
    caller's ``cupy.broadcast_to``): the kernels read its row for every item instead of n copies."""
    if type(a) is not cp.ndarray or a.ndim == 0 or a.shape[0] < 2 or a.strides[0] != 0:
        return None, cc.COEF_ROWS
    # (tame: a view of one of one_coefficient's words, every item that word: a stride along each
    # axis of more than one item is 0.  Not every stride: CuPy's broadcast of a (1,) word to
    # (n, 1) keeps the item stride on the axis of one, so Part's 1-D rows were never tame)
    tame = all(s == 0 or d == 1 for s, d in zip(a.strides, a.shape)) and _TAME_AT.get(a.data.ptr, False)
    return cp.ascontiguousarray(a[0]).reshape(-1), cc.COEF_TAME if tame else cc.COEF_ONE


def aux_arrays(aux, op: Op, n: int, w: int):
    """``(flags, coef, coef_one)`` of a call's auxiliary inputs as the kernels read them, on the
    device, each None where the call has none: the segment flags as one contiguous ``(n,)``
    array, the coefficients as contiguous ``(n, w)`` rows, or the one row of every row
    (:func:`coefficient_row`) with ``coef_one`` its mode (0: rows of their own)."""
    flags_at, coef_at = aux_places(op)
    flags = aux[flags_at] if 0 <= flags_at < len(aux) else None
    coef = aux[coef_at] if 0 <= coef_at < len(aux) else None
    mode = cc.COEF_ROWS
    if coef is not None:
        row, mode = coefficient_row(coef)  # (before the reshape: a broadcast stays one)
        coef = cp.ascontiguousarray(cp.asarray(coef).reshape(n, w)) if row is None else row
    return (None if flags is None else one_column(flags, n)), coef, mode


def one_column(a, n: int):
    """A contiguous ``(n,)`` view of one column's ``(n,)`` or ``(n, 1)`` array (a copy if it is
    not contiguous; a host array is copied to the device)."""
    if type(a) is not cp.ndarray:
        a = cp.asarray(a)
    if a.ndim != 1:
        a = a.reshape(n)
    return a if a._c_contiguous else cp.ascontiguousarray(a)


def param_rows(op: Op, initial, kstate: np.dtype, w: int):
    """The projected ``initial`` as kernel states (the field a projection reads), or None."""
    if initial is None or op.state is None or op.state.initial_mode != "project":
        return None
    rows = np.zeros(w, kstate)
    field = "value" if "value" in kstate.names else "b"
    rows[field] = np.broadcast_to(np.asarray(initial), (w,))
    return rows


def neutral_rows(op: Op, types: ScanTypes, w: int) -> np.ndarray:
    if op.state is not None:
        return np.full(w, op.state.neutral(types.acc), types.state)
    return np.full(w, op.neutral(types.acc), types.acc)
