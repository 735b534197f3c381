"""State operators: scans whose elements combine as a small state, not as bare values.

A state operator is an :class:`~distscan.ops.table.Op` whose ``state`` is one of the classes
below.  Each says, over arrays of states (structured arrays in the C layout of the CUDA
structs of ``kernels/util/states.cuh``, so that carries travel between ranks and into kernels
as they are):

``dtype(value)``           the state's dtype for values of dtype ``value``
``lift(x, aux, value)``    the inputs (and the auxiliary inputs: flags, coefficients) as states
``combine(s, t)``          ``s . t``, ``s`` earlier in scan order: associative, not commutative
``neutral(value)``         the state that leaves any other as it is
``project(s, init)``       the output a state gives (``init``: the call's ``initial``, or None)
``fresh(prev, lifted)``    whether an element starts a segment in scan order (an exclusive scan
                           gives it the identity, or ``initial``)
``fold(stack, out)``       ``out = stack[0] . stack[1] . ...`` along axis 0, compiled (carries)

These are the reference the tests compare with, the carries between ranks, chunks and GPUs,
and the formulas of the GPU kernels; the CPU backend scans them with compiled sequential
loops (:mod:`distscan.backends.cpu_states`).

:class:`Segmented` wraps a plain operator: a flag starts a new segment, whose carry from before
is dropped.  Scanned in reverse (``ends=True``) the runs are the same, each scanned right to
left, so in scan order a flag marks a run's *last* element.  Over a float or complex product its
state also holds what a zero needs to absorb as NumPy's sequential product does
(:func:`absorbs_zeros`: the fields ``pre``, ``zero``, ``after``, ``nonfinite``, ``sign``).
:class:`Affine` composes maps ``y -> a*y + b``: the linear recurrence ``y[i] = a[i]*y[i-1] + b[i]``,
with segments that restart it.  :class:`Compensated` carries a float sum as (sum, error), each
combination error-free (TwoSum).

``initial`` is a *projection* of segmented and affine scans, the same on every segment:
``initial op v`` for the value ``v`` of a segment's prefix (for a zero-absorbing product, the
state of ``initial`` joined with the prefix's: ``initial`` multiplied in first, as NumPy's
running product from ``initial`` absorbs a zero), ``b + a*initial`` for an affine
state (the recurrence from ``y[-1] = initial``).  So carries never hold it, and a reverse or
segmented scan needs no other rank's ``initial``.  Compensated sums fold it in before the first
element, as plain scans do (``initial_mode = "seed"``).
"""

from __future__ import annotations

import numpy as np

from .folds import (AFFINE_ENDS_FOLD, AFFINE_FOLD, AFFINE_STARTS_FOLD, SEGMENTED_ENDS_FOLD, SEGMENTED_FOLD,
                    absorbing_fold, compensated_fold)
from .absorbing import ABSORBING, absorbing_join, absorbs_zeros, initial_first, lift_fields
from .jit import array_type, base_combine, compile_loop


