"""Where the host's time goes in one call of issue 30's scans on a GPU (the general route, not the
hot path): wall time per call at 2^16 items (Python included, one synchronisation per loop), then
cProfile of the calls, the heaviest functions by their own time.

    PYTHONPATH=$PWD python3 benchmarks/profile_operators_host.py [--n 65536] [--calls 300] [--top 14]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import time

import cupy as cp
import numpy as np

import distscan

try:
    from mpi4py import MPI
    SELF = MPI.COMM_SELF
except ImportError:  # pragma: no cover
    SELF = None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1 << 16)
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--top", type=int, default=14)
    a = ap.parse_args()
    rs = cp.random.RandomState(0)
    x = rs.standard_normal(a.n, dtype=cp.float32)
    y = cp.empty_like(x)
    flags = rs.random_sample(a.n) < 1e-3
    coef = rs.uniform(0.5, 1.0, a.n).astype(cp.float32)
    calls = {
        "cumsum (hot path)": lambda: distscan.cumsum(x, out=y, comm=SELF),
        "reverse": lambda: distscan.cumsum(x, reverse=True, out=y, comm=SELF),
        "segments": lambda: distscan.cumsum(x, segments=flags, out=y, comm=SELF),
        "linear_recurrence": lambda: distscan.linear_recurrence(coef, x, out=y, comm=SELF),
        "compensated": lambda: distscan.cumsum(x, compensated=True, out=y, comm=SELF),
        "logaddexp": lambda: distscan.scan(x, np.logaddexp, out=y, comm=SELF),
    }
    for name, fn in calls.items():
        for _ in range(20):
            fn()
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        for _ in range(a.calls):
            fn()
        cp.cuda.Device().synchronize()
        wall = (time.perf_counter() - t0) / a.calls
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(a.calls):
            fn()
        prof.disable()
        cp.cuda.Device().synchronize()
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(a.top)
        lines = [ln for ln in out.getvalue().splitlines() if ln.strip() and not ln.startswith(("   Ordered", "   List"))]
        print(f"=== {name}: {wall * 1e6:.1f} us per call (2^{a.n.bit_length() - 1} float32)")
        print("\n".join(ln[:150] for ln in lines[2:3 + a.top]))


if __name__ == "__main__":
    main()
