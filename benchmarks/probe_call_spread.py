#!/usr/bin/env python3
"""Where a small distributed call's time goes on each rank: before its collective, inside it, after.

    mpiexec -n K python benchmarks/probe_call_spread.py [--n 1000] [--calls 3000]

Question (issue 30's exchange target, the sum at 32 ranks: 1.36x the bare pipeline where the
inlined one-collective protocol is 1.03-1.07x, benchmarks/RESULTS.md): is distscan's extra time
its own host work per call, or the collective waiting longer for the slowest rank's host work?
The communicator is wrapped (a subclass of ``MPI.Intracomm`` over the same handle) so that its
``Allgather`` and ``Exscan`` record when they are entered and left; each call of ``bare``
(``np.cumsum`` + ``Exscan`` + add) and of ``distscan.cumsum(x, comm=comm, out=out)`` is split into
*before* (call start to the collective), *inside* and *after* (collective to return), per rank, in
µs.  Printed by rank 0: the medians over calls and ranks, the 90th percentile, and the median over
calls of the slowest rank's *before* (what a collective that waits for every rank pays).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from mpi4py import MPI

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import distscan  # noqa: E402
from harness import bare_cumsum  # noqa: E402

clock = time.perf_counter


def _timed(name: str):
    """``MPI.Intracomm``'s collective ``name``, recording in ``marks`` when it is entered and left."""
    collective = getattr(MPI.Intracomm, name)

    def timed(self, *args, **kwargs):
        self.marks[0] = clock()
        try:
            return collective(self, *args, **kwargs)
        finally:
            self.marks[1] = clock()
    return timed


class TimedComm(MPI.Intracomm):
    """The same communicator, its ``Allgather`` and ``Exscan`` timed (enter, leave)."""

    marks: list = [0.0, 0.0]
    Allgather = _timed("Allgather")
    Exscan = _timed("Exscan")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--calls", type=int, default=3000)
    a = ap.parse_args()
    world = MPI.COMM_WORLD
    comm = TimedComm(world)
    rank, size = comm.rank, comm.size
    x = np.random.default_rng(rank).integers(-100, 100, a.n).astype(np.int64)
    out = np.empty_like(x)
    bare = bare_cumsum(comm, x, out)

    def call():
        distscan.cumsum(x, comm=comm, out=out)

    rows = {}
    for name, fn in (("bare", bare), ("distscan", call), ("bare again", bare), ("distscan again", call)):
        for _ in range(300):
            fn()
        parts = np.empty((a.calls, 3))
        world.Barrier()
        for i in range(a.calls):
            t0 = clock()
            fn()
            t1 = clock()
            enter, leave = comm.marks
            parts[i] = (enter - t0, leave - enter, t1 - leave)
        parts *= 1e6
        every = world.gather(parts, root=0)
        if rank == 0:
            every = np.stack(every)  # (ranks, calls, 3)
            rows[name] = (np.median(every, axis=(0, 1)), np.percentile(every, 90, axis=(0, 1)),
                          float(np.median(every[:, :, 0].max(axis=0))), float(np.median(every.sum(axis=2))))
    if rank == 0:
        print(f"{size} ranks, {MPI.Get_library_version().splitlines()[0].strip()}, {a.n} int64 a rank, "
              f"{a.calls} calls; µs per call (median over calls and ranks; p90 in brackets)")
        print(f"{'':16}{'before':>16}{'inside':>16}{'after':>16}{'call':>10}{'slowest before':>16}")
        for name, (med, p90, slowest, whole) in rows.items():
            cells = "".join(f"{m:8.2f} ({p:5.1f})" for m, p in zip(med, p90))
            print(f"{name:16}{cells}{whole:10.2f}{slowest:16.2f}")


if __name__ == "__main__":
    main()
