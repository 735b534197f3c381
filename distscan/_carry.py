"""Carries: what a part of the array tells the parts after it.

For most operators a carry is the part's total, and totals combine with the operator
itself.  For float and complex **products** a bare total is not enough.  In sequential
order (``numpy.cumprod``) a zero absorbs: once the running product is 0 it stays 0 until
an inf or NaN *input* turns it into NaN; and a running product that has overflowed to inf
turns into NaN at the next zero.  A total formed apart from what comes before it knows
neither: a later part's own product may overflow to inf (``0 * inf = NaN`` where NumPy
gives 0), or a part may hold a zero that, after the parts before it, meets an overflow.
So a product carry describes a part by five numbers per column:

    pre     the product of the elements before the part's first zero (all of them if none)
    zero    1 if the part holds a zero
    after   1 if an inf or NaN lies at or after that first zero
    any     1 if the part holds an inf or NaN anywhere
    sign    the parity of the sign bits from the first zero on (floats; 0 for complex)

Two carries combine in order (``a`` earlier); the value that seeds the scan after a carry is
``pre`` without a zero, else NaN (``pre`` not finite, or ``after``) or a zero whose sign
is the product of the signs.  The carry is one ``(5, w)`` array in the accumulator dtype (the
flags as 0 or 1): it travels through MPI as it is, combined by :attr:`Carries.op`, a
non-commutative user-defined operation (the order of the parts matters).

A **segmented** float product (:class:`distscan.ops.state.Segmented` over ``prod`` or
``nanprod``) is a state operator like the others: its state holds the same five fields of the
rows since the last segment start, beside the segment fields, so its carry is a state row
formed, combined and read as every state's.
"""

from __future__ import annotations

import numpy as np

from .ops import Op
from .ops.absorbing import absorbs_zeros, signbit


def zero_absorbs(op: Op, acc: np.dtype) -> bool:
    """True for the plain operators and dtypes whose carries are the five rows above (float and
    complex products, NaN-aware ones too: nancumprod is cumprod with NaN read as 1)."""
    return absorbs_zeros(op, acc)


def lifted(xp, x, op: Op):
    """``x`` as the operator reads it (NaN as the identity, for the NaN-aware ones), for the code
    that inspects raw inputs (a product's zeros and non-finite values)."""
    if not op.nan_lift or x.dtype.kind not in "fc":
        return x
    return xp.where(xp.isnan(x), xp.asarray(op.identity(np.dtype(x.dtype)), x.dtype), x)


_PRE, _ZERO, _AFTER, _ANY, _SIGN = range(5)


def _combine_flagged(a, b, out=None):
    """``a . b`` of two product carries (``a`` earlier), each flat or ``(5, w)``."""
    a5, b5 = np.asarray(a).reshape(5, -1), np.asarray(b).reshape(5, -1)
    az = a5[_ZERO] != 0
    c = np.empty_like(a5)
    # Multiplied only where no zero of a absorbs, under the caller's errstate for overflow: an
    # exchange's fold keeps the error and a CPU plan raises it on every rank, as numpy.cumprod
    # raises (its _quiet); pre holds no zero, so invalid (0 * inf) comes only from an underflow.
    c[_PRE] = a5[_PRE]
    with np.errstate(invalid="ignore"):
        np.multiply(a5[_PRE], b5[_PRE], out=c[_PRE], where=~az)
    c[_ZERO] = np.maximum(a5[_ZERO], b5[_ZERO])
    c[_AFTER] = np.where(az, np.maximum(a5[_AFTER], b5[_ANY]), b5[_AFTER])
    c[_ANY] = np.maximum(a5[_ANY], b5[_ANY])
    # After a's zero, every sign of b counts: those before b's zero are the sign of b's pre.
    b_signs = (signbit(b5[_PRE]) ^ (b5[_SIGN] != 0)) & (b5[_ZERO] != 0) | (signbit(b5[_PRE]) & (b5[_ZERO] == 0))
    c[_SIGN] = np.where(az, (a5[_SIGN] != 0) ^ b_signs, b5[_SIGN])
    if out is None:
        return c.reshape(np.shape(a))
    np.copyto(np.asarray(out).reshape(5, -1), c)
    return out


def _value(c5: np.ndarray) -> np.ndarray:
    """The value a carry seeds the next scan with: the sequential product of its part(s)."""
    pre, zero = c5[_PRE], c5[_ZERO] != 0
    with np.errstate(all="ignore"):
        nan = ~np.isfinite(pre) | (c5[_AFTER] != 0)
    if pre.dtype.kind == "c":
        zeros = np.zeros_like(pre)
    else:
        zeros = np.where(np.signbit(pre) ^ (c5[_SIGN] != 0), -0.0, 0.0).astype(pre.dtype)
    return np.where(zero, np.where(nan, np.asarray(np.nan, pre.dtype), zeros), pre)


