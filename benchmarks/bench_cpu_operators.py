"""Issue 30's CPU targets: on one rank, each new scan against ``np.cumsum`` of the same data.

    python benchmarks/bench_cpu_operators.py [--n 16777216] [--repeat 7] [--json OUT.json]

Targets (2^24 float64, one rank): linear recurrence <= 2x the time of ``np.cumsum``; segmented
and reverse <= 1.5x.  Every result is checked first (integers exactly, floats against a float64
reference within a stated bound); each time is the median of ``--repeat`` calls into a
preallocated output where the API takes one (``out=``), after one warm-up call (numba's compiled
loops load from the disk cache on the first call).  The table is printed last.
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import numpy as np
from mpi4py import MPI

import distscan

SELF = MPI.COMM_SELF


def _median(fn, repeat):
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def _seg_ref(x, flags):
    out = np.empty_like(x)
    starts = np.flatnonzero(flags).tolist()
    bounds = sorted(set([0] + starts + [len(x)]))
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        np.cumsum(x[lo:hi], out=out[lo:hi])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1 << 24)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--json")
    args = ap.parse_args()
    n = args.n
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n)
    xi = rng.integers(-1000, 1000, n)
    flags = rng.random(n) < 0.01
    a = rng.uniform(0.5, 1.0, n)
    nans = x.copy()
    nans[rng.random(n) < 0.05] = np.nan
    out = np.empty(n)

    # checks first
    bound = 1e-9 * (np.abs(x).sum() + 1)
    assert np.array_equal(distscan.cumsum(xi, comm=SELF, reverse=True), np.cumsum(xi[::-1])[::-1])
    assert np.array_equal(distscan.cumsum(xi, comm=SELF, segments=flags), _seg_ref(xi, flags))
    assert np.max(np.abs(distscan.cumsum(x, comm=SELF, segments=flags) - _seg_ref(x, flags))) <= bound
    y = distscan.linear_recurrence(a[:1 << 16], x[:1 << 16], comm=SELF)
    ref, prev = np.empty(1 << 16), 0.0
    for i in range(1 << 16):
        prev = a[i] * prev + x[i]
        ref[i] = prev
    assert np.max(np.abs(y - ref)) <= 1e-9 * (np.abs(ref).max() + 1)
    assert np.max(np.abs(distscan.nancumsum(nans, comm=SELF) - np.nancumsum(nans))) <= bound

    rows = [
        ("np.cumsum", lambda: np.cumsum(x, out=out)),
        ("distscan.cumsum", lambda: distscan.cumsum(x, comm=SELF, out=out)),
        ("reverse cumsum", lambda: distscan.cumsum(x, comm=SELF, reverse=True, out=out)),
        ("np.cumsum of the flipped view (NumPy's reverse)", lambda: np.cumsum(x[::-1], out=out[::-1])),
        ("segmented cumsum (1 % flags)", lambda: distscan.cumsum(x, comm=SELF, segments=flags, out=out)),
        ("linear_recurrence", lambda: distscan.linear_recurrence(a, x, comm=SELF, out=out)),
        ("nancumsum", lambda: distscan.nancumsum(nans, comm=SELF, out=out)),
        ("np.nancumsum", lambda: np.nancumsum(nans, out=out)),
        ("compensated cumsum", lambda: distscan.cumsum(x, comm=SELF, compensated=True, out=out)),
        ("logcumsumexp (op=np.logaddexp)", lambda: distscan.scan(x, np.logaddexp, comm=SELF, out=out)),
        ("np.logaddexp.accumulate", lambda: np.logaddexp.accumulate(x, out=out)),
    ]
    results = {name: _median(fn, args.repeat) for name, fn in rows}
    base = results["np.cumsum"]
    machine = f"{platform.node()} ({platform.processor() or platform.machine()}), numpy {np.__version__}"
    print(f"one rank, n = {n} float64, median of {args.repeat}; {machine}")
    print(f"{'scan':50s} {'ms':>9s} {'x np.cumsum':>12s}")
    for name, t in results.items():
        print(f"{name:50s} {t * 1e3:9.2f} {t / base:12.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"n": n, "machine": machine, "seconds": results}, f, indent=2)


if __name__ == "__main__":
    main()
