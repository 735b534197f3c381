"""The exchange between ranks at small and large rank counts (CPU backend), against the bare
pipeline ``np.cumsum`` + ``MPI_Exscan`` + add.

    mpirun -n K python benchmarks/bench_exchange.py OUT.json [--sizes 1000,1048576] [--calls 300] [--rounds 7]

Question: what does distscan's distributed call cost over the bare pipeline a user would write,
for ``sum`` and for a segmented sum and a linear recurrence (state carries), with the gather of
records (the default below DISTSCAN_DOUBLING_RANKS ranks) and with recursive doubling (run with
``DISTSCAN_DOUBLING_RANKS=1`` to force it)?  Each implementation runs loops of ``--calls``
back-to-back calls on every rank (fresh data, the same on every call), timed from a barrier to
the last rank's end; the implementations in a new random order every round, median of
``--rounds`` rounds; per-call microseconds.  The bare pipeline: ``np.cumsum(x, out=y)``;
``comm.Exscan(total, offset)``; ``y += offset`` (rank 0: none).

The table is printed by rank 0; OUT.json gets every figure (rank count, method, sizes).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from mpi4py import MPI

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import distscan  # noqa: E402
from distscan.dist import exchange  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json_out")
    ap.add_argument("--sizes", default="1000,1048576")
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args()
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    method = "doubling" if size >= exchange.DOUBLING_RANKS else "gather"
    rows = []
    for n in map(int, a.sizes.split(",")):
        rng = np.random.default_rng(rank)
        x = rng.integers(-9, 9, n).astype(np.int64)
        xf = rng.standard_normal(n)
        coef = rng.uniform(0.5, 1.0, n)
        flags = rng.random(n) < 0.01
        y, yf = np.empty_like(x), np.empty_like(xf)
        total, offset = np.zeros(1, np.int64), np.zeros(1, np.int64)

        def bare():
            np.cumsum(x, out=y)
            total[0] = y[-1]
            comm.Exscan(total, offset)
            if rank:
                y.__iadd__(offset[0])

        impls = {
            "bare": bare,
            "sum": lambda: distscan.cumsum(x, out=y, comm=comm),
            "segmented sum": lambda: distscan.cumsum(x, segments=flags, out=y, comm=comm),
            "recurrence": lambda: distscan.linear_recurrence(coef, xf, out=yf, comm=comm),
        }
        calls = a.calls if n <= 1 << 14 else max(10, a.calls // 30)
        for fn in impls.values():  # compile (numba), warm
            for _ in range(5):
                fn()
        times = {k: [] for k in impls}
        order = random.Random(3)  # the same order on every rank
        for _ in range(a.rounds):
            for name in order.sample(list(impls), len(impls)):
                fn = impls[name]
                comm.Barrier()
                t = time.perf_counter()
                for _ in range(calls):
                    fn()
                dt = comm.allreduce(time.perf_counter() - t, op=MPI.MAX) / calls
                times[name].append(dt)
        med = {k: statistics.median(v) for k, v in times.items()}
        rows.append({"ranks": size, "method": method, "n_local": n, **{f"{k}_us": v * 1e6 for k, v in med.items()},
                     **{f"{k}/bare": v / med["bare"] for k, v in med.items() if k != "bare"}})
    if rank == 0:
        data = {"host": platform.node(), "cpus": os.cpu_count(), "mpi": MPI.Get_library_version().splitlines()[0],
                "rows": rows}
        Path(a.json_out).write_text(json.dumps(data, indent=1))
        for r in rows:
            print(f"ranks {r['ranks']:3d} {r['method']:8s} n_local {r['n_local']:8d}  bare {r['bare_us']:8.1f} us  "
                  + "  ".join(f"{k} {r[k + '_us']:8.1f} us ({r[k + '/bare']:.2f}x)"
                              for k in ("sum", "segmented sum", "recurrence")), flush=True)


if __name__ == "__main__":
    main()
