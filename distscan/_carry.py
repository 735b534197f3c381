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
``nanprod``) drops the carry at a segment start, so only the elements since a part's last
start tell the parts after it: its carry is those five rows of that tail, then the state's
segment fields as 0 or 1 (forwards ``flag``: a segment starts inside; in reverse ``inner`` and
``end``, as the state's), ``(6, w)`` or ``(7, w)``.  They combine as the state does, the five
rows as above where no segment starts in between, and hand the scan after them the state
whose value is the five rows' (its segment fields as they are).  Without it, 0 times a later
part's overflowed product was NaN where NumPy's sequential product stays 0.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .ops import Op


def zero_absorbs(op: Op, acc: np.dtype) -> bool:
    """True for the operators and dtypes whose carries need the ``nonfinite`` flag (float and
    complex products, NaN-aware ones too: nancumprod is cumprod with NaN read as 1)."""
    return op.name in ("prod", "nanprod") and np.dtype(acc).kind in "fc"


def lifted(xp, x, op: Op):
    """``x`` as the operator reads it (NaN as the identity, for the NaN-aware ones), for the code
    that inspects raw inputs (a product's zeros and non-finite values)."""
    if not op.nan_lift or x.dtype.kind not in "fc":
        return x
    return xp.where(xp.isnan(x), xp.asarray(op.identity(np.dtype(x.dtype)), x.dtype), x)


def segmented_product(op: Op, acc: np.dtype):
    """The base product of a segmented float product (``op``'s state restarts it), else None."""
    state = op.state
    if state is None or not state.kind.startswith("segmented"):
        return None
    return state.base if zero_absorbs(state.base, acc) else None


_PRE, _ZERO, _AFTER, _ANY, _SIGN = range(5)
_FLAG = _INNER = 5  # a segmented carry's fields (forwards flag; in reverse inner, end)
_END = 6


def _combine_flagged(a, b, out=None):
    """``a . b`` of two product carries (``a`` earlier), each flat or ``(5, w)``."""
    a5, b5 = np.asarray(a).reshape(5, -1), np.asarray(b).reshape(5, -1)
    az = a5[_ZERO] != 0
    c = np.empty_like(a5)
    with np.errstate(all="ignore"):
        c[_PRE] = np.where(az, a5[_PRE], a5[_PRE] * b5[_PRE])
    c[_ZERO] = np.maximum(a5[_ZERO], b5[_ZERO])
    c[_AFTER] = np.where(az, np.maximum(a5[_AFTER], b5[_ANY]), b5[_AFTER])
    c[_ANY] = np.maximum(a5[_ANY], b5[_ANY])
    # After a's zero, every sign of b counts: those before b's zero are the sign of b's pre.
    b_signs = (_signbit(b5[_PRE]) ^ (b5[_SIGN] != 0)) & (b5[_ZERO] != 0) | (_signbit(b5[_PRE]) & (b5[_ZERO] == 0))
    c[_SIGN] = np.where(az, (a5[_SIGN] != 0) ^ b_signs, b5[_SIGN])
    if out is None:
        return c.reshape(np.shape(a))
    np.copyto(np.asarray(out).reshape(5, -1), c)
    return out


def _combine_segmented(a, b, ends: bool):
    """``a . b`` of two segmented product carries (``a`` earlier), ``(6, w)`` or ``(7, w)``: as
    :meth:`distscan.ops.state.Segmented.combine`, the five rows of the tail as products' carries."""
    rows = 7 if ends else 6
    a7, b7 = np.asarray(a).reshape(rows, -1), np.asarray(b).reshape(rows, -1)
    c = np.empty_like(a7)
    if ends:
        fresh = (b7[_INNER] != 0) | (a7[_END] != 0)
        c[_INNER] = np.maximum(np.maximum(a7[_INNER], a7[_END]), b7[_INNER])
        c[_END] = b7[_END]
    else:
        fresh = b7[_FLAG] != 0
        c[_FLAG] = np.maximum(a7[_FLAG], b7[_FLAG])
    c[:5] = np.where(fresh, b7[:5], _combine_flagged(a7[:5], b7[:5]))
    return c.reshape(np.shape(a))


def _signbit(v) -> np.ndarray:
    return np.signbit(v) if v.dtype.kind == "f" else np.zeros(v.shape, bool)


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
        # a segmented float product: its base product (the tail since the last start as flagged
        # carries), its carry rows in acc, the state its value hands on
        self.base = segmented_product(op, self.acc)
        self.segmented = self.base is not None
        self.ends = self.segmented and op.state.ends
        self.flagged = zero_absorbs(op, self.acc) or self.segmented
        self.op = op
        self.state = op.state
        self.state_dtype = np.dtype(state) if op.state is not None else None
        self.dtype = self.state_dtype if op.state is not None and not self.segmented else self.acc
        # How two carries combine (between ranks, between chunks).
        if self.segmented:
            self._combine = lambda a, b: _combine_segmented(a, b, self.ends)
        else:
            self._combine = _combine_flagged if self.flagged else op.ufunc

    def identity(self, w: int) -> np.ndarray:
        """The carry that combines with any other to give that other (the operator's neutral)."""
        if self.state is not None and not self.segmented:
            return np.full(w, self.state.neutral(self.acc), self.dtype)
        one = np.full(w, self.op.neutral(self.acc), self.acc)
        if not self.flagged:
            return one
        c = np.zeros((self._rows(), w), self.acc)
        c[_PRE] = one
        return c

    def _rows(self) -> int:
        """Rows of a flagged carry: 5, a segmented product's 6 (forwards) or 7 (reverse)."""
        return (7 if self.ends else 6) if self.segmented else 5

    def of_values(self, values) -> np.ndarray:
        """The carry of a part of one row ``values`` (shape ``(w,)``), e.g. ``initial``."""
        if self.state is not None and not self.segmented:
            return self.state.constant(np.asarray(values, self.acc), self.acc)
        values = np.asarray(values, self.acc)
        if not self.flagged:
            return values
        c = _summary(np, values.reshape(1, -1), self.acc, lambda r: np.prod(r, axis=0, dtype=self.acc))
        return self._with_segment_rows(c)

    def _with_segment_rows(self, c5: np.ndarray) -> np.ndarray:
        """A products' carry ``(5, w)`` as this plan's carry: a segmented one with no segment field set."""
        if not self.segmented:
            return c5
        c = np.zeros((self._rows(), c5.shape[1]), self.acc)
        c[:5] = c5
        return c

    def of_part(self, backend, rows, types, aux=(), reverse: bool = False) -> np.ndarray:
        """The carry of the rows ``rows`` (a backend array ``(n, w)``, or 1-D for one column), in
        scan order (``reverse``: last row first); ``aux``: the auxiliary inputs of its rows."""
        if self.segmented:
            return self._segmented_part(backend, rows, types, aux, reverse)
        if self.state is not None:
            return backend.reduce(rows, self.op, types, aux=aux, reverse=reverse)
        if not self.flagged:
            return backend.reduce(rows, self.op, types, reverse=reverse)
        if rows.ndim == 1:
            rows = rows.reshape(-1, 1)
        xp = backend.array_module()
        return _summary(xp, lifted(xp, rows[::-1] if reverse else rows, self.op), self.acc,
                        lambda r: backend.reduce(r, self.op, types))

    def _segmented_part(self, backend, rows, types, aux, reverse: bool) -> np.ndarray:
        """A segmented product's carry of ``rows`` with their segment flags ``aux[0]`` (backend
        arrays): the products' carry of the rows since the last segment start, in scan order
        (forwards from the last flagged row; in reverse, where a flag ends a run, from the row
        after the last flagged one but the last row), and the segment fields."""
        if rows.ndim == 1:
            rows = rows.reshape(-1, 1)
        n, w = rows.shape
        xp = backend.array_module()
        flags = aux[0].astype(bool, copy=False)
        if reverse:
            rows, flags = rows[::-1], flags[::-1]
        c = self.identity(w)
        inner = flags[:-1] if self.ends else flags
        start = 0
        if inner.shape[0]:
            k = int(_host(inner[::-1].argmax()))  # the last flagged row, from the end
            if bool(_host(inner[inner.shape[0] - 1 - k])):
                start = inner.shape[0] - k if self.ends else inner.shape[0] - 1 - k
                c[_INNER if self.ends else _FLAG] = 1
        if self.ends and n:
            c[_END] = bool(_host(flags[-1]))
        tail = rows[start:]
        if tail.shape[0]:
            plain = dataclasses.replace(types, state=None)  # the base product's reduction
            # quiet, as the segmented scan's own loops (numba's) set no NumPy flag
            with np.errstate(all="ignore"):
                c[:5] = _summary(xp, lifted(xp, tail, self.base), self.acc,
                                 lambda r: backend.reduce(r, self.base, plain))
        return c

    def prepare(self, w: int) -> None:
        """Make what combining this plan's carries of ``w`` columns needs, before the exchange that
        first combines them: a state's compiled fold (:meth:`distscan.ops.state.State.fold_for`),
        so that no rank compiles one after the exchange (where a rank's failure would be its alone)."""
        if self.state is not None and not self.segmented and getattr(self.state, "FOLD", None):
            # declared states fold in Python, segmented products' carries in NumPy (_combine_segmented)
            self.state.fold_for(self.dtype)

    def combine(self, earlier, later) -> np.ndarray:
        if self.state is not None and not self.segmented:
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
        if self.state is not None and not self.segmented:
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
        """The seed row ``(w,)`` that a carry hands to the scan after it (None stays None): a
        segmented product's is a state row."""
        if carry is None or not self.flagged:
            return carry
        c = np.asarray(carry).reshape(self._rows(), -1)
        value = _value(c[:5])
        if not self.segmented:
            return value
        seed = np.zeros(value.shape, self.state_dtype)
        seed["value"] = value
        if self.ends:
            seed["inner"], seed["end"] = c[_INNER] != 0, c[_END] != 0
        else:
            seed["flag"] = c[_FLAG] != 0
        return seed
