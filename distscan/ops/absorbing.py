"""How a float product absorbs zeros as NumPy's sequential product does, wherever it was split.

``numpy.cumprod`` runs left to right: once the running product is 0 it stays a signed zero, until
an inf or NaN makes it NaN.  A product formed apart from what comes before it (a segment's tail,
a rank's or a tile's part) cannot know that, and ``0 * inf`` of two such parts is NaN where the
sequential product is 0.  A segmented float product's state (:class:`distscan.ops.state.Segmented`)
therefore carries the fields below beside its value; these functions are their rules, shared by
the state, the CPU backend's repairs and the GPU's (``backends/absorb.py``).  Plain products keep a
carry of their own (:mod:`distscan._carry`).
"""

from __future__ import annotations

import numpy as np


def absorbs_zeros(base, value) -> bool:
    """Whether products of ``base`` over values of dtype ``value`` absorb zeros as NumPy's sequential
    product does (float and complex products, NaN-aware ones too: nancumprod is cumprod with NaN
    read as 1), which a product formed apart from what comes before it does not know
    (:class:`distscan.ops.state.Segmented`; plain products: :mod:`distscan._carry`)."""
    return getattr(base, "name", None) in ("prod", "nanprod") and np.dtype(value).kind in "fc"


# The fields (beside ``value`` and ``pre``) that let a segmented float product's state absorb zeros
# (Segmented's docstring).
ABSORBING = (("zero", np.bool_), ("after", np.bool_), ("nonfinite", np.bool_), ("sign", np.bool_))


def signbit(v) -> np.ndarray:
    """``numpy.signbit`` of real values; False for complex ones (their zeros are ``0j``)."""
    v = np.asarray(v)
    return np.signbit(v) if v.dtype.kind == "f" else np.zeros(v.shape, bool)


def absorbed(xp, pre, after, sign):
    """The value of a product whose tail holds a zero (:class:`distscan.ops.state.Segmented`'s fields): NaN where the
    product before the zero is not finite or an inf or NaN follows, else a zero of sign
    ``signbit(pre) ^ sign`` (complex: ``0j``).  ``xp``: the arrays' module (NumPy or CuPy)."""
    with np.errstate(invalid="ignore"):
        nan = after | ~xp.isfinite(pre)
    if pre.dtype.kind == "c":
        zeros = xp.zeros(pre.shape, pre.dtype)
    else:
        # NumPy scalars, not 0-d arrays: CuPy 14.2's cp.asarray(-0.0, float32) is +0.0 (H200, 2026-11-26)
        zeros = xp.where(xp.signbit(pre) ^ sign, pre.dtype.type(-0.0), pre.dtype.type(0.0))
    return xp.where(nan, xp.asarray(np.nan, pre.dtype), zeros)


def absorbing_join(s, t) -> np.ndarray:
    """``s . t`` of two zero-absorbing states (:class:`distscan.ops.state.Segmented`) where no segment starts in
    ``t``: the fields of the tail of ``s`` followed by ``t``'s rows (its segment fields unset)."""
    out = np.zeros(np.broadcast(s, t).shape, s.dtype)
    s_zero, t_zero = s["zero"], t["zero"]
    with np.errstate(all="ignore"):
        plain = s["value"] * t["value"]  # neither holds a zero
        pre = np.where(s_zero, s["pre"], s["value"] * t["pre"])
    zero = s_zero | t_zero
    after = np.where(s_zero, s["after"] | t["nonfinite"], t["after"])
    # after s's zero every sign of t counts: those before t's zero are the sign of its pre
    sign = np.where(s_zero, s["sign"] ^ (signbit(t["pre"]) ^ t["sign"]), t["sign"])
    pre = np.where(zero, pre, plain)
    out["value"] = np.where(zero, absorbed(np, pre, after, sign), plain)
    out["pre"], out["zero"], out["after"], out["sign"] = pre, zero, after, sign
    out["nonfinite"] = s["nonfinite"] | t["nonfinite"]
    return out


def initial_first(init, s) -> np.ndarray:
    """The values of the zero-absorbing states ``s`` with ``init`` (values of their dtype, broadcast
    to them) multiplied in before their rows, as NumPy's running product from ``init`` absorbs a
    zero: the join of ``init``'s states (``Segmented.lift``'s fields of a row ``init``, itself, not
    NaN-lifted: an initial is no input) and ``s``.  ``init * s["value"]`` differs where a zero
    absorbs: a zero ``init`` leaves 0 where ``s``'s own product overflowed (NaN but for an inf or
    NaN input), and ``init`` times the product before ``s``'s first zero may overflow (NaN)."""
    head = np.zeros(np.broadcast(init, s).shape, s.dtype)
    head["value"] = np.broadcast_to(np.asarray(init, s["value"].dtype), head.shape)
    lift_fields(head)
    return absorbing_join(head, s)["value"]


def lift_fields(states) -> None:
    """Set the zero-absorption fields of single rows' states in place from their ``value`` (the
    rows themselves): ``pre`` is the value (1 for a zero: nothing before it), ``zero``, ``nonfinite``,
    ``sign`` (a zero's sign bit); ``after`` stays False (nothing follows a single row)."""
    x = states["value"]
    zero = x == 0
    states["pre"] = np.where(zero, np.ones((), x.dtype), x)
    states["zero"], states["sign"] = zero, zero & signbit(x)
    states["nonfinite"] = ~np.isfinite(x)
