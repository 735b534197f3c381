"""The table of plain operators (a state that is the value itself): every one is one row here.

A row names the NumPy ufunc that defines the operator's meaning (and is the CPU
implementation and the test reference; carries between ranks travel as bytes and are
combined by it too, see :mod:`distscan._carry`), the C++ functor in
``kernels/util/operators.cuh`` that the GPU kernels instantiate, the identity, and the
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
_INTEGER = "iu"
_FLOAT = "f"


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


def _fmax_neutral(dtype: np.dtype):
    """fmax and fmin skip NaN: NaN is what leaves every value as it is (``fmax(nan, x) == x``)."""
    return dtype.type(np.nan) if dtype.kind == "f" else _lowest(dtype)


def _fmin_neutral(dtype: np.dtype):
    return dtype.type(np.nan) if dtype.kind == "f" else _highest(dtype)


def _minus_inf(dtype: np.dtype):
    return dtype.type(-np.inf)


@dataclass(frozen=True)
class Op:
    """One scan operator.

    Attributes
    ----------
    name : str
        Public name, as given to ``distscan.scan(x, op=name)`` and ``--op``.
    ufunc : numpy.ufunc or None
        Binary ufunc with the operator's meaning; ``ufunc.accumulate`` is the reference scan and
        the CPU's scan.  None for declared operators whose combine is a Python function
        (``combine``).
    functor : str
        C++ functor the GPU kernels instantiate: in ``kernels/util/operators.cuh``, or defined by
        ``source`` (declared operators).
    identity : callable
        ``identity(dtype)`` -> NumPy scalar: what an empty prefix gives, as NumPy gives it (the
        first element of an exclusive scan, the total of an empty array): ``+0.0`` for float
        sums, as ``np.add.identity`` and ``np.cumulative_sum(include_initial=True)``.
    neutral : callable
        ``neutral(dtype)`` -> NumPy scalar ``e`` with ``e op x == x`` bit for bit: what an empty
        part carries and what pads a tile.  The identity, except ``-0.0`` for float sums
        (``+0.0 + -0.0`` is ``+0.0``: a +0.0 carry would turn a part's leading -0.0 into +0.0
        where NumPy's sequential sum keeps it) and NaN for ``fmax``/``fmin`` (they skip it).
        ``kernels/util/operators.cuh`` uses the same.
    kinds : str
        NumPy dtype kinds the operator accepts.
    logical : bool
        Result is ``bool`` whatever the input (inputs are read as ``x != 0``).
    promotes : bool
        Small integers and bool are promoted to the platform integer, as
        ``numpy.cumsum``/``numpy.cumprod`` do.
    nan_lift : bool
        NaN inputs count as the identity (``nancumsum``: NumPy replaces them with 0).
    combine : callable, optional
        ``combine(a, b)`` on NumPy arrays of the accumulator, ``a`` earlier: the CPU's combine
        where there is no ufunc (declared operators); None: the ufunc.
    commutative : bool
        Whether ``a op b == b op a`` (the order of the carries matters when not).
    source : str
        C++ source that defines ``functor`` (declared operators); empty for the built-in ones.
    state : object, optional
        A state operator's states (:mod:`distscan.ops.state`); None: the state is the value.
    scalar : callable, optional
        A declared operator's combine of two scalars, which numba compiles for the CPU's
        sequential loops (None: the built-in formula, :data:`distscan.ops.jit.SCALAR_COMBINE`).
    raw_first : bool
        ``identity op x`` is not always ``x`` (``gcd(0, -4) == 4``, ``lcm(1, -4) == 4``) while
        NumPy's accumulate copies the first item as it is: kernels that start from the identity
        write the first item back (:func:`distscan.backends.cuda.general.scan`).
    """

    name: str
    ufunc: Optional[np.ufunc]
    functor: str
    identity: Callable[[np.dtype], object]
    kinds: str
    logical: bool = False
    promotes: bool = False
    neutral: Callable[[np.dtype], object] = None
    nan_lift: bool = False
    combine: Optional[Callable] = None
    commutative: bool = True
    source: str = ""
    state: object = None
    scalar: Optional[Callable] = None
    raw_first: bool = False

    def __post_init__(self):
        if self.neutral is None:
            object.__setattr__(self, "neutral", self.identity)
        if self.combine is None and self.ufunc is not None:
            object.__setattr__(self, "combine", self.ufunc)

    @property
    def core(self) -> "Op":
        """The plain operator underneath a segmented or compensated one (itself for the others)."""
        base = getattr(self.state, "base", None)
        return self if base is None else base

    def definition(self, acc) -> str:
        """What fixes this operator beside its name, as every rank must pass it alike (the plans
        compare it across ranks with the name: distscan.dist.plan): ``"built-in"`` for the table's
        rows, which their name fixes, and for the operators made from them; a declared operator's
        own (:meth:`distscan.Operator.definition`)."""
        core = self.core
        return "built-in" if core is self else core.definition(acc)

    def reads_key(self) -> Optional[str]:
        """The digest of what a declared operator's code reads now, which plans and call kinds are
        keyed by (:meth:`distscan.Operator.reads_key`); None for the built-in operators and those
        made from them, whose code reads nothing that changes."""
        core = self.core
        return None if core is self else core.reads_key()

    @property
    def runs_user_code(self) -> bool:
        """Whether combining carries calls the user's code, which may raise anything (declared
        operators, and segmented or compensated scans over one); the built-in combines raise only
        floating-point errors, which the exchange quiets (:mod:`distscan.dist.exchange`)."""
        core = self.core
        return core is not self and core.runs_user_code

    @property
    def plain(self) -> bool:
        """Whether the state is the value itself, combined by a ufunc (NumPy's accumulate scans it)."""
        return self.state is None and self.ufunc is not None

    def nan_replacement(self, inputs: np.dtype, compute: np.dtype):
        """What replaces NaN in inputs of dtype ``inputs`` before their conversion to ``compute``, or
        None where NaN stays: the identity for a NaN-aware operator's float inputs scanned as
        integers (NumPy's ``nancumsum(x, dtype=int)`` replaces NaN first; converted first, a NaN
        became INT_MIN), in the API's calls (``distscan._call``) and the command's
        (``distscan.pipeline.host``) alike."""
        inputs, compute = np.dtype(inputs), np.dtype(compute)
        if self.nan_lift and inputs.kind in "fc" and compute.kind not in "fc":
            return inputs.type(self.identity(inputs))
        return None

    def lift(self, x, acc: np.dtype):
        """The inputs as the accumulator sees them (NumPy's conversion; NaN as the identity for the
        NaN-aware operators, as NumPy's ``nancumsum`` replaces it with 0)."""
        values = np.asarray(x).astype(acc, copy=False)
        if self.nan_lift and values.dtype.kind in "fc":
            values = np.where(np.isnan(values), np.asarray(self.identity(acc), acc), values)
        return values


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
    # NaN-aware: np.nancumsum / np.nancumprod (NaN counts as 0 / 1), np.fmax / np.fmin.accumulate.
    Op("nansum", np.add, "NanSum", _zero, _NUMERIC, promotes=True, neutral=_signed_zero, nan_lift=True),
    Op("nanprod", np.multiply, "NanProd", _one, _NUMERIC, promotes=True, nan_lift=True),
    Op("nanmax", np.fmax, "FMax", _lowest, _ORDERED, neutral=_fmax_neutral),
    Op("nanmin", np.fmin, "FMin", _highest, _ORDERED, neutral=_fmin_neutral),
    # NumPy's other associative ufuncs: logcumsumexp and its base-2 form, gcd and lcm.
    Op("logaddexp", np.logaddexp, "LogAddExp", _minus_inf, _FLOAT),
    Op("logaddexp2", np.logaddexp2, "LogAddExp2", _minus_inf, _FLOAT),
    Op("gcd", np.gcd, "Gcd", _zero, _INTEGER, raw_first=True),
    Op("lcm", np.lcm, "Lcm", _one, _INTEGER, raw_first=True),
]

