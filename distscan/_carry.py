"""Carries: what a part of the array tells the parts after it.

For most operators a carry is the part's total, and totals combine with the operator
itself.  For float and complex **products** a bare total is not enough.  In sequential
order (``numpy.cumprod``) a zero absorbs: once the running product is 0 it stays 0 until
an inf or NaN *input* turns it into NaN.  A total formed apart from what comes before it
does not know that: the product of a later part may overflow to inf on its own, and
``0 * inf`` is NaN where NumPy gives 0.  So a product carry is a pair

    (value, nonfinite)   value: the part's product; nonfinite: 1 if the part holds an inf or NaN

and ``(a, fa) . (b, fb) = (a * b, fa | fb)``, except that a zero ``a`` followed by a part
with no inf or NaN input gives a signed zero, whatever ``b`` overflowed to.

Carries are small host NumPy arrays; a pair is stored as one ``(2, w)`` array in the
accumulator dtype (the flag as 0 or 1), so it travels through MPI as it is, combined by
:attr:`Carries.op` (a non-commutative user-defined operation: the order of parts matters).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .ops import Op


def zero_absorbs(op: Op, acc: np.dtype) -> bool:
    """True for the operators and dtypes whose carries need the ``nonfinite`` flag."""
    return op.name == "prod" and np.dtype(acc).kind in "fc"


def _signed_zeros(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The zero that ``a * b`` has in sequential order: its sign is the product of the signs."""
    if a.dtype.kind == "c":
        return np.zeros_like(a)
    return np.where(np.signbit(a) ^ np.signbit(b), -0.0, 0.0).astype(a.dtype)


def _combine_flagged(a, b, out=None):
    """``(a . b)`` of two flagged product carries (``a`` earlier), each flat or ``(2, w)``."""
    a2, b2 = np.asarray(a).reshape(2, -1), np.asarray(b).reshape(2, -1)
    (av, af), (bv, bf) = a2, b2
    with np.errstate(all="ignore"):
        value = av * bv
        # A zero before a part without inf or NaN inputs absorbs whatever that part's own
        # product overflowed to; with such an input, 0 * inf or 0 * NaN is NaN, as in NumPy.
        absorbed = (av == 0) & (bf == 0) & ~np.isfinite(value)
    value = np.where(absorbed, _signed_zeros(av, bv), value)
    result = np.stack([value, np.maximum(af, bf)]).astype(a2.dtype, copy=False)
    if out is None:
        return result.reshape(np.shape(a))
    np.copyto(np.asarray(out).reshape(2, -1), result)
    return out


class Carries:
    """How the carries of one (operator, accumulator dtype) are formed, combined and read."""

    def __init__(self, op: Op, acc):
        self.acc = np.dtype(acc)
        self.flagged = zero_absorbs(op, self.acc)
        # The operation that combines carries (between ranks, between chunks).
        self.op = op if not self.flagged else dataclasses.replace(
            op, name=f"{op.name}+nonfinite", ufunc=_combine_flagged, mpi_op=None, commutative=False)
        self._value_op = op

    def identity(self, w: int) -> np.ndarray:
        one = np.full(w, self._value_op.identity(self.acc), self.acc)
        return self._pack(one, np.zeros(w, bool))

    def of_values(self, values, nonfinite=None) -> np.ndarray:
        """The carry of a part whose total is ``values`` (shape ``(w,)``).

        ``nonfinite`` (shape ``(w,)``) says which columns of the part hold an inf or NaN;
        by default it is read from ``values`` (right when the part is one row, e.g. ``initial``).
        """
        values = np.asarray(values, self.acc)
        if not self.flagged:
            return values
        if nonfinite is None:
            nonfinite = ~np.isfinite(values)
        return self._pack(values, np.asarray(nonfinite, bool))

    def of_part(self, backend, rows, types) -> np.ndarray:
        """The carry of the rows ``rows`` (a backend array ``(n, w)``): their total, and flags."""
        total = backend.reduce(rows, self._value_op, types)
        if not self.flagged:
            return total
        return self._pack(total, backend.nonfinite_columns(rows))

    def combine(self, earlier, later) -> np.ndarray:
        return np.asarray(self.op.ufunc(earlier, later), self.acc)

    def value(self, carry):
        """The seed row ``(w,)`` that a carry hands to the scan after it (None stays None)."""
        if carry is None or not self.flagged:
            return carry
        return np.asarray(carry).reshape(2, -1)[0].copy()

    def _pack(self, values, flags) -> np.ndarray:
        if not self.flagged:
            return values
        return np.stack([values.astype(self.acc), flags.astype(self.acc)])
