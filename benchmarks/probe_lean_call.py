#!/usr/bin/env python3
"""How close could a small integer ``cumsum`` get to the bare pipeline while keeping the agreement?

    mpiexec -n K python benchmarks/probe_lean_call.py [--n 1000] [--calls 3000] [--rounds 7]

Question (issue 30's exchange target: a 1000-element call ≤ 1.3× the bare ``np.cumsum`` +
``MPI_Exscan`` + add): of distscan's time over the bare pipeline, how much is the exchange's
protocol (a 64-byte record per rank gathered, so that every rank learns every failure and
argument mismatch), and how much is the Python layers around it?  Per call, µs, median of
``--rounds`` rounds of ``--calls`` back-to-back calls with ``out=``, int64:

- ``bare``: ``np.cumsum(x, out=out)``, ``Exscan`` of the last element, the offset added (rank > 0);
- ``protocol``: what distscan's lean integer call does, inlined in one function: the checks on
  ``x`` and ``out`` (``backends.cpu.lean_arrays``'s), the scan into ``out``, the 64-byte record
  (flags, fingerprint, rows, carry), ``Allgather``, the agreed-bytes comparison, the fold of the
  carries before this rank (one ``accumulate``) and the add;
- ``protocol 32 B``: the same with a 32-byte record (the three status words and an 8-byte carry,
  nothing spare) and the carries folded as Python ints (as ``dist.lean._integer_fold``): what a
  smaller record would save at this rank count (at 32 ranks under MPICH a 16-byte ``Allgather``
  was 1.1 µs cheaper than the 64-byte one, 2026-11-26);
- ``distscan``: ``distscan.cumsum(x, comm=comm, out=out)``.

``protocol`` is a floor for any distscan path that keeps the one-collective agreement: what a
fused path per call kind could reach, against what the layered call costs now.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from mpi4py import MPI

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import distscan  # noqa: E402
from harness import bare_cumsum, checked_per_call, print_per_call  # noqa: E402

RECORD_BYTES = 64


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--calls", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args()
    comm = MPI.COMM_WORLD
    rank, size = comm.rank, comm.size
    x = np.random.default_rng(rank).integers(-100, 100, a.n).astype(np.int64)
    out = np.empty_like(x)
    ref = np.cumsum(np.concatenate(comm.allgather(x)))[rank * a.n:(rank + 1) * a.n]

    bare = bare_cumsum(comm, x, out)

    fingerprint = 0x5EED
    agreed = np.array([0, fingerprint], np.int64).tobytes() * size
    accumulate = np.add.accumulate

    def protocol_of(record_bytes: int, fold):
        """The lean call inlined over records of ``record_bytes`` (three status words, then the
        carry), the carries before this rank folded by ``fold``."""
        rec = np.zeros(record_bytes, np.uint8)
        recs = np.zeros((size, record_bytes), np.uint8)
        st, mine = rec[:24].view(np.int64), rec[24:32].view(np.int64)
        before = recs[:, 24:32].view(np.int64).reshape(size)[:rank]
        heads = recs[:, :16]

        def protocol():
            if type(x) is not np.ndarray or x.ndim != 1 or not x.flags.c_contiguous or x.dtype != out.dtype:
                raise TypeError
            f = out.flags
            if not (f.c_contiguous and f.writeable) or np.may_share_memory(x, out):
                raise TypeError
            accumulate(x, out=out)
            st[0], st[1], st[2] = 0, fingerprint, x.shape[0]
            mine[0] = out[-1]
            comm.Allgather(rec, recs)
            if heads.tobytes() != agreed:
                raise RuntimeError("a rank failed or differs")
            if rank:
                np.add(out, fold(before), out=out)
        return protocol

    protocol = protocol_of(RECORD_BYTES, lambda before: accumulate(before)[-1])
    # (as dist.lean._integer_fold, without its wrap: the benchmark's sums are small)
    protocol32 = protocol_of(32, lambda before: np.int64(sum(before.tolist())))

    def call():
        distscan.cumsum(x, comm=comm, out=out)

    runs = {"bare": bare, "protocol": protocol, "protocol 32 B": protocol32, "distscan": call}
    times = checked_per_call(comm, runs, out, ref, a.calls, a.rounds)
    if rank == 0:
        med = print_per_call(times, "bare", f"{size} ranks, {MPI.Get_library_version().splitlines()[0].strip()}, "
                             f"{a.n} int64 a rank, µs per call, median of {a.rounds} rounds of {a.calls} (min):")
        print(f"  distscan over the protocol: {med['distscan'] - med['protocol']:.2f} µs; "
              f"the protocol over bare: {med['protocol'] - med['bare']:.2f} µs")

if __name__ == "__main__":
    main()
