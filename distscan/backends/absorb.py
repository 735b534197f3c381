"""Zero absorption for float products computed in another order than sequential.

A product scan that combines partial products (tiles of the GPU kernel, the blocks and
trees of the algorithms in :mod:`distscan.algorithms`) can meet a zero with a partial
product that overflowed on its own, ``0 * inf = NaN``, where ``numpy.cumprod``'s running
product stays 0.  :func:`absorb_zeros` repairs a finished scan to the sequential answer.
"""

from __future__ import annotations

import numpy as np


def absorb_zeros(xp, x, out, seed, exclusive):
    """Repair ``out`` (the scan of ``x`` from ``seed``, ``(n, w)``) in place; returns the
    columns it changed (host bool ``(w,)``).  ``xp`` is the array module (NumPy or CuPy).

    In sequential order, from the first result that is 0 on, every result is a signed zero
    until an inf or NaN input turns it into NaN for good.  Results before the first zero are
    the scan's own: with no zero in the prefix no such NaN can arise.  Costs a few passes,
    and only for float products.
    """
    if exclusive:  # out[i] combines x[:i]: align out[1:] with x[:-1]
        x, out = x[:-1], out[1:]
    n, w = x.shape
    if n == 0:
        return np.zeros(w, bool)
    zero = (x == 0) | (out == 0)  # a product that underflowed is a zero too
    hit = zero.any(axis=0)
    hit_host = _host(hit)
    if not hit_host.any():
        return hit_host
    rows = xp.arange(n)[:, None]
    first = xp.where(hit, zero.argmax(axis=0), n)
    started = rows >= first
    if x.dtype.kind in "fc":
        bad = ~xp.isfinite(x) & started
        first_bad = xp.where(bad.any(axis=0), bad.argmax(axis=0), n)
    else:
        first_bad = xp.full(w, n)
    # What the first zero met: the result before it (or the seed).  inf * 0 is NaN for good.
    cols = xp.arange(w)
    before = out[xp.maximum(first - 1, 0), cols]
    if seed is not None:
        before = xp.where(first == 0, xp.asarray(np.asarray(seed, out.dtype)), before)
    else:
        before = xp.where(first == 0, xp.ones((), out.dtype), before)
    poisoned = (rows >= first_bad) | ~xp.isfinite(before) | xp.isnan(out[xp.minimum(first, n - 1), cols])
    if out.dtype.kind == "c":
        zeros = xp.zeros((), out.dtype)
    else:
        # The sign of a product is the product of the signs, the seed's included.
        signs = xp.signbit(x) if x.dtype.kind == "f" else x < 0
        negative = (xp.cumsum(signs, axis=0, dtype=xp.uint8) & 1).astype(bool)
        if seed is not None:
            negative ^= xp.asarray(np.signbit(np.asarray(seed).real))
        zeros = xp.where(negative, -0.0, 0.0).astype(out.dtype)
    fixed = xp.where(poisoned, xp.asarray(np.nan, out.dtype), zeros)
    xp.copyto(out, fixed, where=started)
    return hit_host


def _host(a) -> np.ndarray:
    return a.get() if hasattr(a, "get") else np.asarray(a)


