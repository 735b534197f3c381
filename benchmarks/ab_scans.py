"""Issue 30's scans at one size, for A/B runs of kernel variants (one process per tree).

    PYTHONPATH=TREE python3 benchmarks/ab_scans.py LABEL [--log2n 27] [--reps 11] [--scans a,b] [--nocheck]
                                                  [--density 1e-3] [--algorithm auto]

Question: did a change to kernels/ make a scan faster or slower?  Run it once per tree, each
with its own PYTHONPATH, in one device call (the same machine), alternating the trees over two
rounds or more, so that a drift of the machine shows.  Every scan runs with ``algorithm="auto"``
(the plan a user gets), GPU time only (``harness.events_interleaved`` with the host hidden, the
scans of one tree interleaved), median of --reps.  Each result is checked first against CuPy or
a float64 loop on the GPU (``--nocheck``: a timing-only variant that is knowingly wrong).
Prints one line per scan: LABEL, scan, GB/s over its bytes per item, and the check.
``--algorithm lookahead`` (or any of ``distscan.ALGORITHMS``) passes ``algorithm=`` to every call in
place of "auto".
"""

from __future__ import annotations

import argparse
import functools
import os
import sys

import cupy as cp
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import SELF, copy_bandwidth, events_interleaved  # noqa: E402

import distscan  # noqa: E402


