"""dtype rules, in one place.

Three dtypes describe every scan:

- the *input* dtype, as the user gives it;
- the *result* dtype, which follows NumPy: ``numpy.cumsum`` of int32 is int64
  (the platform integer), of uint8 is uint64, of float32 is float32; logical
  operators give bool; ``dtype=`` overrides, and the input is then cast to it
  before the operator is applied, as NumPy does;
- the *accumulator* dtype, in which carries are formed and travel between ranks:
  the dtype NumPy computes in (below), except that float16 sums and products
  accumulate in float32 (NumPy accumulates in float16, so ``numpy.cumsum`` of 3000
  float16 ones stalls at 2048; distscan returns 3000).

With ``out=`` of another dtype, NumPy computes in the dtype of its ufunc loop for
(out, input) -- ``dtype=`` if given -- and casts each result into ``out``:
``np.cumsum(np.array([1.5, 2.5]), out=np.empty(2, np.int64))`` is ``[1, 4]`` (computed in
float64), and ``np.cumsum(np.array([2**62, 2**62]), out=np.empty(2))`` does not overflow
(computed in float64).  :func:`scan_types` follows it: the *result* dtype is then out's,
and ``compute`` (the dtype inputs are converted to before they are combined) is the loop's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .ops import Op

_KIND_NAMES = {"b": "bool", "i": "signed integer", "u": "unsigned integer", "f": "float", "c": "complex"}


@dataclass(frozen=True)
class ScanTypes:
    """The dtypes of one scan: ``input`` -> ``compute`` -> (``acc`` while scanning) -> ``result``.

    ``compute`` is the dtype NumPy converts every input to before combining it (``dtype=``, or
    the loop of an ``out=`` of another dtype); it differs from ``acc`` only for float16 sums and
    products, whose inputs are rounded to float16 first and then accumulated in float32.
    """

    input: np.dtype
    result: np.dtype
    acc: np.dtype
    compute: np.dtype = None
    state: np.dtype = None  # a state operator's state (distscan.ops.state) of acc values

    def __post_init__(self):
        if self.compute is None:
            object.__setattr__(self, "compute", self.acc)

    @property
    def rounds_inputs(self) -> bool:
        """Whether inputs must be cast to ``compute`` before the accumulator sees them."""
        return self.compute != self.acc and self.input != self.compute


def _check_scannable(dtype: np.dtype, what: str) -> None:
    if dtype.kind not in "biufc" or dtype.hasobject:
        raise TypeError(f"{what} dtype {dtype} is not supported: distscan scans bool, integer, float and complex data")


def _check_kind(op: Op, dtype: np.dtype, what: str) -> None:
    _check_scannable(dtype, what)
    if dtype.kind not in op.kinds:
        allowed = ", ".join(_KIND_NAMES[k] for k in op.kinds)
        raise TypeError(f"operator {op.name!r} is not defined for {what} dtype {dtype} (it takes {allowed})")


def _native(dtype) -> np.dtype:
    """``dtype`` in native byte order; one distscan does not scan as it is, for its refusal: a
    NumPy 2 StringDType has no byte order, and its newbyteorder raised NumPy's internal "Cannot use
    DescrNewByteOrder for this new style DTypes" before distscan's "is not supported" (s42)."""
    dtype = np.dtype(dtype)
    return dtype.newbyteorder("=") if dtype.kind in "biufc" else dtype


def default_result_dtype(op: Op, input_dtype: np.dtype) -> np.dtype:
    """The result dtype NumPy gives for ``op`` on ``input_dtype`` when ``dtype=None``."""
    if op.logical:
        return np.dtype(bool)
    if op.promotes:
        if input_dtype.kind in "bi" and input_dtype.itemsize < np.dtype(np.int_).itemsize:
            return np.dtype(np.int_)
        if input_dtype.kind == "u" and input_dtype.itemsize < np.dtype(np.uint).itemsize:
            return np.dtype(np.uint)
    return input_dtype


def recurrence_dtype(a, b_dtype) -> np.dtype:
    """The dtype NumPy gives ``a*b + b`` (``a`` the coefficients' dtype, or a Python number, which is
    weak), in which a linear recurrence without ``dtype=`` computes.  An ``a`` or ``b`` that distscan
    does not scan (a string, a datetime, objects) is refused in distscan's words first:
    ``np.result_type`` of a Python float and a string ``b`` raised NumPy's DTypePromotionError (s42)."""
    if not isinstance(a, (int, float, complex)):
        _check_scannable(np.dtype(a), "coefficients a")
    _check_scannable(np.dtype(b_dtype), "input")
    return np.result_type(a, b_dtype)


def check_coefficients(a_dtype, dtype) -> None:
    """Refuse a linear recurrence's coefficients ``a`` that NumPy's ``a*y`` in ``dtype=`` refuses
    (ufuncs cast inputs by the same_kind rule): a float ``a`` with an integer dtype was truncated
    silently, a complex one with a real dtype lost its imaginary part.  ``b``, the scanned input,
    is cast as ``numpy.cumsum(b, dtype=...)`` casts it."""
    a_dtype, dtype = np.dtype(a_dtype), np.dtype(dtype)
    if not np.can_cast(a_dtype, dtype, "same_kind"):
        raise TypeError(f"Cannot cast the coefficients a from {a_dtype!r} to {dtype!r} with casting rule "
                        f"'same_kind' (NumPy's a*y in dtype={dtype} refuses it)")


