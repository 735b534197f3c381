"""Zero absorption for float products computed in another order than sequential.

A product scan that combines partial products (tiles of the GPU kernel, the blocks and
trees of the algorithms in :mod:`distscan.algorithms`) can meet a zero with a partial
product that overflowed on its own, ``0 * inf = NaN``, where ``numpy.cumprod``'s running
product stays 0.  :func:`absorb_zeros` repairs a finished scan to the sequential answer;
:func:`segmented_tail` gives a segmented product's total the fields of its state
(:class:`distscan.ops.state.Segmented`) that the GPU's kernels do not compute.
"""

from __future__ import annotations

import numpy as np

from ..ops.state import absorbed, absorbing_join


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




# ---- segmented products (distscan.ops.state.Segmented over a float or complex product) ----------
#
# The GPU kernels scan a segmented product as (value, flag) states (kernels/util/states.cuh): their
# totals are (value, flag) structs, without the state's zero-absorption fields.  segmented_tail
# completes them on the host side (extended.scan and extended.reduce), in scan order, with the
# arrays' module ``xp``; its NumPy form is tested against the CPU loops (tests/backends/test_absorb.py).


def _tail_summary(xp, tail, dtype: np.dtype) -> np.ndarray:
    """The zero-absorbing state rows ``(w,)`` (host, ``dtype``) of the rows ``tail`` ``(m, w)`` (scan
    order, lifted) with no segment start among them, as ``state.lift`` and its combine give them."""
    m, w = tail.shape
    s = np.zeros(w, dtype)
    s["value"] = s["pre"] = 1
    if m == 0:
        return s
    zero = tail == 0
    has_zero = zero.any(axis=0)
    first = xp.where(has_zero, zero.argmax(axis=0), m)
    before = xp.arange(m)[:, None] < first
    nonfinite = ~xp.isfinite(tail)
    with np.errstate(all="ignore"):  # quiet, as the CPU loops (NumPy's product of the host arrays warns)
        pre = _host(xp.prod(xp.where(before, tail, xp.ones((), tail.dtype)), axis=0))
    s["pre"], s["zero"] = pre, _host(has_zero)
    s["nonfinite"], s["after"] = _host(nonfinite.any(axis=0)), _host((nonfinite & ~before).any(axis=0))
    if tail.dtype.kind == "f":
        s["sign"] = _host((xp.signbit(tail) & ~before).sum(axis=0) & 1).astype(bool)
    s["value"] = np.where(s["zero"], absorbed(np, s["pre"], s["after"], s["sign"]), s["pre"])
    return s


def segmented_tail(xp, state, x, flags, total, seed) -> np.ndarray:
    """``total`` (host state rows ``(w,)`` of a zero-absorbing segmented product, :class:`distscan.ops.
    state.Segmented`; its value and segment fields computed otherwise, by the GPU's kernels) with
    its zero-absorption fields, from the part's rows ``x`` (``(n, w)``, lifted) and ``flags``
    (``(n,)``), in scan order, after ``seed`` (host state rows, or None): what the CPU loops' pass
    ``cpu_state_loops.SEGMENTED_TAIL`` gives.  Where the value is finite and not zero the tail held
    no zero, inf or NaN: the fields say so (pre is the value).  Elsewhere the fields of the rows
    since the last segment start (a vectorised summary), after the seed's where it continues into
    them (``ops.state.absorbing_join``), and the value where a zero absorbs (the GPU's may be NaN
    where the sequential product is 0)."""
    total = np.array(total, copy=True)
    value = total["value"]
    with np.errstate(invalid="ignore"):
        need = ~((value != 0) & np.isfinite(value))
    total["pre"] = value
    for name in ("zero", "after", "nonfinite", "sign"):
        total[name] = False
    if not need.any():
        return total
    ends = state.ends
    inner = flags[:-1] if ends else flags
    lo, fresh = 0, False
    if inner.shape[0]:
        k = int(_host(inner[::-1].argmax()))  # the last flagged row, from the end
        if bool(_host(inner[inner.shape[0] - 1 - k])):
            lo, fresh = (inner.shape[0] - k if ends else inner.shape[0] - 1 - k), True
    c = _tail_summary(xp, x[lo:], total.dtype)
    if not fresh and seed is not None:
        seed = np.asarray(seed, total.dtype).reshape(-1)
        joined = absorbing_join(seed, c)
        continues = ~seed["end"] if ends else np.ones(len(c), bool)  # a seed that ends a segment does not
        c = np.where(continues, joined, c)
    zero = need & c["zero"]
    for name in ("zero", "after", "nonfinite", "sign"):
        total[name] = np.where(need, c[name], total[name])
    total["pre"] = np.where(zero, c["pre"], value)
    total["value"] = np.where(zero, c["value"], value)
    return total