def _scans(n: int, density: float = 1e-3) -> dict:
    """{name: (bytes per item, call, output, reference or None)}; ``density``: the segment flags'"""
    rs = cp.random.RandomState(7)
    x32 = rs.standard_normal(n, dtype=cp.float32)
    x64 = x32.astype(cp.float64)
    xnan = x32.copy()
    xnan[rs.random_sample(n) < 0.01] = cp.nan
    flags = rs.random_sample(n) < density
    coef = rs.uniform(0.5, 1.0, n).astype(cp.float32)
    y32, y64 = cp.empty_like(x32), cp.empty_like(x64)
    coef64 = coef.astype(cp.float64)
    coef_inf = cp.where(rs.random_sample(n) < 1e-4, cp.float32(cp.inf), coef)
    coef_wide = rs.uniform(-1.25, 1.25, n).astype(cp.float32)  # |a| > 1 in a fifth of the items; stable
    coef_late = coef.copy()
    coef_late[-1] = 2  # one |a| > 1, in the last tile
    coefc = (coef * cp.exp(1j * rs.uniform(-0.1, 0.1, n))).astype(cp.complex64)  # |a| in (0.5, 1)
    xc = (x32 + 1j * x32[::-1]).astype(cp.complex64)
    yc = cp.empty_like(xc)
    xi = rs.randint(-2**30, 2**30, n, dtype=cp.int64)
    yi = cp.empty_like(xi)

    def segmented_ref(x, flags=flags):
        total = cp.cumsum(x)
        starts = cp.flatnonzero(flags)
        before = cp.zeros_like(total)  # the running sum just before each segment's start
        before[starts] = total[starts] - x[starts]
        idx = cp.asarray(np.maximum.accumulate(np.where(cp.asnumpy(flags), np.arange(n), 0)))
        return total - cp.where(flags[0] | (idx > 0), before[idx], 0)

    # a reverse segmented scan is the forward one of the mirrored items, whose segments start at
    # the mirrored runs' last items (a flag's predecessor, and the array's last item)
    ends = cp.concatenate([flags[1:], cp.ones(1, bool)])[::-1]

    return {
        "cumsum f32": (8, lambda: distscan.cumsum(x32, out=y32, comm=SELF), y32, lambda: cp.cumsum(x64)),
        "cumsum f64": (16, lambda: distscan.cumsum(x64, out=y64, comm=SELF), y64, lambda: cp.cumsum(x64)),
        "nancumsum f32": (8, lambda: distscan.nancumsum(xnan, out=y32, comm=SELF), y32,
                          lambda: cp.cumsum(cp.nan_to_num(xnan.astype(cp.float64), nan=0.0))),
        "reverse cumsum f32": (8, lambda: distscan.cumsum(x32, reverse=True, out=y32, comm=SELF), y32,
                               lambda: cp.cumsum(x64[::-1])[::-1]),
        "reverse cumsum f64": (16, lambda: distscan.cumsum(x64, reverse=True, out=y64, comm=SELF), y64,
                               lambda: cp.cumsum(x64[::-1])[::-1]),
        "segmented sum f32": (9, lambda: distscan.cumsum(x32, segments=flags, out=y32, comm=SELF), y32,
                              lambda: segmented_ref(x64)),
        "segmented sum i64": (17, lambda: distscan.cumsum(xi, segments=flags, out=yi, comm=SELF), yi,
                              lambda: segmented_ref(xi)),
        "segmented sum f64": (17, lambda: distscan.cumsum(x64, segments=flags, out=y64, comm=SELF), y64,
                              lambda: segmented_ref(x64)),
        "segmented rev sum f32": (9, lambda: distscan.cumsum(x32, segments=flags, reverse=True, out=y32, comm=SELF),
                                  y32[::-1], lambda: segmented_ref(x64[::-1], ends)),
        "segmented rev sum i64": (17, lambda: distscan.cumsum(xi, segments=flags, reverse=True, out=yi, comm=SELF),
                                  yi[::-1], lambda: segmented_ref(xi[::-1], ends)),
        # exclusive: each segment's first item the identity (the inclusive reference less the item);
        # the look-back's exclusive kernels hold more registers than its inclusive ones
        "segmented excl sum f32": (9, lambda: distscan.cumsum(x32, segments=flags, exclusive=True, out=y32,
                                                              comm=SELF), y32, lambda: segmented_ref(x64) - x64),
        "segmented excl sum i64": (17, lambda: distscan.cumsum(xi, segments=flags, exclusive=True, out=yi, comm=SELF),
                                   yi, lambda: segmented_ref(xi) - xi),
        "segmented excl sum f64": (17, lambda: distscan.cumsum(x64, segments=flags, exclusive=True, out=y64,
                                                               comm=SELF), y64, lambda: segmented_ref(x64) - x64),
        "segmented excl rev sum f32": (9, lambda: distscan.cumsum(x32, segments=flags, exclusive=True, reverse=True,
                                                                  out=y32, comm=SELF),
                                       y32[::-1], lambda: segmented_ref(x64[::-1], ends) - x64[::-1]),
        "segmented excl rev sum i64": (17, lambda: distscan.cumsum(xi, segments=flags, exclusive=True, reverse=True,
                                                                   out=yi, comm=SELF),
                                       yi[::-1], lambda: segmented_ref(xi[::-1], ends) - xi[::-1]),
        "exclusive cumsum f32": (8, lambda: distscan.cumsum(x32, exclusive=True, out=y32, comm=SELF), y32,
                                 lambda: cp.cumsum(x64) - x64),
        "recurrence seg f32": (13, lambda: distscan.linear_recurrence(coef, x32, segments=flags, out=y32, comm=SELF),
                               y32, lambda: _recurrence_prefix(cp.where(flags, 0, coef), x32)),
        "recurrence rev f32": (12, lambda: distscan.linear_recurrence(coef, x32, reverse=True, out=y32, comm=SELF),
                               y32[::-1], lambda: _recurrence_prefix(coef[::-1], x32[::-1])),
        "recurrence rev f64": (24, lambda: distscan.linear_recurrence(coef64, x64, reverse=True, out=y64, comm=SELF),
                               y64[::-1], lambda: _recurrence_prefix(coef64[::-1], x64[::-1])),
        "recurrence rev c64": (24, lambda: distscan.linear_recurrence(coefc, xc, reverse=True, out=yc, comm=SELF),
                               yc[::-1], lambda: _recurrence_prefix(coefc[::-1], xc[::-1])),
        "recurrence seg rev f32": (13, lambda: distscan.linear_recurrence(coef, x32, segments=flags, reverse=True,
                                                                          out=y32, comm=SELF),
                                   y32[::-1], lambda: _recurrence_prefix(cp.where(ends, 0, coef[::-1]), x32[::-1])),
        "recurrence f32": (12, lambda: distscan.linear_recurrence(coef, x32, out=y32, comm=SELF), y32,
                           lambda: _recurrence_prefix(coef, x32)),
        "recurrence f64": (24, lambda: distscan.linear_recurrence(coef64, x64, out=y64, comm=SELF), y64,
                           lambda: _recurrence_prefix(coef64, x64)),
        "recurrence c64": (24, lambda: distscan.linear_recurrence(coefc, xc, out=yc, comm=SELF), yc,
                           lambda: _recurrence_prefix(coefc, xc)),
        # one coefficient in 10^4 infinite: the threads whose runs hold one keep the zero rule's tests
        "recurrence f32 inf": (12, lambda: distscan.linear_recurrence(coef_inf, x32, out=y32, comm=SELF), y32, None),
        # coefficients past 1 everywhere (the rule's tests fail in every warp), or in the last tile alone
        "recurrence f32 wide": (12, lambda: distscan.linear_recurrence(coef_wide, x32, out=y32, comm=SELF), y32,
                                lambda: _recurrence_prefix(coef_wide, x32)),
        "recurrence f32 late": (12, lambda: distscan.linear_recurrence(coef_late, x32, out=y32, comm=SELF), y32,
                                lambda: _recurrence_prefix(coef_late, x32)),
        "compensated f32": (8, lambda: distscan.cumsum(x32, compensated=True, out=y32, comm=SELF), y32,
                            lambda: cp.cumsum(x64)),
        "cummax f32": (8, lambda: distscan.cummax(x32, out=y32, comm=SELF), y32,
                       lambda: cp.asarray(np.maximum.accumulate(cp.asnumpy(x64)))),
    }


