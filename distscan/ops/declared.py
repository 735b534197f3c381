"""Declared operators: ``distscan.Operator(...)``, one declaration for every path.

An operator is associative; the user states it (``check=True`` tests it on samples of every
call's input, for debugging).  It needs:

* a **combine** for the CPU: a NumPy ufunc (its ``accumulate`` is the scan), or a function of
  two arrays that works element by element; numba compiles it for the CPU's sequential loop
  (else a log-depth NumPy scan of it runs);
* an **identity**: a value, or a function of the dtype;
* for the GPU, ``cuda=``: a C++ expression of ``a`` and ``b`` (``"a + b*b"``), or a function body
  that returns the combination, compiled into the same kernels as the built-in operators
  (``kernels/util/operators.cuh``: it becomes a functor there);
* ``commutative=True`` if ``a op b == b op a`` bit for bit (reductions may then pair items in
  any order); the default orders every reduction.

Declared operators of a state of several fields (``state=`` a structured dtype, with ``lift``
and ``project``) run on the CPU; on the GPU their struct would need C++ declarations this
version does not take, so the GPU refuses them with a clear error.
"""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Callable, Optional

import numpy as np

from .snapshot import describe, snapshot
from .state import State
from .table import Op, get_op

_NUMERIC = "biufc"


def _identity_of(identity) -> Callable:
    if callable(identity):
        return lambda dtype: np.asarray(identity(np.dtype(dtype))).astype(dtype)[()]
    return lambda dtype: np.asarray(identity).astype(dtype)[()]


def cxx_literal(value, dtype: np.dtype) -> str:
    """A C++ expression of exactly ``value`` in the kernels' type for ``dtype`` (bit patterns for
    floats: NaN, infinities and signed zeros survive)."""
    dtype = np.dtype(dtype)
    v = np.asarray(value, dtype)
    if dtype.kind == "b":
        return "true" if bool(v) else "false"
    if dtype.kind == "i":
        return f"(long long)({int(v)}LL)" if int(v) != -(1 << 63) else "(long long)(-9223372036854775807LL - 1)"
    if dtype.kind == "u":
        return f"({int(v)}ULL)"
    if dtype == np.float32 or dtype == np.float16:
        return f"__int_as_float({int(np.asarray(v, np.float32).view(np.int32))})"
    if dtype == np.float64:
        return f"__longlong_as_double({int(v.view(np.int64))}LL)"
    if dtype.kind == "c":
        part = np.dtype(np.float32 if dtype == np.complex64 else np.float64)
        real = "float" if part == np.float32 else "double"
        return (f"distscan::Complex<{real}>{{{cxx_literal(v.real, part)}, {cxx_literal(v.imag, part)}}}")
    raise TypeError(f"no C++ literal for dtype {dtype}")


_CTYPES = {"?": "bool", "b": "signed char", "B": "unsigned char", "h": "short", "H": "unsigned short",
           "i": "int", "I": "unsigned int", "l": "long long", "q": "long long", "L": "unsigned long long",
           "Q": "unsigned long long", "f": "float", "d": "double", "F": "distscan::Complex<float>",
           "D": "distscan::Complex<double>"}


def _functor_source(name: str, body: str, identity: Callable, kinds: str, commutative: bool) -> str:
    """A functor struct in namespace distscan, with an identity specialised per dtype."""
    if "return" not in body:
        body = f"return {body};"
    lines = [f"\nnamespace distscan {{\nstruct {name} : OpBase {{",
             f"    static constexpr bool COMMUTATIVE = {'true' if commutative else 'false'};",
             "    template <typename T> static __device__ __forceinline__ T identity();",
             f"    template <typename T> static __device__ __forceinline__ T apply(T a, T b) {{ {body} }}", "};"]
    for code in "?bBhHiIqQfdFD":
        dt = np.dtype(code)
        if dt.kind not in kinds:
            continue
        try:
            lit = cxx_literal(identity(dt), dt)
        except (TypeError, ValueError, OverflowError):
            continue
        ct = _CTYPES[code]
        lines.append(f"template <> __device__ __forceinline__ {ct} {name}::identity<{ct}>() {{ return {lit}; }}")
    lines.append("}  // namespace distscan\n")
    return "\n".join(lines)


