"""Where the API's time beyond the GPU's goes for issue 30's scans at 2^27 (RESULTS.md: reverse
and segmented sums lose 60-100 µs per call to "API" against "GPU only", where the host's work
per call at 2^16 is ~20 µs).

    PYTHONPATH=$PWD python3 benchmarks/probe_api_gap.py [--log2n 16,27] [--reps 9]

Per scan and size, in one process, medians of --reps (L2 flushed before each call):
  host    the call's host time (perf_counter around it) while the GPU sleeps 5 ms (nothing the
          call launches can start, so a call that synchronises shows >= 5000 µs here)
  api     events around the call (the host's work before the launch included)
  short   the same behind a 150 µs GPU sleep (host work under 150 µs hidden, GPU kept busy)
  gpu     the same behind a 2 ms sleep (benchmarks/harness.py's "GPU only")
If api - gpu >> host, the gap is not the host's work before the launch but the GPU's (idle
between launches of one call, or clocks after an idle GPU); short separates those two.
Then cProfile of 30 calls of the two widest gaps under a GPU sleep, heaviest functions by own time.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import time

import cupy as cp

import distscan
from harness import SELF, events_interleaved, gpu_sleep


def calls_for(n):
    rs = cp.random.RandomState(0)
    x = rs.standard_normal(n, dtype=cp.float32)
    y = cp.empty_like(x)
    flags = rs.random_sample(n) < 1e-3
    coef = rs.uniform(0.5, 1.0, n).astype(cp.float32)
    return {
        "cumsum": lambda: distscan.cumsum(x, out=y, comm=SELF),
        "reverse": lambda: distscan.cumsum(x, reverse=True, out=y, comm=SELF),
        "segments": lambda: distscan.cumsum(x, segments=flags, out=y, comm=SELF),
        "recurrence": lambda: distscan.linear_recurrence(coef, x, out=y, comm=SELF),
        "compensated": lambda: distscan.cumsum(x, compensated=True, out=y, comm=SELF),
    }


def timed(fn, reps, sleep_us):
    """µs of one call between events (harness.events_interleaved), behind a GPU sleep of ``sleep_us``
    (0: none, the host's work before the launch shows)."""
    return events_interleaved({"call": fn}, reps, warm=0, hide_host=sleep_us > 0, sleep_us=sleep_us)["call"] * 1e6


def host_time(fn, reps):
    out = []
    for _ in range(reps):
        cp.cuda.get_current_stream().synchronize()
        gpu_sleep(5000)
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e6)
    cp.cuda.get_current_stream().synchronize()
    return statistics.median(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--log2n", default="16,27")
    ap.add_argument("--reps", type=int, default=9)
    a = ap.parse_args()
    rows, gaps = [], []
    for lg in (int(s) for s in a.log2n.split(",")):
        for name, fn in calls_for(1 << lg).items():
            for _ in range(3):
                fn()
            h = host_time(fn, a.reps)
            api, short, gpu = (timed(fn, a.reps, s) for s in (0, 150, 2000))
            rows.append((lg, name, h, api, short, gpu))
            gaps.append((api - gpu, lg, name, fn))
    for lg, name, fn in [(g[1], g[2], g[3]) for g in sorted(gaps, key=lambda g: -g[0])[:2]]:
        prof = cProfile.Profile()
        for _ in range(30):
            cp.cuda.get_current_stream().synchronize()
            gpu_sleep(5000)
            prof.enable()
            fn()
            prof.disable()
        cp.cuda.get_current_stream().synchronize()
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(10)
        print(f"=== cProfile, {name} 2^{lg}, 30 calls")
        print("\n".join(ln[:140] for ln in s.getvalue().splitlines()[4:20] if ln.strip()))
    print(f"{'n':>5} {'scan':<12} {'host us':>8} {'api us':>8} {'short us':>9} {'gpu us':>8} {'api-gpu':>8}")
    for lg, name, h, api, short, gpu in rows:
        print(f"2^{lg:<3} {name:<12} {h:8.1f} {api:8.1f} {short:9.1f} {gpu:8.1f} {api - gpu:8.1f}")


if __name__ == "__main__":
    main()