def _summary(xp, x, acc: np.dtype, reduce) -> np.ndarray:
    """The ``(5, w)`` carry of the rows ``x`` (array module ``xp``); ``reduce(rows)`` is the
    backend's product of rows with no zero among them."""
    n, w = x.shape
    zero = x == 0
    has_zero = zero.any(axis=0)
    nonfinite = ~xp.isfinite(x) if x.dtype.kind in "fc" else xp.zeros(x.shape, bool)
    c = np.zeros((5, w), acc)
    c[_ANY] = _host(nonfinite.any(axis=0))
    if not _host(has_zero.any()):
        c[_PRE] = reduce(x)
        return c
    rows = xp.arange(n)[:, None]
    first = xp.where(has_zero, zero.argmax(axis=0), n)
    before = rows < first
    # Elements from the first zero on count as 1 in pre: the product of what lies before it.
    c[_PRE] = reduce(xp.where(before, x, xp.ones((), x.dtype)))
    c[_ZERO] = _host(has_zero)
    c[_AFTER] = _host((nonfinite & ~before).any(axis=0))
    if x.dtype.kind == "f":
        c[_SIGN] = _host((xp.signbit(x) & ~before).sum(axis=0) & 1)
    elif x.dtype.kind in "iu":
        c[_SIGN] = _host(((x < 0) & ~before).sum(axis=0) & 1)
    return c


def _host(a) -> np.ndarray:
    return a.get() if hasattr(a, "get") else np.asarray(a)


class Carries:
    """How the carries of one (operator, accumulator dtype) are formed, combined and read.

    A plain operator's carry is a row ``(w,)`` of the accumulator dtype, combined by its ufunc;
    a float product's the ``(5, w)`` flagged carry above; a state operator's a row ``(w,)`` of
    its state dtype (:mod:`distscan.ops.state`), combined in scan order by its compiled fold.
    """

    def __init__(self, op: Op, acc, state=None):
        self.acc = np.dtype(acc)
        self.flagged = zero_absorbs(op, self.acc)
        self.op = op
        self.state = op.state
        self.dtype = np.dtype(state) if op.state is not None else self.acc
        # How two carries combine (between ranks, between chunks).
        self._combine = _combine_flagged if self.flagged else op.ufunc

    def identity(self, w: int) -> np.ndarray:
        """The carry that combines with any other to give that other (the operator's neutral)."""
        if self.state is not None:
            return np.full(w, self.state.neutral(self.acc), self.dtype)
        one = np.full(w, self.op.neutral(self.acc), self.acc)
        if not self.flagged:
            return one
        c = np.zeros((5, w), self.acc)
        c[_PRE] = one
        return c

    def of_values(self, values) -> np.ndarray:
        """The carry of a part of one row ``values`` (shape ``(w,)``), e.g. ``initial``."""
        if self.state is not None:
            return self.state.constant(np.asarray(values, self.acc), self.acc)
        values = np.asarray(values, self.acc)
        if not self.flagged:
            return values
        return _summary(np, values.reshape(1, -1), self.acc, lambda r: np.prod(r, axis=0, dtype=self.acc))

    def of_part(self, backend, rows, types, aux=(), reverse: bool = False) -> np.ndarray:
        """The carry of the rows ``rows`` (a backend array ``(n, w)``, or 1-D for one column), in
        scan order (``reverse``: last row first); ``aux``: the auxiliary inputs of its rows."""
        if self.state is not None:
            return backend.reduce(rows, self.op, types, aux=aux, reverse=reverse)
        if not self.flagged:
            return backend.reduce(rows, self.op, types, reverse=reverse)
        if rows.ndim == 1:
            rows = rows.reshape(-1, 1)
        xp = backend.array_module()
        return _summary(xp, lifted(xp, rows[::-1] if reverse else rows, self.op), self.acc,
                        lambda r: backend.reduce(r, self.op, types))

    def prepare(self, w: int) -> None:
        """Make what combining this plan's carries of ``w`` columns needs, before the exchange that
        first combines them: a state's compiled fold (:meth:`distscan.ops.state.State.fold_for`),
        so that no rank compiles one after the exchange (where a rank's failure would be its alone)."""
        if self.state is not None and getattr(self.state, "FOLD", None):  # declared states fold in Python
            self.state.fold_for(self.dtype)

    def combine(self, earlier, later) -> np.ndarray:
        if self.state is not None:
            # The two carries as the (2, w) stack the fold takes: a new buffer per call (plans may
            # run in several threads), filled row by row (np.stack took 5-14 us of a 6-20 us combine).
            pair = np.empty((2,) + np.shape(earlier), self.dtype)
            pair[0], pair[1] = earlier, later
            out = np.empty(np.shape(earlier), self.dtype)
            self.state.fold(pair.reshape(2, -1), out.reshape(-1))
            return out
        return np.asarray(self._combine(earlier, later), self.acc)

    def fold(self, stack):
        """The carries ``stack[0] . stack[1] . ...`` strictly in order (None for none): one
        ``accumulate`` for plain carries (``ufunc.reduce`` would sum floats pairwise: other
        roundings, and the result would depend on the rank count's split)."""
        if len(stack) == 0:
            return None
        if len(stack) == 1:
            return np.array(stack[0], self.dtype)
        if self.state is not None:
            stack = np.asarray(stack, self.dtype)
            out = np.empty(stack.shape[1:], self.dtype)
            self.state.fold(stack.reshape(len(stack), -1), out.reshape(-1))
            return out
        if not self.flagged:
            return np.asarray(self.op.ufunc.accumulate(stack, axis=0, dtype=self.acc)[-1], self.acc)
        acc = np.array(stack[0], self.acc)
        for c in stack[1:]:
            acc = self.combine(acc, c)
        return acc

    def value(self, carry):
        """The seed row ``(w,)`` that a carry hands to the scan after it (None stays None)."""
        if carry is None or not self.flagged:
            return carry
        return _value(np.asarray(carry).reshape(5, -1))