def _built_in(name: str) -> bool:
    """Whether ``name`` names a built-in operator (its name or an alias, any case and spaces)."""
    try:
        get_op(name)
    except ValueError:
        return False
    return True


class Declared(State):
    """The state of a declared operator: the value itself (``fields`` None), combined by the
    user's function; or a structured state with the user's lift and projection."""

    aux = ()
    initial_mode = "seed"

    def __init__(self, op_name: str, combine: Callable, identity: Callable, state: Optional[np.dtype],
                 lift: Optional[Callable], project: Optional[Callable], scalar: Optional[Callable]):
        self.kind = "declared"
        self.name, self.user_combine, self.identity = op_name, combine, identity
        self.fields, self.user_lift, self.user_project, self.scalar = state, lift, project, scalar

    def key(self) -> tuple:
        return (self.kind, self.name, id(self.user_combine))

    def dtype(self, value) -> np.dtype:
        return np.dtype(value) if self.fields is None else np.dtype(self.fields)

    def lift(self, x, aux, value) -> np.ndarray:
        if self.fields is None:
            return np.asarray(x).astype(value, copy=False)
        return np.asarray(self.user_lift(np.asarray(x)), self.fields)

    def combine(self, s, t) -> np.ndarray:
        with np.errstate(all="ignore"):
            out = np.asarray(self.user_combine(s, t), s.dtype)
        if out.shape != np.broadcast_shapes(np.shape(s), np.shape(t)):
            # a combine that is not element by element (a reduction, a slice): NumPy would broadcast
            # what it returns over the part and scan on with it
            raise ValueError(f"the combine of operator {self.name!r} gave shape {out.shape} for inputs of shapes "
                             f"{np.shape(s)} and {np.shape(t)}: it must work element by element")
        return out

    def project(self, s, init=None):
        return s if self.fields is None else np.asarray(self.user_project(s))

    def neutral(self, value) -> np.ndarray:
        return np.asarray(self.identity(self.dtype(value)), self.dtype(value))

    def constant(self, initial, value) -> np.ndarray:
        return self.lift(np.asarray(initial), (), value)

    def fold(self, stack, out) -> None:
        acc = np.array(stack[0])
        for row in stack[1:]:
            acc = self.combine(acc, row)
        out[...] = acc