PREFIX = 1 << 16  # the items a host loop checks of a recurrence


def _recurrence_prefix(a, b):
    """y[i] = a[i] y[i-1] + b[i] over the first PREFIX items, in double (complex) precision."""
    a, b = cp.asnumpy(a[:PREFIX]).astype(np.complex128), cp.asnumpy(b[:PREFIX]).astype(np.complex128)
    y, acc = np.empty(PREFIX, np.complex128), 0j
    for i in range(PREFIX):
        acc = a[i] * acc + b[i]
        y[i] = acc
    return cp.asarray(y)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("label")
    ap.add_argument("--log2n", type=int, default=27)
    ap.add_argument("--reps", type=int, default=11)
    ap.add_argument("--scans", help="comma-separated names (default: all)")
    ap.add_argument("--nocheck", action="store_true")
    ap.add_argument("--density", type=float, default=1e-3, help="of the segment flags (default 1e-3)")
    ap.add_argument("--algorithm", default="auto", help="passed as algorithm= to every call (default auto)")
    a = ap.parse_args()
    if a.algorithm != "auto":  # the table's calls look these names up when they run
        for name in ("cumsum", "nancumsum", "cummax", "linear_recurrence"):
            setattr(distscan, name, functools.partial(getattr(distscan, name), algorithm=a.algorithm))
    n = 1 << a.log2n
    table = _scans(n, a.density)
    names = a.scans.split(",") if a.scans else list(table)
    print(f"{a.label:<10} {'copy':<20} {copy_bandwidth(4 * n, a.reps):8.0f} GB/s", flush=True)
    for name in names:
        bpe, fn, out, ref = table[name]
        fn()
        check = "unchecked"
        if ref is not None and not a.nocheck:
            want = ref()
            got = out[:len(want)]
            # float32 sums of N(0, 1) items: within 1e-4 of the largest |prefix| plus 1; integers exact
            if out.dtype.kind == "i":
                bad = float(cp.count_nonzero(got != want))
            else:
                bad = float(cp.max(cp.abs(got.astype(want.dtype) - want))) / (1 + float(cp.max(cp.abs(want))))
            check = f"{bad:.1e}"
            assert bad <= 1e-4, f"{a.label}: {name} differs by {bad:.1e}"
        t = events_interleaved({name: fn}, a.reps, hide_host=True)[name]
        print(f"{a.label:<10} {name:<20} {bpe * n / t / 1e9:8.0f} GB/s  ({check}, flags {a.density:g})", flush=True)


if __name__ == "__main__":
    main()
