"""The operator table: every scan operator is one row here.

A row names the NumPy ufunc that defines the operator's meaning (and is the CPU
implementation and the test reference), the MPI built-in operation that combines
carries between ranks where one is exact for the dtype, the C++ functor in
``kernels/operators.cuh`` that the GPU kernels instantiate, the identity, and the
dtype kinds the operator accepts.  Adding an operator is adding one row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

# NumPy dtype kinds: b bool, i signed, u unsigned, f float, c complex.
_NUMERIC = "biufc"
_ORDERED = "biuf"
_INTEGRAL = "biu"


def _zero(dtype: np.dtype):
    return np.zeros((), dtype)[()]


def _one(dtype: np.dtype):
    return np.ones((), dtype)[()]


def _lowest(dtype: np.dtype):
    if dtype.kind == "f":
        return dtype.type(-np.inf)
    if dtype.kind == "b":
        return np.False_
    return dtype.type(np.iinfo(dtype).min)


def _highest(dtype: np.dtype):
    if dtype.kind == "f":
        return dtype.type(np.inf)
    if dtype.kind == "b":
        return np.True_
    return dtype.type(np.iinfo(dtype).max)


def _all_ones(dtype: np.dtype):
    if dtype.kind == "b":
        return np.True_
    return dtype.type(~np.zeros((), dtype))


@dataclass(frozen=True)
class Op:
    """One scan operator.

    Attributes
    ----------
    name : str
        Public name, as given to ``distscan.scan(x, op=name)`` and ``--op``.
    ufunc : numpy.ufunc
        Binary ufunc with the operator's meaning; ``ufunc.accumulate`` is the reference scan.
    mpi_op : str or None
        Name of the MPI built-in operation (``"SUM"``, ...) used for carries when the
        dtype maps to an MPI type that operation is defined and exact on; otherwise a
        user-defined MPI operation built from ``ufunc`` is used.
    functor : str
        C++ functor in ``kernels/operators.cuh``.
    identity : callable
        ``identity(dtype)`` -> NumPy scalar ``e`` with ``e op x == x``.
    kinds : str
        NumPy dtype kinds the operator accepts.
    logical : bool
        Result is ``bool`` whatever the input (inputs are read as ``x != 0``).
    promotes : bool
        Small integers and bool are promoted to the platform integer, as
        ``numpy.cumsum``/``numpy.cumprod`` do.
    commutative : bool
        Whether MPI may combine carries in any order (see :mod:`distscan._carry`).
    """

    name: str
    ufunc: np.ufunc
    mpi_op: Optional[str]
    functor: str
    identity: Callable[[np.dtype], object]
    kinds: str
    logical: bool = False
    promotes: bool = False
    commutative: bool = True


_TABLE = [
    Op("sum", np.add, "SUM", "Sum", _zero, _NUMERIC, promotes=True),
    Op("prod", np.multiply, "PROD", "Prod", _one, _NUMERIC, promotes=True),
    Op("max", np.maximum, "MAX", "Max", _lowest, _ORDERED),
    Op("min", np.minimum, "MIN", "Min", _highest, _ORDERED),
    Op("logical_and", np.logical_and, "LAND", "LogicalAnd", lambda dt: np.True_, _NUMERIC, logical=True),
    Op("logical_or", np.logical_or, "LOR", "LogicalOr", lambda dt: np.False_, _NUMERIC, logical=True),
    Op("logical_xor", np.logical_xor, "LXOR", "LogicalXor", lambda dt: np.False_, _NUMERIC, logical=True),
    Op("bitwise_and", np.bitwise_and, "BAND", "BitAnd", _all_ones, _INTEGRAL),
    Op("bitwise_or", np.bitwise_or, "BOR", "BitOr", _zero, _INTEGRAL),
    Op("bitwise_xor", np.bitwise_xor, "BXOR", "BitXor", _zero, _INTEGRAL),
]

OPS = {op.name: op for op in _TABLE}

# Spellings users reach for; each maps to a row above.
_ALIASES = {
    "add": "sum", "plus": "sum", "cumsum": "sum",
    "multiply": "prod", "product": "prod", "cumprod": "prod",
    "maximum": "max", "cummax": "max",
    "minimum": "min", "cummin": "min",
    # As Python's and NumPy's & | ^: bitwise on integers, which on bool is the logical operator.
    "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor", "&": "bitwise_and", "|": "bitwise_or",
    "^": "bitwise_xor",
    "band": "bitwise_and", "bor": "bitwise_or", "bxor": "bitwise_xor",
}


def get_op(op) -> Op:
    """Return the table row for ``op`` (a name, an alias, a ufunc, or an ``Op``).

    Raises
    ------
    ValueError
        If ``op`` names no operator.
    """
    if isinstance(op, Op):
        return op
    row = OPS.get(op) if isinstance(op, str) else None
    if row is not None:
        return row
    if isinstance(op, np.ufunc):
        for row in _TABLE:
            if row.ufunc is op:
                return row
        raise ValueError(f"ufunc {op.__name__} is not a distscan operator; choose one of {sorted(OPS)}")
    if isinstance(op, str):
        key = op.strip().lower()
        key = _ALIASES.get(key, key)
        if key in OPS:
            return OPS[key]
    raise ValueError(f"unknown operator {op!r}; choose one of {', '.join(sorted(OPS))}")
