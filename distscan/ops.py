"""The operator table: every scan operator is one row here.

A row names the NumPy ufunc that defines the operator's meaning (and is the CPU
implementation and the test reference; carries between ranks travel as bytes and are
combined by it too, see :mod:`distscan._carry`), the C++ functor in
``kernels/operators.cuh`` that the GPU kernels instantiate, the identity, and the
dtype kinds the operator accepts.  Adding an operator is adding one row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

# NumPy dtype kinds: b bool, i signed, u unsigned, f float, c complex.
_NUMERIC = "biufc"
_ORDERED = "biuf"
_INTEGRAL = "biu"


def _zero(dtype: np.dtype):
    return np.zeros((), dtype)[()]


def _signed_zero(dtype: np.dtype):
    """-0.0 for float and complex dtypes (``-0.0 + x == x`` for every x, -0.0 included), else 0."""
    zero = np.zeros((), dtype)
    if dtype.kind in "fc":
        zero = -zero
    return zero[()]


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
    functor : str
        C++ functor in ``kernels/operators.cuh``.
    identity : callable
        ``identity(dtype)`` -> NumPy scalar: what an empty prefix gives, as NumPy gives it (the
        first element of an exclusive scan, the total of an empty array): ``+0.0`` for float
        sums, as ``np.add.identity`` and ``np.cumulative_sum(include_initial=True)``.
    neutral : callable
        ``neutral(dtype)`` -> NumPy scalar ``e`` with ``e op x == x`` bit for bit: what an empty
        part carries and what pads a tile.  The identity, except ``-0.0`` for float sums
        (``+0.0 + -0.0`` is ``+0.0``: a +0.0 carry would turn a part's leading -0.0 into +0.0
        where NumPy's sequential sum keeps it).  ``kernels/operators.cuh`` uses the same.
    kinds : str
        NumPy dtype kinds the operator accepts.
    logical : bool
        Result is ``bool`` whatever the input (inputs are read as ``x != 0``).
    promotes : bool
        Small integers and bool are promoted to the platform integer, as
        ``numpy.cumsum``/``numpy.cumprod`` do.
    """

    name: str
    ufunc: np.ufunc
    functor: str
    identity: Callable[[np.dtype], object]
    kinds: str
    logical: bool = False
    promotes: bool = False
    neutral: Callable[[np.dtype], object] = None

    def __post_init__(self):
        if self.neutral is None:
            object.__setattr__(self, "neutral", self.identity)


_TABLE = [
    Op("sum", np.add, "Sum", _zero, _NUMERIC, promotes=True, neutral=_signed_zero),
    Op("prod", np.multiply, "Prod", _one, _NUMERIC, promotes=True),
    Op("max", np.maximum, "Max", _lowest, _ORDERED),
    Op("min", np.minimum, "Min", _highest, _ORDERED),
    Op("logical_and", np.logical_and, "LogicalAnd", lambda dt: np.True_, _NUMERIC, logical=True),
    Op("logical_or", np.logical_or, "LogicalOr", lambda dt: np.False_, _NUMERIC, logical=True),
    Op("logical_xor", np.logical_xor, "LogicalXor", lambda dt: np.False_, _NUMERIC, logical=True),
    Op("bitwise_and", np.bitwise_and, "BitAnd", _all_ones, _INTEGRAL),
    Op("bitwise_or", np.bitwise_or, "BitOr", _zero, _INTEGRAL),
    Op("bitwise_xor", np.bitwise_xor, "BitXor", _zero, _INTEGRAL),
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
