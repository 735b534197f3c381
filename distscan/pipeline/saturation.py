"""Where NumPy's sequential float scan leaves the finite range, for the command's check
(:mod:`distscan.pipeline.verify`): the state of a sequential sum or product in the accumulator
dtype once it overflows (saturated: +-inf, then following the later inputs as float arithmetic
does) or, for products, passes through the subnormals (lost: no error bound holds there)."""

from __future__ import annotations

import numpy as np


class Seq:
    """What NumPy's sequential scan in the accumulator dtype gives once it has left the finite range.

    Per column: ``sat`` (bool) with ``val`` (the saturated value: +-inf for an
    overflow, then following the later inputs exactly as float arithmetic does:
    ``inf + -inf = nan``, ``inf * -2 = -inf``, ``inf * 0 = nan``), and ``lost``
    (bool): the prefix passed through the subnormal range of a product, or a
    complex prefix may have overflowed, so no bound holds and the row is skipped.
    """

    def __init__(self, w, ref):
        self.sat = np.zeros(w, bool)
        self.val = np.zeros(w, ref)
        self.lost = np.zeros(w, bool)

    def copy(self):
        c = Seq.__new__(Seq)
        c.sat, c.val, c.lost = self.sat.copy(), self.val.copy(), self.lost.copy()
        return c


def _rep(op, a):
    """Representatives whose exact combination is what a saturated value meets: sums keep only
    the non-finite inputs, products only signs, zeros, infinities and nans (no overflow possible)."""
    if op.name == "sum":
        return np.where(np.isfinite(a), np.zeros((), a.dtype), a)
    return np.where(np.isinf(a), a, np.sign(a))


def rep_reduce(op, pieces, ref, w):
    acc = np.full(w, op.identity(ref), ref)
    for piece in pieces:
        acc = op.ufunc(acc, op.ufunc.reduce(_rep(op, piece.astype(ref)), axis=0)).astype(ref)
    return acc


def find_events(op, pieces, run, flag, st, big, tiny, ref, w):
    """In the columns ``flag``, walk the exact prefixes (a cumulative sum or product in the wide
    dtype, from ``run``) and mark the first row where the accumulator dtype would overflow (then
    saturated: +-inf, continued with the later inputs' representatives) or, for products, go
    subnormal (then ``lost``)."""
    cur = run.copy()
    newly = np.zeros(w, bool)
    ident = np.asarray(op.identity(ref), ref)
    for piece in pieces:
        p = piece.astype(ref)
        if not len(p):
            continue
        if newly.any():  # saturated in an earlier piece of this segment: meets this piece's inputs
            st.val = np.where(newly, op.ufunc(st.val, op.ufunc.reduce(_rep(op, p), axis=0)), st.val)
        pref = op.ufunc(cur, op.ufunc.accumulate(p, axis=0))
        mag = np.abs(pref)
        over = mag > big
        under = (mag < tiny) & (mag != 0) if op.name == "prod" else np.zeros_like(over)
        event = (over | under) & flag & ~st.sat & ~st.lost
        if event.any():
            first = np.argmax(event, axis=0)
            rows = np.arange(len(p))
            for c in np.nonzero(event.any(axis=0))[0]:
                j = int(first[c])
                if under[j, c] and not over[j, c]:
                    st.lost[c] = True
                    continue
                val = np.asarray(np.copysign(np.inf, pref[j, c].real), ref)
                after = np.where(rows > j, p[:, c], ident)
                st.val[c] = op.ufunc(val, op.ufunc.reduce(_rep(op, after), axis=0))
                st.sat[c] = True
                newly[c] = True
        cur = pref[-1].copy()
    return st
