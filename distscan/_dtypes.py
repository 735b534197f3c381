"""dtype rules, in one place.

Three dtypes describe every scan:

- the *input* dtype, as the user gives it;
- the *result* dtype, which follows NumPy: ``numpy.cumsum`` of int32 is int64
  (the platform integer), of uint8 is uint64, of float32 is float32; logical
  operators give bool; ``dtype=`` overrides, and the input is then cast to it
  before the operator is applied, as NumPy does;
- the *accumulator* dtype, in which carries are formed and travel between ranks:
  the result dtype, except that float16 sums and products accumulate in float32
  (NumPy accumulates in float16, so ``numpy.cumsum`` of 3000 float16 ones stalls
  at 2048; distscan returns 3000).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .ops import Op

_KIND_NAMES = {"b": "bool", "i": "signed integer", "u": "unsigned integer", "f": "float", "c": "complex"}


@dataclass(frozen=True)
class ScanTypes:
    """The dtypes of one scan: ``input`` -> (``acc`` while scanning) -> ``result``."""

    input: np.dtype
    result: np.dtype
    acc: np.dtype


def _check_kind(op: Op, dtype: np.dtype, what: str) -> None:
    if dtype.kind not in "biufc" or dtype.hasobject:
        raise TypeError(f"{what} dtype {dtype} is not supported: distscan scans bool, integer, float and complex data")
    if dtype.kind not in op.kinds:
        allowed = ", ".join(_KIND_NAMES[k] for k in op.kinds)
        raise TypeError(f"operator {op.name!r} is not defined for {what} dtype {dtype} (it takes {allowed})")


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


_cache: dict = {}


def scan_types(op: Op, input_dtype, dtype=None) -> ScanTypes:
    """Resolve the dtypes of scanning ``input_dtype`` with ``op`` (memoised).

    Raises
    ------
    TypeError
        If the operator is not defined on the input or on the requested dtype.
    """
    try:
        key = (op.name, input_dtype, dtype)
        return _cache[key]
    except KeyError:
        types = _cache[key] = _scan_types(op, input_dtype, dtype)
        return types
    except TypeError:  # an unhashable dtype argument: resolve without the cache
        return _scan_types(op, input_dtype, dtype)


def _scan_types(op: Op, input_dtype, dtype=None) -> ScanTypes:
    # Byte order is a storage detail: results are in native order (callers convert inputs).
    input_dtype = np.dtype(input_dtype).newbyteorder("=")
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
        result = np.dtype(dtype).newbyteorder("=")
        _check_kind(op, result, "requested")
        if input_dtype.kind == "c" and result.kind != "c":
            raise TypeError(f"cannot scan complex input as {result} (it would discard the imaginary part)")
    acc = result
    if result == np.dtype(np.float16) and op.name in ("sum", "prod"):
        acc = np.dtype(np.float32)
    return ScanTypes(input=input_dtype, result=result, acc=acc)
