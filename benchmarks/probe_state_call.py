#!/usr/bin/env python3
"""Where a small segmented call's time over its hand-written pipeline goes, at K ranks.

    mpiexec -n K python benchmarks/probe_state_call.py [--n 1000] [--calls 2000] [--rounds 7]

Question (issue 30's exchange target: a 1000-element segmented scan ≤ 1.3× a bare pipeline at 32
ranks): at 16 ranks distscan's segmented call costs 16-28 µs more than its own pipeline, at 2
ranks 10-15 µs, though its Python per call is the same at every rank count.  Is the growth the
collective (``Allgather`` of 64-byte records against ``Exscan`` with a Python operator), or the
same local work costing more when sixteen ranks each wait for the slowest?  Per call, µs, median
of ``--rounds`` rounds of ``--calls`` back-to-back calls with ``out=``, 1000 int64 and 1 % flags:

- ``own``: numba's carry loop, ``Exscan`` of (flag, value) with a Python operator, numba's seeded
  scan (``bench_exchange.py``'s ``bare segmented``);
- ``protocol``: the same loops around distscan's protocol: the 64-byte record (status words and
  the carry), ``Allgather``, the agreed-bytes comparison, a numba fold of the carries before this
  rank, the seeded scan: a floor for a call that keeps the one-collective agreement;
- ``protocol+busy``: ``protocol`` with a busy wait of ``--busy`` µs before the collective and
  after it (local work that costs what distscan's Python costs over the protocol at 2 ranks);
- ``distscan``: ``distscan.cumsum(x, segments=flags, out=out, comm=comm)``.

If ``protocol+busy`` grows from 2 to 16 ranks as ``distscan`` does, local time is what the rank
count amplifies, and only less of it helps.
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
from bench_exchange import _loops, _seg_op  # noqa: E402
from harness import checked_per_call, print_per_call  # noqa: E402

RECORD_BYTES = 64


def _fold():
    import numba

    @numba.njit(cache=True)
    def fold(values, flags, k):
        v, f = values[0], flags[0]
        for i in range(1, k):
            if flags[i]:
                v, f = values[i], True
            else:
                v += values[i]
        return v, f
    return fold


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--busy", type=float, default=4.0, help="µs of busy wait, twice a call")
    a = ap.parse_args()
    comm = MPI.COMM_WORLD
    rank, size = comm.rank, comm.size
    if rank == 0:  # numba's disk cache: compiled once
        loops, fold = _loops(), _fold()
        comm.Barrier()
    else:
        comm.Barrier()
        loops, fold = _loops(), _fold()
    seg_carry, seg_scan = loops[0], loops[1]
    rng = np.random.default_rng(rank)
    x = rng.integers(-9, 9, a.n).astype(np.int64)
    flags = rng.random(a.n) < 0.01
    out = np.empty_like(x)
    gx, gf = np.concatenate(comm.allgather(x)), np.concatenate(comm.allgather(flags))
    starts = np.maximum.accumulate(np.where(gf, np.arange(gf.size), 0))
    cs = np.cumsum(gx)
    ref = (cs - np.where(starts > 0, cs[starts - 1], 0))[rank * a.n:(rank + 1) * a.n]

    seg_op = MPI.Op.Create(_seg_op, commute=False)
    pair, pair_before = np.zeros(2, np.int64), np.zeros(2, np.int64)

    def own():
        pair[0], pair[1] = seg_carry(x, flags)
        comm.Exscan(pair, pair_before, op=seg_op)
        seg_scan(x, flags, out, pair_before[1], rank > 0)

    rec = np.zeros(RECORD_BYTES, np.uint8)
    recs = np.zeros((size, RECORD_BYTES), np.uint8)
    st = rec[:24].view(np.int64)
    mine_value, mine_flag = rec[24:32].view(np.int64), rec[32:33].view(np.bool_)
    values, flags_before = recs[:, 24:32].view(np.int64).reshape(size), recs[:, 32].view(np.bool_)
    fingerprint = 0x5EED
    agreed = np.array([0, fingerprint], np.int64).tobytes() * size

    def protocol_with(busy_s):
        def run():
            if busy_s:
                t = time.perf_counter() + busy_s
                while time.perf_counter() < t:
                    pass
            mine_flag[0], mine_value[0] = seg_carry(x, flags)
            st[0], st[1], st[2] = 0, fingerprint, x.shape[0]
            comm.Allgather(rec, recs)
            if recs[:, :16].tobytes() != agreed:
                raise RuntimeError("a rank failed or differs")
            if busy_s:
                t = time.perf_counter() + busy_s
                while time.perf_counter() < t:
                    pass
            if rank:
                v, _ = fold(values, flags_before, rank)
                seg_scan(x, flags, out, v, True)
            else:
                seg_scan(x, flags, out, 0, False)
        return run

    def call():
        distscan.cumsum(x, segments=flags, out=out, comm=comm)

    runs = {"own": own, "protocol": protocol_with(0.0), "protocol+busy": protocol_with(a.busy * 1e-6),
            "distscan": call}
    times = checked_per_call(comm, runs, out, ref, a.calls, a.rounds)
    if rank == 0:
        med = print_per_call(times, "own", f"{size} ranks, {MPI.Get_library_version().splitlines()[0].strip()}, "
                             f"{a.n} int64 a rank, 1 % flags, busy {a.busy} µs twice; µs per call, median of "
                             f"{a.rounds} rounds of {a.calls} (min):")
        print(f"  distscan over the protocol: {med['distscan'] - med['protocol']:.2f} µs; busy's cost: "
              f"{med['protocol+busy'] - med['protocol']:.2f} µs for {2 * a.busy:.1f} µs of local work")

if __name__ == "__main__":
    main()
