#!/usr/bin/env python3
"""Is the seeded scan's programmatic dependent launch (``cuLaunchKernelEx``) the right launch
after the exchange of a multi-GPU call, or would a plain ``cuLaunchKernel`` start it sooner?

    mpirun -n 2 python3 benchmarks/probe_seeded_launch_kind.py [--log2n 28] [--reps 41]

Question (issue 30's 2-GPU rows; benchmarks/RESULTS.md, "Where the 2-GPU cumsum's time goes"):
the cumsum's seeded scan is launched from 2^25 bytes moved as a programmatic dependent of the
kernel before it (``SETTINGS.dependent_min_bytes``: measured on loops of back-to-back calls,
where the previous kernel is still running).  After a multi-GPU call's exchange the stream is
idle: nothing runs for the launch to overlap, and ``cuLaunchKernelEx`` took 8.7-10.5 µs of the
40-45 between the carry's arrival and the scan's start.  This times whole 2-GPU calls with the
default rule and with every launch plain (``cuda.overrides(dependent_min_bytes=2**62)``), each
variant's settings entered before its timed call (a call inside the block, untimed, makes the
launch shapes the change dropped), the variants in a new random order each repetition.

Time: wall, barrier before, device synchronised after, the maximum over the ranks; median (and
quartiles) of --reps; the fraction of the 3-pass floor as bench_multi_gpu_operators.py counts it
(each GPU's device-to-device copy bandwidth in the same run).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_multi_gpu import REPO, _copy_gbs  # noqa: E402

sys.path.insert(0, str(REPO))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--log2n", type=int, default=28)
    ap.add_argument("--reps", type=int, default=41)
    a = ap.parse_args()
    import cupy as cp
    from mpi4py import MPI

    import distscan
    from distscan.backends import cuda

    comm = MPI.COMM_WORLD
    cp.cuda.Device(comm.rank % cp.cuda.runtime.getDeviceCount()).use()
    n = 1 << a.log2n
    x = cp.random.RandomState(7 + comm.rank).standard_normal(n, dtype=cp.float32)
    y = cp.empty_like(x)
    bw = comm.allreduce(_copy_gbs(cp, x, y, 9), op=MPI.MIN) * 1e9
    scans = {
        "cumsum f32": lambda: distscan.cumsum(x, out=y, comm=comm),
        "nancumsum f32": lambda: distscan.nancumsum(x, out=y, comm=comm),
        "reverse cumsum f32": lambda: distscan.cumsum(x, reverse=True, out=y, comm=comm),
    }
    variants = {"default": {}, "plain": {"dependent_min_bytes": 1 << 62}}

    def timed(fn):
        comm.Barrier()
        t0 = time.perf_counter()
        fn()
        cp.cuda.Device().synchronize()
        return comm.allreduce(time.perf_counter() - t0, op=MPI.MAX)

    times = {(s, v): [] for s in scans for v in variants}
    order = random.Random(0)  # the same order on every rank
    for rep in range(a.reps + 1):
        for s, v in order.sample(list(times), len(times)):
            with cuda.overrides(**variants[v]):
                scans[s]()  # untimed: the launch shapes the settings' change dropped
                cp.cuda.Device().synchronize()  # (its kernels must not run into the timed call)
                dt = timed(scans[s])
            if rep:
                times[(s, v)].append(dt)
    if comm.rank == 0:
        floor = 12 * n / bw
        print(f"2 GPUs, 2^{a.log2n} float32 a GPU, copy {bw / 1e9:.0f} GB/s (the slower GPU), "
              f"3-pass floor {floor * 1e6:.0f} us; median (quartiles) of {a.reps}, us")
        for s in scans:
            row = []
            for v in variants:
                t = sorted(times[(s, v)])
                q = statistics.quantiles(t, n=4)
                row.append(f"{v} {statistics.median(t) * 1e6:.0f} ({q[0] * 1e6:.0f}-{q[2] * 1e6:.0f}) "
                           f"= {floor / statistics.median(t):.3f} of floor")
            print(f"  {s:20s} " + " | ".join(row))


if __name__ == "__main__":
    main()
