"""Issue 30's CPU calls across ranks, for A/B runs of API changes (one process group per tree).

    PYTHONPATH=TREE mpiexec -n 3 python benchmarks/ab_cpu_calls.py LABEL [--n 1000] [--reps 300]

Question: did a change to the host side (the carries between ranks, the plans) make the CPU
backend's distributed calls slower?  Each rank holds ``n`` float64 items (segment flags one in
64, drawn alike for every tree); every call runs with ``out=``, a barrier before each, calls of
one tree interleaved, median of --reps.  Rank 0 prints one line per call: LABEL, call, µs.
Results are checked first against NumPy on the gathered array (within 1e-9 relative: products of millions of items).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from mpi4py import MPI

import distscan


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("label")
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--reps", type=int, default=300)
    a = ap.parse_args()
    comm = MPI.COMM_WORLD
    rs = np.random.default_rng(1000 + comm.rank)
    x = rs.uniform(0.999, 1.001, a.n)  # products of millions stay in range
    flags = rs.random(a.n) < 1 / 64
    y = np.empty_like(x)
    calls = {
        "segmented prod f64": lambda: distscan.cumprod(x, segments=flags, out=y, comm=comm),
        "segmented prod f64 rev": lambda: distscan.cumprod(x, segments=flags, reverse=True, out=y, comm=comm),
        "segmented sum f64": lambda: distscan.cumsum(x, segments=flags, out=y, comm=comm),
        "prod f64": lambda: distscan.cumprod(x, out=y, comm=comm),
        "cumsum f64": lambda: distscan.cumsum(x, out=y, comm=comm),
        "nancumsum f64": lambda: distscan.nancumsum(x, out=y, comm=comm),
    }
    xs, fs = comm.allgather(x), comm.allgather(flags)
    whole, starts = np.concatenate(xs), np.concatenate(fs)
    lo = sum(len(p) for p in xs[:comm.rank])
    for name, call in calls.items():  # check first
        call()
        ufunc = np.multiply if "prod" in name else np.add
        data, st = (whole[::-1], np.roll(starts, -1)[::-1]) if "rev" in name else (whole, starts)
        if "rev" in name:
            st[0] = True
        if "segmented" in name:
            want = np.empty_like(data)
            for seg in np.split(np.arange(len(data)), np.flatnonzero(st)[1:] if st[0] else np.flatnonzero(st)):
                want[seg] = ufunc.accumulate(data[seg])
        else:
            want = ufunc.accumulate(data)
        if "rev" in name:
            want = want[::-1]
        assert np.allclose(y, want[lo:lo + a.n], rtol=1e-9, atol=0), name
    times = {name: [] for name in calls}
    for _ in range(a.reps):
        for name, call in calls.items():
            comm.Barrier()
            t0 = time.perf_counter()
            call()
            times[name].append(time.perf_counter() - t0)
    worst = {name: comm.allreduce(float(np.median(t)), op=MPI.MAX) for name, t in times.items()}
    if comm.rank == 0:
        for name, t in worst.items():
            print(f"{a.label:<10} {name:<24} {t * 1e6:8.1f} us  ({comm.size} ranks, n={a.n})", flush=True)


if __name__ == "__main__":
    main()