# OPS: the operators every test of the backends runs over (ten); ALL_OPS: every named operator.
OPS = {op.name: op for op in _TABLE[:10]}
ALL_OPS = {op.name: op for op in _TABLE}

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
    "nancumsum": "nansum", "nancumprod": "nanprod", "fmax": "nanmax", "fmin": "nanmin",
    "logcumsumexp": "logaddexp",
}

# NumPy ufuncs that are not associative: a scan split across ranks or tiles would compute
# something else than the sequential one, so they are refused by name.
_NOT_ASSOCIATIVE = {"subtract", "divide", "true_divide", "floor_divide", "power", "float_power", "remainder",
                    "mod", "fmod", "arctan2", "copysign", "ldexp", "nextafter", "left_shift", "right_shift",
                    "heaviside", "divmod", "equal", "not_equal", "less", "less_equal", "greater",
                    "greater_equal", "matmul", "vecdot"}


def known_associative() -> list:
    """The NumPy ufuncs distscan scans with (each an operator of the table)."""
    return sorted({op.ufunc.__name__ for op in _TABLE})


def get_op(op) -> Op:
    """Return the operator for ``op``: a name, an alias, a NumPy ufunc, or an ``Op`` (a declared
    :class:`distscan.Operator` is one).

    Raises
    ------
    ValueError
        If ``op`` names no operator, or is a ufunc that is not associative (or not one distscan
        knows: declare it with :class:`distscan.Operator` if it is associative).
    """
    if isinstance(op, Op):
        return op
    row = ALL_OPS.get(op) if isinstance(op, str) else None
    if row is not None:
        return row
    if isinstance(op, np.ufunc):
        for row in _TABLE:
            if row.ufunc is op and not row.nan_lift:
                return row
        if op.__name__ in _NOT_ASSOCIATIVE:
            raise ValueError(f"ufunc {op.__name__} is not associative: a scan split across ranks or tiles would "
                             f"change its result; the associative ones are {', '.join(known_associative())}")
        raise ValueError(f"ufunc {op.__name__} is not a distscan operator (the associative ufuncs it scans: "
                         f"{', '.join(known_associative())}); if it is associative, declare it with "
                         "distscan.Operator(...)")
    if isinstance(op, str):
        key = op.strip().lower()
        key = _ALIASES.get(key, key)
        if key in ALL_OPS:
            return ALL_OPS[key]
        if key.removeprefix("np.").removeprefix("numpy.") in _NOT_ASSOCIATIVE:  # as the ufunc is refused
            raise ValueError(f"operator {op!r} is not associative: a scan split across ranks or tiles would "
                             f"change its result; the associative ones are {', '.join(sorted(ALL_OPS))}")
    raise ValueError(f"unknown operator {op!r}; choose one of {', '.join(sorted(ALL_OPS))}")