def c_struct(*fields) -> np.dtype:
    """The dtype of a C struct of ``(name, dtype)`` fields: each aligned to its size (a complex to
    its whole size, as ``Complex`` in ``kernels/util/types.cuh``), the size rounded up to the
    largest alignment."""
    names, formats, offsets, offset, largest = [], [], [], 0, 1
    for name, dtype in fields:
        dtype = np.dtype(dtype)
        align = dtype.itemsize
        offset = -(-offset // align) * align
        names.append(name)
        formats.append(dtype)
        offsets.append(offset)
        offset += dtype.itemsize
        largest = max(largest, align)
    return np.dtype({"names": names, "formats": formats, "offsets": offsets,
                     "itemsize": -(-offset // largest) * largest})


def _flags_like(flags, shape) -> np.ndarray:
    """Per-row flags broadcast over a part's columns."""
    return np.broadcast_to(np.asarray(flags, bool).reshape((-1,) + (1,) * (len(shape) - 1)), shape)


class State:
    """What every state operator shares: equality by :meth:`key`, the defaults."""

    kind = ""
    aux: tuple = ()
    segments = ""  # "starts" or "ends": the auxiliary input "segments" restarts the state in scan order (:func:`distscan.ops.restarts.carry_rows`)
    initial_mode = "project"  # or "seed": ``initial`` is folded in before the first element
    exclusive_ok = True       # exclusive scans are defined

    def key(self) -> tuple:
        return (self.kind,)

    def __eq__(self, other):
        return type(other) is type(self) and other.key() == self.key()

    def __hash__(self):
        return hash(self.key())

    def __repr__(self):
        return f"{type(self).__name__}{self.key()[1:]}"

    def fresh(self, prev, lifted) -> np.ndarray:
        return np.zeros(np.shape(lifted), bool)

    def kernel_dtype(self, value) -> np.dtype:
        """The state's C struct in the GPU kernels (``kernels/util/states.cuh``): the state itself,
        but where the host's state holds more (:meth:`Segmented.kernel_dtype`)."""
        return self.dtype(value)

    def fold(self, stack, out) -> None:
        """``out[...] = stack[0] . stack[1] . ...`` (``stack``: ``(k, w)`` states, k >= 1), in the
        dtype of ``out`` (``np.stack`` of padded states packs them: converted back here)."""
        self.fold_for(out.dtype)(np.asarray(stack, out.dtype), out)

    def fold_for(self, dtype):
        """The compiled fold of states of ``dtype``, made once.  It is compiled for exactly those
        states, ``(k, w)`` in and ``(w,)`` out of any layout (:func:`distscan.ops.jit.array_type`),
        so that a fold never compiles on its first use: a plan makes it before its first exchange
        (distscan.dist.plan), and the folds after the exchange compile nothing on any rank."""
        folds = self.__dict__.setdefault("_folds", {})
        fn = folds.get(dtype)
        if fn is None:
            signature = f"{array_type(dtype, 2)}, {array_type(dtype, 1, writes=True)}"
            fn = folds[dtype] = compile_loop(self.fold_code(dtype), "fold", self._base_combine(), signature=signature)
        return fn

    def fold_code(self, dtype) -> str:
        """The numba code of the fold of states of ``dtype``."""
        return self.FOLD

    def _base_combine(self):
        return None


class Segmented(State):
    """Segments over a plain operator ``base``; ``flags[i]`` marks the first element of a run.

    Forwards the state is (value, flag): ``flag`` says that a segment starts inside the block,
    and ``s . t`` keeps ``t``'s value alone when it does.  In reverse (``ends``), in scan order a
    flag marks a run's last element: the state is (value, inner, end), ``end`` saying that the
    block's last element ends a segment (what follows starts afresh), ``inner`` that an element
    before it does.

    **Zero absorption** (float and complex products, :func:`absorbs_zeros`).  In sequential order
    (``numpy.cumprod``) a zero absorbs: once the running product is 0 it stays a signed zero until
    an inf or NaN *input* turns it into NaN, and a running product that overflowed to inf turns
    into NaN at the next zero.  ``s.value * t.value`` knows neither: ``t``'s own product may have
    overflowed (``0 * inf = NaN`` where NumPy gives 0).  So the state of the block's rows since its
    last segment start (its *tail*) also holds

        pre        the product of the tail's rows before its first zero (all of them, ``value``, if none)
        zero       the tail holds a zero
        after      an inf or NaN lies at or after that first zero
        nonfinite  the tail holds an inf or NaN
        sign       the parity of the sign bits from the first zero on (False for complex)

    and ``value`` is the sequential product (with a zero: NaN if ``pre`` is not finite or ``after``,
    else a zero of sign ``signbit(pre) ^ sign``).  These are the sequential product's own: the
    state after each row is the state before it with the row folded in (the CPU loops' carry,
    ``distscan.backends.cpu_states``), and :meth:`combine` composes two such states in order.
    The GPU kernels scan the plain (value, flag) struct (:meth:`kernel_dtype`); on the host their
    totals get these fields (``distscan.backends.absorb.segmented_tail``) and their results the
    repair of zeros that met a tile's overflowed product (``absorb_segmented``).
    """

    aux = ("segments",)

    def __init__(self, base, ends: bool = False):
        self.base, self.ends = base, bool(ends)
        self.segments = "ends" if ends else "starts"
        self.kind = "segmented_ends" if ends else "segmented"
        self.FOLD = SEGMENTED_ENDS_FOLD if ends else SEGMENTED_FOLD

    def key(self) -> tuple:
        return (self.kind, self.base)

    def absorbs(self, value) -> bool:
        """Whether this state over values of ``value`` holds the zero-absorption fields."""
        return absorbs_zeros(self.base, value)

    def kernel_dtype(self, value) -> np.dtype:
        """The GPU kernels' struct (``SegState``, ``SegEndsState`` of ``kernels/util/states.cuh``):
        the state without the zero-absorption fields."""
        if self.ends:
            return c_struct(("value", value), ("inner", np.bool_), ("end", np.bool_))
        return c_struct(("value", value), ("flag", np.bool_))

    def dtype(self, value) -> np.dtype:
        segment = (("inner", np.bool_), ("end", np.bool_)) if self.ends else (("flag", np.bool_),)
        if self.absorbs(value):
            return c_struct(("value", value), ("pre", value), *segment, *ABSORBING)
        return c_struct(("value", value), *segment)

    def fold_code(self, dtype) -> str:
        value = np.dtype(dtype)["value"]
        if self.absorbs(value):
            return absorbing_fold(value, "ends" if self.ends else "starts")
        return self.FOLD

    def lift(self, x, aux, value) -> np.ndarray:
        x = self.base.lift(x, np.dtype(value))
        s = np.zeros(x.shape, self.dtype(value))
        s["end" if self.ends else "flag"] = _flags_like(aux[0], x.shape)
        s["value"] = x
        if self.absorbs(value):
            lift_fields(s)
        return s

    def combine(self, s, t) -> np.ndarray:
        out = np.empty(np.broadcast(s, t).shape, s.dtype)
        if self.ends:
            fresh = t["inner"] | s["end"]
            out["inner"] = s["inner"] | s["end"] | t["inner"]
            out["end"] = t["end"]
        else:
            fresh = t["flag"]
            out["flag"] = s["flag"] | t["flag"]
        if "zero" in s.dtype.names:
            joined = absorbing_join(s, t)
            for name in ("value", "pre") + tuple(f for f, _ in ABSORBING):
                out[name] = np.where(fresh, t[name], joined[name])
            return out
        with np.errstate(all="ignore"):
            joined = self.base.combine(s["value"], t["value"])
        out["value"] = np.where(fresh, t["value"], joined)
        return out

    def fresh(self, prev, lifted) -> np.ndarray:
        return prev["end"] if self.ends else lifted["flag"]

    def project(self, s, init=None):
        if init is None:
            return s["value"]
        init = np.asarray(init, s["value"].dtype)
        if "zero" in s.dtype.names:  # initial first, as numpy.cumprod's running product absorbs a zero
            return initial_first(init, s)
        with np.errstate(all="ignore"):
            return self.base.combine(init, s["value"])

    def neutral(self, value) -> np.ndarray:
        s = np.zeros((), self.dtype(value))
        s["value"] = self.base.neutral(np.dtype(value))
        if self.absorbs(value):
            s["pre"] = s["value"]
        return s

    def _base_combine(self):
        return base_combine(self.base)


def affine_coef(a, y):
    """What multiplies ``y`` in an affine map's ``a*y`` (``y``: an earlier value, or the product of
    earlier coefficients): ``a``, but a zero where ``y == 0`` and ``a`` is infinite or NaN.  A zero
    contributes nothing, whatever multiplies it, as ``initial=0`` contributes nothing to the first
    ``y`` and a zero coefficient ends what came before: so the identity ``(1, 0)`` is exact on the
    left of any map (carries start from it, GPU kernels pad with it), and a recurrence's result does
    not depend on where ranks, chunks or tiles split it (but where ``+inf`` and ``-inf`` meet, or an
    infinite ``a`` meets a ``y`` that cancels to zero).  A finite ``a`` gives IEEE's product, signed
    zeros included.  The same rule in the CPU loops (:func:`.folds.affine_coef_code`) and the
    kernels (``AffineMul`` in ``kernels/util/states.cuh``)."""
    a = np.asarray(a)
    with np.errstate(invalid="ignore"):
        drop = (np.asarray(y) == 0) & ~np.isfinite(a)
    return np.where(drop, np.zeros((), a.dtype), a) if drop.any() else a


class Affine(State):
    """Maps ``y -> a*y + b`` composed in scan order: ``(a1, b1) . (a2, b2) = (a2*a1, a2*b1 + b2)``.
    The input is ``b``, the auxiliary input ``a``.  With segments, a segment's first element
    (in scan order) drops the map before it exactly (no ``0*inf``): forwards the state holds a
    ``flag`` (a segment starts inside), in reverse ``inner`` and ``end`` as :class:`Segmented`'s.
    The output is ``b`` (``b + a*initial`` with an ``initial``): ``a`` is the product of the
    coefficients since the segment's start.
    """

    exclusive_ok = False

    def __init__(self, segments: str = ""):
        if segments not in ("", "starts", "ends"):
            raise ValueError(f"segments must be '', 'starts' or 'ends', got {segments!r}")
        self.segments = segments
        self.aux = ("a", "segments") if segments else ("a",)
        self.kind = "affine" + (f"_{segments}" if segments else "")
        self.FOLD = {"": AFFINE_FOLD, "starts": AFFINE_STARTS_FOLD, "ends": AFFINE_ENDS_FOLD}[segments]

    def key(self) -> tuple:
        return (self.kind,)

    def dtype(self, value) -> np.dtype:
        if self.segments == "ends":
            return c_struct(("a", value), ("b", value), ("inner", np.bool_), ("end", np.bool_))
        if self.segments == "starts":
            return c_struct(("a", value), ("b", value), ("flag", np.bool_))
        return c_struct(("a", value), ("b", value))

    def lift(self, x, aux, value) -> np.ndarray:
        shape = np.shape(x)
        s = np.zeros(shape, self.dtype(value))
        s["a"] = np.broadcast_to(np.asarray(aux[0]), shape)
        s["b"] = x
        if self.segments:
            s["flag" if self.segments == "starts" else "end"] = _flags_like(aux[1], shape)
        return s

    def combine(self, s, t) -> np.ndarray:
        out = np.empty(np.broadcast(s, t).shape, s.dtype)
        with np.errstate(all="ignore"):
            a, b = affine_coef(t["a"], s["a"]) * s["a"], affine_coef(t["a"], s["b"]) * s["b"] + t["b"]
        if self.segments == "starts":
            fresh = t["flag"]
            out["flag"] = s["flag"] | t["flag"]
        elif self.segments == "ends":
            fresh = t["inner"] | s["end"]
            out["inner"] = s["inner"] | s["end"] | t["inner"]
            out["end"] = t["end"]
        else:
            fresh = False
        out["a"] = np.where(fresh, t["a"], a)
        out["b"] = np.where(fresh, t["b"], b)
        return out

    def fresh(self, prev, lifted) -> np.ndarray:
        if self.segments == "ends":
            return prev["end"]
        if self.segments == "starts":
            return lifted["flag"]
        return np.zeros(np.shape(lifted), bool)

    def project(self, s, init=None):
        if init is None:
            return s["b"]
        init = np.asarray(init, s["b"].dtype)
        with np.errstate(all="ignore"):
            return s["b"] + affine_coef(s["a"], init) * init

    def neutral(self, value) -> np.ndarray:
        s = np.zeros((), self.dtype(value))
        s["a"] = 1
        s["b"] = -np.zeros((), value) if np.dtype(value).kind in "fc" else 0  # a*y + -0.0 == a*y
        return s


def _compensated_join(s, e, ts, te):
    """``(sum, error)`` of (s, e) then (ts, te), real arrays: TwoSum (Knuth's) of the sums plus both
    errors, renormalised; where the sum is infinite or NaN, that sum and error 0 (TwoSum's error of
    an infinite sum is NaN: ``folds.compensated_overflow_code``).  Written as the numba fold
    (distscan.ops.folds, ``_COMPENSATED``): with the error negated, so that a sum of -0.0 stays
    -0.0 (TwoSum's error of -0.0 + -0.0 is +0.0, and -0.0 + +0.0 is +0.0)."""
    hi = s + ts
    bb = hi - s
    nlo = ((hi - bb) - s) + (bb - ts)
    nlo = nlo - (e + te)
    total = hi - nlo
    finite = np.isfinite(hi)
    return np.where(finite, total, hi), np.where(finite, (hi - total) - nlo, 0).astype(hi.dtype, copy=False)


class Compensated(State):
    """A float sum as (sum, error): every combination is TwoSum of the sums plus both errors,
    renormalised (FastTwoSum) so that ``sum`` is ``sum + error`` rounded: the prefix sums of a
    double-length accumulator, rounded once.  ``base`` is ``sum`` or ``nansum`` (NaN as 0)."""

    initial_mode = "seed"

    def __init__(self, base):
        self.base = base
        self.kind = "compensated"

    def key(self) -> tuple:
        return (self.kind, self.base)

    def dtype(self, value) -> np.dtype:
        return c_struct(("s", value), ("e", value))

    def lift(self, x, aux, value) -> np.ndarray:
        s = np.zeros(np.shape(x), self.dtype(value))
        s["s"] = self.base.lift(x, np.dtype(value))
        return s

    def combine(self, s, t) -> np.ndarray:
        out = np.empty(np.broadcast(s, t).shape, s.dtype)
        with np.errstate(all="ignore"):
            if out["s"].dtype.kind != "c":
                out["s"], out["e"] = _compensated_join(s["s"], s["e"], t["s"], t["e"])
                return out
            total, err = np.empty(out.shape, out["s"].dtype), np.empty(out.shape, out["e"].dtype)
            for part in (np.real, np.imag):  # per component, as the kernels' Complex join
                part(total)[...], part(err)[...] = _compensated_join(part(s["s"]), part(s["e"]), part(t["s"]),
                                                                     part(t["e"]))
        out["s"], out["e"] = total, err
        return out

    def fold_code(self, dtype) -> str:
        return compensated_fold(np.dtype(dtype)["s"])

    def project(self, s, init=None):
        return s["s"]

    def neutral(self, value) -> np.ndarray:
        s = np.zeros((), self.dtype(value))
        s["s"] = -np.zeros((), value)  # -0.0: the neutral of IEEE sums
        return s

    def constant(self, initial, value) -> np.ndarray:
        """The state that stands for ``initial`` folded in before the first element."""
        s = np.zeros(np.shape(initial), self.dtype(value))
        s["s"] = initial
        return s