class Operator(Op):
    """A declared associative operator (see the module docstring).

    Parameters
    ----------
    name : str
        Its name (in messages and plans).
    combine : numpy.ufunc or callable
        ``combine(a, b)``, ``a`` earlier: the CPU's combine, element by element on arrays.  The
        globals, closure variables, defaults or attributes it reads may change between calls:
        each call computes with their values of that call everywhere, and the ranks compare them
        (:meth:`reads_key`; the rules at the edges: docs/operators.md, "Values the combine reads").
    identity : scalar or callable
        What an empty prefix gives: ``e`` with ``combine(e, x) == x``; a callable of the dtype.
    cuda : str, optional
        The GPU's combine: an expression of ``a`` and ``b`` or a body that returns it.
    kinds : str
        NumPy dtype kinds it takes (default: bool, integers, floats, complex).
    commutative : bool
        Whether ``combine(a, b) == combine(b, a)`` bit for bit.
    scalar : callable, optional
        The combine of two scalars for numba, when ``combine`` works on arrays only.
    state, lift, project : optional
        A structured state dtype, ``lift(x) -> states`` and ``project(states) -> values`` (CPU).
    check : bool
        Test associativity and the identity on samples of every call's input (debugging).
    """

    def __init__(self, name: str, combine, *, identity, cuda: Optional[str] = None, kinds: str = _NUMERIC,
                 commutative: bool = False, scalar: Optional[Callable] = None, state=None,
                 lift: Optional[Callable] = None, project: Optional[Callable] = None, check: bool = False):
        if not isinstance(name, str) or not name:
            raise ValueError("an Operator needs a name")
        if _built_in(name):
            # the built-in operators' shortcuts go by name (a segmented or compensated scan, the
            # lean integer call, reduce's empty max): a declared "sum" would run as the sum
            raise ValueError(f"the operator name {name!r} is a built-in operator's (or its alias): "
                             "give a declared operator a name of its own")
        if not callable(combine):
            raise TypeError(f"combine must be a NumPy ufunc or a function of two arrays, got {combine!r}")
        if state is not None and (lift is None or project is None):
            raise ValueError("a declared state needs lift= and project=")
        ident = _identity_of(identity)
        # A ufunc is the plain path's combine only when it commutes: the plain GPU reductions pair
        # items in any order; the others take the ordered path of a declared state.
        ufunc = combine if isinstance(combine, np.ufunc) and state is None and commutative else None
        # The functor's name is the hash of its whole source, identities included: the GPU's caches
        # of compiled modules and plans go by that name (two operators that differ only in their
        # identity must not share one)
        template = _functor_source("DECLARED_FUNCTOR", cuda, ident, kinds, commutative) if cuda else ""
        tag = hashlib.sha256(f"{name}|{cuda}|{commutative}|{kinds}|{template}".encode()).hexdigest()[:12]
        functor = f"Declared_{tag}"
        source = template.replace("DECLARED_FUNCTOR", functor)
        declared = None
        if ufunc is None:
            declared = Declared(name, combine, ident, None if state is None else np.dtype(state), lift, project,
                                scalar)
        # raw_first: the CPU's scan of a ufunc is NumPy's accumulate, which copies the first item as
        # it is; the GPU's kernels start from the declared identity, which need not be neutral for
        # every input (hypot(0, -x) == x): they write the first item back too.
        Op.__init__(self, name, ufunc, functor if cuda else "", ident, kinds, commutative=commutative,
                    source=source, state=declared, scalar=scalar if scalar is not None else
                    (None if ufunc is not None else combine), raw_first=ufunc is not None)
        object.__setattr__(self, "check", bool(check))
        # what reads_key describes: everything of the user's that runs (the identity as given)
        object.__setattr__(self, "_user", (combine, scalar, identity, lift, project))

    def reads_key(self) -> str:
        """The digest of this operator's code and of the current values of everything it reads
        (:func:`distscan.ops.snapshot.snapshot` of the combine, ``scalar=``, the identity, the lift
        and the projection: the globals their code names, closure cells, defaults, a callable
        object's attributes, recursively).  Plans and call kinds are keyed by it with the operator
        (distscan.api, distscan._call.Part.plan_fields), as compiled loops are
        (:func:`distscan.ops.jit.compile_loop`): a value changed between two calls makes the next
        call a new kind, whose plan's :meth:`definition` (compared across ranks) and loops see the
        new value everywhere, never the old one in one place and the new in another.

        Assumption: nothing it reads changes *during* a call (another thread changing a global a
        running call reads): a call reads it when it starts, and again as it runs."""
        return snapshot(*self._user).digest

    def definition(self, acc) -> str:
        """What every rank must declare alike, beside the name, for a scan computing in ``acc``:
        ``"declared #DIGEST (combine #C, identity I)"``, the digest over the combine (and
        ``scalar=``), the identity's value in ``acc`` (its state's, with ``state=``), ``cuda=``,
        ``kinds``, ``commutative`` and the state with its lift and projection (:func:`describe`:
        their code and the current values of what it reads -- globals, closure cells, defaults, a
        callable object's attributes, recursively -- never addresses; a plan is made for each
        :meth:`reads_key`, so that each call compares the values of that call).  Two operators that share a name
        but not this are refused across ranks, naming it, instead of mixing their results.
        ``check`` is not part of it (a debugging aid: each rank checks what it asked to)."""
        state = self.state
        try:
            value = np.asarray(state.neutral(acc) if state is not None else self.identity(np.dtype(acc)))
            ident = repr(value.tolist()) if value.size <= 4 else f"#{hashlib.sha256(value.tobytes()).hexdigest()[:12]}"
            if len(ident) > 40:
                ident = f"#{hashlib.sha256(ident.encode()).hexdigest()[:12]}"
        except Exception as exc:  # noqa: BLE001 - the call raises it later on its own
            ident = f"raises {type(exc).__name__}"
        combine = self.ufunc if self.ufunc is not None else state.user_combine
        parts = [describe(combine), describe(self.scalar), ident, repr(self.source), self.kinds, repr(self.commutative)]
        if state is not None and state.fields is not None:
            parts += [str(state.fields), describe(state.user_lift), describe(state.user_project)]
        digest = hashlib.sha256("\n".join(parts).encode()).hexdigest()[:12]
        return (f"declared #{digest} (combine #{hashlib.sha256(parts[0].encode()).hexdigest()[:8]}, "
                f"identity {ident})")

    def __setattr__(self, name, value):
        # frozen as the dataclass's fields are: a plan and a call kind made with one check= (or
        # anything else) must not meet the operator changed (Op freezes only its own fields)
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")

    @property
    def runs_user_code(self) -> bool:
        return True

    @property
    def gpu_ready(self) -> bool:
        """Whether the GPU can run it: a CUDA combine, and a state that is the value itself."""
        return bool(self.source) and (self.state is None or self.state.fields is None)


