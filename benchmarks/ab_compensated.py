"""What a compensated sum costs against the plain sum on one GPU, for A/B runs of kernel variants.

    PYTHONPATH=TREE python3 benchmarks/ab_compensated.py LABEL [--log2n 27] [--reps 15]

Question: how much time does ``cumsum(..., compensated=True)`` take against ``cumsum`` (issue
30's target: at most 1.15x), and how much did a change to the compensated kernel's join
(kernels/util/states.cuh, two_sum_renorm) cost?  Run it once per tree (each its own process and
PYTHONPATH), in one device call, so that the machine is the same.  GPU time only (the host's
work hidden behind a 2 ms GPU sleep: harness.events_interleaved), median of --reps, the two calls
interleaved in a new random order each repetition, float32 and float64.  Each result is checked
first: within 2 ulp of the exact prefix sums (items that are multiples of 2^-12, summed in float64).
Prints one line per dtype: LABEL, dtype, compensated µs, plain µs, ratio.
"""

from __future__ import annotations

import argparse
import os
import sys

import cupy as cp
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import SELF, events_interleaved  # noqa: E402

import distscan  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("label")
    ap.add_argument("--log2n", type=int, default=27)
    ap.add_argument("--reps", type=int, default=15)
    a = ap.parse_args()
    n = 1 << a.log2n
    rs = cp.random.RandomState(1)
    for dtype in (np.float32, np.float64):
        # multiples of 2^-12 up to 256: every prefix sum is exact in float64 (below 2^47 units)
        x = (rs.randint(-2**20, 2**20, n) * 2.0**-12).astype(dtype)
        y = cp.empty_like(x)
        got = distscan.cumsum(x, compensated=True, comm=SELF).astype(cp.float64)
        ref = cp.cumsum(x.astype(cp.float64))
        mag = cp.abs(ref.astype(dtype))
        ulp = (cp.nextafter(mag, cp.asarray(np.inf, dtype)) - mag).astype(cp.float64)  # CuPy has no spacing
        worst = float(cp.max(cp.abs(got - ref) / ulp))
        assert worst <= 2.0, f"{a.label}: compensated {np.dtype(dtype).name} off by {worst} ulp"
        t = events_interleaved({"comp": lambda: distscan.cumsum(x, compensated=True, out=y, comm=SELF),
                                "plain": lambda: distscan.cumsum(x, out=y, comm=SELF)}, a.reps, hide_host=True)
        print(f"{a.label:<10} {np.dtype(dtype).name:<8} compensated {t['comp'] * 1e6:8.1f} us  "
              f"plain {t['plain'] * 1e6:8.1f} us  ratio {t['comp'] / t['plain']:.3f}", flush=True)


if __name__ == "__main__":
    main()
