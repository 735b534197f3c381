"""State operators: scans whose elements combine as a small state, not as bare values.

A state operator is an :class:`~distscan.ops.table.Op` with ``state`` set to one of the classes
below.  Each says, in NumPy, over arrays of states (structured arrays, one field per word):

``dtype(value)``          the state's structured dtype for values of dtype ``value``
``lift(x, aux, value)``   the inputs (and their auxiliary inputs: flags, coefficients) as states
``combine(s, t)``         ``s . t``, ``s`` earlier: associative, not commutative
``project(s, out)``       the output a state gives
``neutral(value)``        the state that combines with any other to give that other

These are what carries between ranks are (one state per column), what the tests compare with,
and what the GPU kernels compute (``kernels/util/states.cuh``, the same formulas); the CPU
backend scans them with compiled sequential loops (:mod:`distscan.backends.cpu_states`).

:class:`Segmented` wraps a plain operator: a flag starts a new segment, whose carry from before
is dropped.  :class:`Affine` composes maps ``y -> a*y + b``: the linear recurrence
``y[i] = a[i]*y[i-1] + b[i]``.  :class:`Compensated` carries a float sum as (sum, error), each
combination error-free (TwoSum), renormalised so that ``sum`` is the rounded sum of both.
"""

from __future__ import annotations

import numpy as np


def _fields(*names_types) -> np.dtype:
    return np.dtype([(n, np.dtype(t)) for n, t in names_types])


class Segmented:
    """Segments over a plain operator ``base``.  ``flags[i]`` marks the first element of a run in
    array order.

    Scanned forwards, a flag starts a segment: the state is (flag, value), ``flag`` telling
    whether a segment starts inside the block, and ``s . t`` keeps ``t``'s value when ``t``
    holds a start.  Scanned in reverse (``ends=True``), the runs are the same but each is
    scanned right to left, so in scan order a flag marks the *last* element of a segment: the
    state is (inner, end, value), ``end`` telling that the block's last element ends a segment
    (the next one starts afresh) and ``inner`` that another element of the block does.
    """

    aux = ("segments",)

    def __init__(self, base, ends: bool = False):
        self.base, self.ends = base, ends
        self.kind = "segmented_ends" if ends else "segmented"

    def dtype(self, value) -> np.dtype:
        if self.ends:
            return _fields(("inner", np.bool_), ("end", np.bool_), ("value", value))
        return _fields(("flag", np.bool_), ("value", value))

    def lift(self, x, aux, value) -> np.ndarray:
        flags, = aux
        x = self.base.lift(x, value)
        s = np.zeros(x.shape, self.dtype(value))
        f = np.broadcast_to(np.asarray(flags, bool).reshape((-1,) + (1,) * (x.ndim - 1)), x.shape)
        s["end" if self.ends else "flag"] = f
        s["value"] = x
        return s

    def combine(self, s, t) -> np.ndarray:
        out = np.empty(np.broadcast(s, t).shape, s.dtype)
        with np.errstate(all="ignore"):
            joined = self.base.combine(s["value"], t["value"])
        if self.ends:
            fresh = t["inner"] | s["end"]
            out["inner"] = s["inner"] | s["end"] | t["inner"]
            out["end"] = t["end"]
        else:
            fresh = t["flag"]
            out["flag"] = s["flag"] | t["flag"]
        out["value"] = np.where(fresh, t["value"], joined)
        return out

    def starts(self, prefix, lifted):
        """Whether each element starts a segment in scan order, given the state before it."""
        return prefix["end"] if self.ends else lifted["flag"]

    def project(self, s, out_dtype):
        return s["value"].astype(out_dtype)

    def neutral(self, value) -> np.ndarray:
        s = np.zeros((), self.dtype(value))
        s["value"] = self.base.neutral(np.dtype(value))
        return s


class Affine:
    """Maps ``y -> a*y + b`` composed in order: ``(a1, b1) . (a2, b2) = (a2*a1, a2*b1 + b2)``.  The
    input is ``b``, the auxiliary input ``a``.  With segments scanned forwards, a flag makes ``a``
    zero there (the recurrence starts again from ``b``).  Scanned in reverse, a flag marks a
    segment's last element in scan order: the state carries it (``end``), and the next element's
    map then starts from zero: ``s . t = t o Z o s`` when ``s.end``, Z the map to zero.
    """

    def __init__(self, segments: str = ""):
        self.segments = segments  # "", "starts" or "ends"
        self.aux = ("a", "segments") if segments else ("a",)
        self.kind = "affine_ends" if segments == "ends" else "affine"

    def dtype(self, value) -> np.dtype:
        if self.segments == "ends":
            return _fields(("a", value), ("b", value), ("end", np.bool_))
        return _fields(("a", value), ("b", value))

    def lift(self, x, aux, value) -> np.ndarray:
        s = np.zeros(np.shape(x), self.dtype(value))
        s["a"] = np.broadcast_to(np.asarray(aux[0]), np.shape(x))
        s["b"] = x
        if self.segments:
            flags = np.broadcast_to(np.asarray(aux[1], bool).reshape((-1,) + (1,) * (np.ndim(x) - 1)), np.shape(x))
            if self.segments == "starts":
                s["a"] = np.where(flags, 0, s["a"])
            else:
                s["end"] = flags
        return s

    def combine(self, s, t) -> np.ndarray:
        out = np.empty(np.broadcast(s, t).shape, s.dtype)
        with np.errstate(all="ignore"):
            a, b = t["a"] * s["a"], t["a"] * s["b"] + t["b"]
        if self.segments == "ends":
            a = np.where(s["end"], np.zeros((), a.dtype), a)
            b = np.where(s["end"], t["b"], b)
            out["end"] = t["end"]
        out["a"], out["b"] = a, b
        return out

    def project(self, s, out_dtype):
        return s["b"].astype(out_dtype)

    def neutral(self, value) -> np.ndarray:
        s = np.zeros((), self.dtype(value))
        s["a"] = 1
        return s

    def constant(self, initial, value) -> np.ndarray:
        """The state that stands for ``y[-1] = initial``: the constant map."""
        s = np.zeros(np.shape(initial), self.dtype(value))
        s["b"] = initial
        return s


def two_sum(a, b):
    """``(s, e)`` with ``s = fl(a + b)`` and ``s + e == a + b`` exactly (Knuth)."""
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, e


class Compensated:
    """A float sum as (sum, error): every combination is TwoSum of the sums plus both errors, then
    renormalised (FastTwoSum), so that ``sum`` is the rounded value of ``sum + error``: the prefix
    sums are those of a double-length accumulator, rounded once."""

    kind = "compensated"
    aux = ()

    def dtype(self, value) -> np.dtype:
        return _fields(("s", value), ("e", value))

    def lift(self, x, aux, value) -> np.ndarray:
        s = np.zeros(np.shape(x), self.dtype(value))
        s["s"] = x
        return s

    def combine(self, s, t) -> np.ndarray:
        out = np.empty(np.broadcast(s, t).shape, s.dtype)
        with np.errstate(all="ignore"):
            hi, lo = two_sum(s["s"], t["s"])
            lo = lo + (s["e"] + t["e"])
            total = hi + lo
            out["s"] = total
            out["e"] = lo - (total - hi)
        return out

    def project(self, s, out_dtype):
        return s["s"].astype(out_dtype)

    def neutral(self, value) -> np.ndarray:
        s = np.zeros((), self.dtype(value))
        s["s"] = -np.zeros((), value)  # -0.0: the neutral of IEEE sums
        return s