def _agree(left, right, operands) -> np.ndarray:
    """Where ``left`` and ``right`` (two groupings of one combination) agree: floats (and the float
    fields of a structured state) within 8 ulp of the largest magnitude among them and the
    operands, as rounding leaves them (a float sum's groupings differ by about an ulp of its
    largest term, which may be far above an ulp of the result); anything else exactly."""
    if left.dtype.names is not None:
        ok = np.ones(left.shape, bool)
        for name in left.dtype.names:
            ok &= _agree(left[name], right[name], [np.asarray(v)[name] for v in operands])
        return ok
    if left.dtype.kind not in "fc":
        return np.asarray(left == right)
    with np.errstate(all="ignore"):
        scale = np.abs(left)
        for v in (right, *operands):
            scale = np.fmax(scale, np.abs(np.asarray(v)))
        close = np.abs(left - right) <= 8 * np.finfo(left.dtype).eps * scale
    return (left == right) | close | (np.isnan(left) & np.isnan(right))


def check_associative(op: Op, sample: np.ndarray, acc: np.dtype) -> None:
    """``check=True``: combine(combine(a, b), c) == combine(a, combine(b, c)) and the identity on
    triples from ``sample`` (floats within 8 ulp), else a ValueError naming the first failure."""
    values = np.asarray(sample).reshape(-1)[:64].astype(acc)
    if values.size < 3:
        return
    state = op.state
    combine = op.ufunc if op.ufunc is not None else state.user_combine
    lift = (lambda v: v) if state is None or state.fields is None else (lambda v: state.lift(v, (), acc))
    rng = np.random.default_rng(0)
    idx = rng.integers(0, values.size, (3, 32))
    a, b, c = (lift(values[i]) for i in idx)
    with np.errstate(all="ignore"):
        left = np.asarray(combine(combine(a, b), c))
        right = np.asarray(combine(a, combine(b, c)))
        e = np.full(a.shape, op.identity(acc), np.asarray(a).dtype) if state is None or state.fields is None else None
        # neutral on both sides: the GPU kernels pad a partial tile with it on the right too (its
        # total is a rank's carry), so combine(x, e) == x matters as much as combine(e, x) == x
        ident_ok = e is None or (np.array_equal(np.asarray(combine(e, a)), a, equal_nan=True)
                                 and np.array_equal(np.asarray(combine(a, e)), a, equal_nan=True))
    ok = _agree(left, right, (a, b, c))
    if not np.all(ok):
        i = int(np.flatnonzero(~np.asarray(ok).reshape(-1))[0])
        raise ValueError(f"operator {op.name!r} is not associative on these inputs: (a.b).c = {left.reshape(-1)[i]!r}, "
                         f"a.(b.c) = {right.reshape(-1)[i]!r} for a, b, c = {a.reshape(-1)[i]!r}, "
                         f"{b.reshape(-1)[i]!r}, {c.reshape(-1)[i]!r}")
    if not ident_ok:
        raise ValueError(f"operator {op.name!r}: its identity {op.identity(acc)!r} is not neutral on these inputs "
                         "(combine(e, x) == x and combine(x, e) == x are both needed)")
