#!/usr/bin/env python3
"""What the collectives alone cost per call, at the rank count it runs with (issue 30's exchange).

    mpirun -n K python benchmarks/probe_mpi_collectives.py [--calls 2000] [--rounds 7]

Question: how much of distscan's small distributed call over the bare pipeline (``np.cumsum`` +
``Exscan`` + add, ``bench_exchange.py``) is the collective it makes (an ``Allgather`` of one
64-byte record per rank, which also carries every rank's status) and how much is Python?  Each
row is a loop of back-to-back calls with mpi4py's buffer interface (no pickling), from a barrier
to the last rank's end, median (min) of the rounds, in microseconds per call.  Rank 0 prints.
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np
from harness import ranks_interleaved
from mpi4py import MPI


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args()
    comm = MPI.COMM_WORLD
    p = comm.Get_size()
    x = np.arange(1000, dtype=np.int64)
    y = np.empty_like(x)
    one, got = np.ones(1, np.int64), np.zeros(1, np.int64)
    rec64, all64 = np.zeros(8, np.int64), np.zeros((p, 8), np.int64)
    rec16, all16 = np.zeros(2, np.int64), np.zeros((p, 2), np.int64)

    def bare():
        np.cumsum(x, out=y)
        one[0] = y[-1]
        comm.Exscan(one, got)
        if comm.rank:
            y.__iadd__(got[0])

    cases = {
        "Exscan 8 B": lambda: comm.Exscan(one, got),
        "Allreduce 8 B": lambda: comm.Allreduce(one, got),
        "Allgather 16 B a rank": lambda: comm.Allgather(rec16, all16),
        "Allgather 64 B a rank": lambda: comm.Allgather(rec64, all64),
        "bare pipeline (cumsum + Exscan + add)": bare,
        "Exscan + Allreduce 8 B": lambda: (comm.Exscan(one, got), comm.Allreduce(one, got)),
    }
    times = ranks_interleaved(comm, cases, a.calls, a.rounds)
    if comm.rank == 0:
        print(f"{p} ranks, {MPI.Get_library_version().splitlines()[0]}, {a.calls} calls x {a.rounds} rounds, "
              "us per call, median (min):")
        for name, v in times.items():
            print(f"  {name:<40}{statistics.median(v):8.2f} ({min(v):.2f})")


if __name__ == "__main__":
    main()
