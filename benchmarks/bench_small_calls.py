"""Small distributed calls: distscan.cumsum against the bare mpi4py version, in one run.

    mpiexec -n 2 python benchmarks/bench_small_calls.py [--n 1000] [--reps 2000] [--json out.json]

Every rank holds ``n`` int64.  The bare version is what an MPI code writes by hand:
``np.cumsum`` + ``comm.Exscan`` of the last element + add (rank 0 adds nothing).
distscan's call runs the same scan through the API (the call-kind cache, the reusable plan, one
Allgather that carries the failure flag, the argument fingerprint and the part's total; for
integers the part is scanned first and the offset added after, as the bare code does).  Both are
timed interleaved, barrier before each call, median of ``reps`` calls; rank 0 prints the ratio.
Results are checked against each other first.
"""
import argparse
import json
import sys
import time

import numpy as np
from mpi4py import MPI

import distscan


def bare(comm, x):
    local = np.cumsum(x)
    before = np.zeros(1, np.int64)
    comm.Exscan(local[-1:], before, op=MPI.SUM)
    if comm.rank:
        local += before[0]
    return local


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=1000)
    p.add_argument("--reps", type=int, default=2000)
    p.add_argument("--json")
    a = p.parse_args()
    comm = MPI.COMM_WORLD
    x = np.random.default_rng(comm.rank).integers(0, 100, a.n)
    assert np.array_equal(bare(comm, x), distscan.cumsum(x, comm=comm))
    fns = {"bare mpi4py": lambda: bare(comm, x), "distscan.cumsum": lambda: distscan.cumsum(x, comm=comm)}
    times = {k: [] for k in fns}
    for _ in range(50):  # warm-up
        for f in fns.values():
            f()
    for _ in range(a.reps):
        for k, f in fns.items():
            comm.Barrier()
            t = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t)
    # The slowest rank's time is the call's time.
    med = {k: comm.allreduce(float(np.median(v)), op=MPI.MAX) for k, v in times.items()}
    if comm.rank == 0:
        ratio = med["distscan.cumsum"] / med["bare mpi4py"]
        lib = MPI.Get_library_version().splitlines()[0]
        print(f"{comm.size} ranks, {a.n} int64 per rank, median of {a.reps} ({lib})")
        for k, v in med.items():
            print(f"  {k:16s} {v * 1e6:8.1f} us")
        print(f"  ratio distscan / bare: {ratio:.2f}")
        if a.json:
            with open(a.json, "w") as f:
                json.dump({"ranks": comm.size, "n": a.n, "reps": a.reps, "mpi": lib, "median_s": med,
                           "ratio": ratio}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