def is_host_number(a) -> bool:
    """Whether a coefficient is one number the host holds (a Python int, float or complex, or a
    NumPy number; not a bool, which NumPy reads as a flag, nor a subclass, whose arithmetic may be
    its own): the GPU reads it as one device word for every item (``one_coefficient``).  The
    ``Part`` route and a warm ``Kind`` share this test, so that one number takes one route."""
    return type(a) in (int, float, complex) or isinstance(a, np.number)


def check_int_coefficient(a, acc) -> None:
    """Refuse a Python int coefficient ``a`` outside an integer accumulator's range, as NumPy 2's
    ``a*y`` does (``OverflowError``: a Python int is weak, it takes ``y``'s dtype): it was wrapped
    silently (``a=300`` with int8 ``b`` computed with 44; found 2026-11-26)."""
    if isinstance(a, int) and not isinstance(a, bool) and np.dtype(acc).kind in "iu":
        info = np.iinfo(acc)
        if not info.min <= a <= info.max:
            raise OverflowError(f"Python integer {a} out of bounds for {np.dtype(acc)}")


# (threads: a value is published whole; two first calls at once may resolve one each, equal)
_cache: dict = {}


def scan_types(op: Op, input_dtype, dtype=None, out_dtype=None) -> ScanTypes:
    """Resolve the dtypes of scanning ``input_dtype`` with ``op`` (memoised); ``out_dtype``: the
    dtype of an ``out=`` array, which becomes the result dtype (see the module docstring).

    Raises
    ------
    TypeError
        If the operator is not defined on the input or on the requested dtype, or NumPy has no
        loop for the operator on (out, input).
    """
    try:
        key = (op, input_dtype, dtype, out_dtype)
        return _cache[key]
    except KeyError:
        types = _cache[key] = _with_state(op, _with_out(op, _scan_types(op, input_dtype, dtype), dtype, out_dtype))
        return types
    except TypeError:  # an unhashable dtype argument: resolve without the cache
        return _with_state(op, _with_out(op, _scan_types(op, input_dtype, dtype), dtype, out_dtype))


# The states whose CPU loops numba compiles: numba has no float16, and the GPU kernels combine
# float16 values in float32 (backends/cuda/compile.kernel_acc_dtype), so these accumulate float16
# in float32 on both, as the sums do (a segmented max's values are float16's all the same).
_LOOPED_STATES = ("segmented", "affine", "compensated")


def _with_state(op: Op, types: ScanTypes) -> ScanTypes:
    if op.state is None:
        return types
    acc = types.acc
    if acc == np.dtype(np.float16) and op.state.kind.split("_")[0] in _LOOPED_STATES:
        acc = np.dtype(np.float32)
    return ScanTypes(types.input, types.result, acc, types.compute, op.state.dtype(acc))


def _loop_ufunc(op: Op):
    """The ufunc whose loops say what a scan with ``out=`` of another dtype computes in."""
    if op.ufunc is not None:
        return op.ufunc
    return op.core.ufunc if op.core.ufunc is not None else np.add


def _with_out(op: Op, types: ScanTypes, dtype, out_dtype) -> ScanTypes:
    """``types`` for a result cast into an ``out`` of ``out_dtype`` (None: no out)."""
    if out_dtype is None:
        return types
    out = _native(out_dtype)
    if out == types.result:
        return types
    if out.kind not in "biufc" or out.hasobject:
        raise TypeError(f"out dtype {out} is not supported: distscan writes bool, integer, float and complex data")
    if dtype is not None or op.logical:
        # dtype= fixes the computation (logical operators always compute in bool): only the
        # last step, into out, changes.
        return ScanTypes(types.input, out, types.acc, types.compute)
    try:
        loop = np.dtype(_loop_ufunc(op).resolve_dtypes((out, types.input, None))[0])
    except TypeError:
        raise TypeError(f"operator {op.name!r} has no NumPy loop for input {types.input} with out "
                        f"{out}") from None
    computed = _scan_types(op, types.input, loop)
    return ScanTypes(types.input, out, computed.acc, computed.compute)


def _scan_types(op: Op, input_dtype, dtype=None) -> ScanTypes:
    # Byte order is a storage detail: results are in native order (callers convert inputs).
    input_dtype = _native(input_dtype)
    if input_dtype.kind not in "biufc" or input_dtype.hasobject:
        _check_kind(op, input_dtype, "input")
    if op.logical:
        # Logical operators read any number as a truth value.
        if dtype is not None and np.dtype(dtype) != np.dtype(bool):
            raise TypeError(f"operator {op.name!r} always gives bool; dtype={np.dtype(dtype)} is not allowed")
        _check_kind(op, input_dtype, "input")
        result = np.dtype(bool)
    elif dtype is None:
        _check_kind(op, input_dtype, "input")
        result = default_result_dtype(op, input_dtype)
    else:
        result = _native(dtype)
        _check_kind(op, result, "requested")
        if input_dtype.kind == "c" and result.kind != "c":
            raise TypeError(f"cannot scan complex input as {result} (it would discard the imaginary part)")
    acc = result
    if result == np.dtype(np.float16) and op.core.name in ("sum", "prod", "nansum", "nanprod"):
        acc = np.dtype(np.float32)
    return ScanTypes(input=input_dtype, result=result, acc=acc, compute=result)
