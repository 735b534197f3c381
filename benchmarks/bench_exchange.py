"""The exchange between ranks at small and large rank counts (CPU backend), against the bare
pipeline ``np.cumsum`` + ``MPI_Exscan`` + add.

    mpiexec -n K python benchmarks/bench_exchange.py OUT.json [--sizes 1000,1048576] [--calls 300] [--rounds 7]
                                                             [--flag-density 0.01]

Question: what does distscan's distributed call cost over the bare pipeline a user would write,
for ``sum`` and for a segmented sum and a linear recurrence (state carries), with the gather of
records (the default below DISTSCAN_DOUBLING_RANKS ranks) and with recursive doubling (run with
``DISTSCAN_DOUBLING_RANKS=1`` to force it)?  Each implementation runs loops of ``--calls``
back-to-back calls on every rank (fresh data, the same on every call), timed from a barrier to
the last rank's end; the implementations in a new random order every round, median (and least)
of ``--rounds`` rounds; per-call microseconds.

Baselines, each what an MPI code writes by hand, checked against distscan before timing:

``bare``            ``np.cumsum(x, out=y)``; ``comm.Exscan(total, offset)``; ``y += offset``
                    (rank 0: none), int64.  The baseline of issue 30's target.
``bare float``      the same in float64, against distscan's float sum (which the integer call
                    does not take: ``ScanPlan.run``, or the fused reduce-then-scan call where a
                    tree has it, the sixty-fourth session's branch ``s64-fused-seeded``).
``bare segmented``  a numba loop for the part's carry (any flag, the sum since the last flag),
                    ``comm.Exscan`` of that pair with a non-commutative ``MPI.Op.Create``
                    operation, a numba loop for the seeded segmented scan.
``bare recurrence`` the same with the part's affine map ``(prod a, y_end)``: numba carry,
                    ``Exscan`` of the pair, numba seeded recurrence.

Columns ``X/bare`` divide by the ``bare`` sum pipeline; ``X/own`` by the baseline of the same
scan.  ``other load``: the CPU time that processes outside this job used during the timed
loops, as a share of all cores (the 2-core VM is shared: a run with other load is suspect).

The table is printed by rank 0; OUT.json gets every figure (rank count, method, sizes, the
MPICH settings ``MPIR_CVAR_*`` of the run).
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


def _loops():
    """The baselines' local loops (numba, cached on disk: compiled once, by rank 0)."""
    import numba

    @numba.njit(cache=True)
    def seg_carry(x, f):
        v, flag = 0, False
        for i in range(x.shape[0]):
            if f[i]:
                v, flag = x[i], True
            else:
                v += x[i]
        return flag, v

    @numba.njit(cache=True)
    def seg_scan(x, f, y, seed, has_seed):
        acc, fresh = seed, not has_seed
        for i in range(x.shape[0]):
            if f[i] or fresh:
                acc, fresh = x[i], False
            else:
                acc += x[i]
            y[i] = acc

    @numba.njit(cache=True)
    def rec_carry(a, b):
        aa, bb = 1.0, 0.0
        for i in range(b.shape[0]):
            bb = a[i] * bb + b[i]
            aa = a[i] * aa
        return aa, bb

    @numba.njit(cache=True)
    def rec_scan(a, b, y, seed):
        v = seed
        for i in range(b.shape[0]):
            v = a[i] * v + b[i]
            y[i] = v

    return seg_carry, seg_scan, rec_carry, rec_scan


def _seg_op(inbuf, inoutbuf, datatype):
    """(flag, value) of the ranks before (``inbuf``) . (flag, value) of the later ones."""
    a, b = np.frombuffer(inbuf, np.int64), np.frombuffer(inoutbuf, np.int64)
    if not b[0]:
        b[1] += a[1]
    b[0] |= a[0]


def _aff_op(inbuf, inoutbuf, datatype):
    """(A, B) of the ranks before (``inbuf``) . (A, B) of the later ones: y -> A2*(A1*y+B1)+B2."""
    a, b = np.frombuffer(inbuf, np.float64), np.frombuffer(inoutbuf, np.float64)
    b[1] += b[0] * a[1]
    b[0] *= a[0]


def _cpu_ticks() -> tuple:
    """(busy, all) jiffies of the machine, from /proc/stat (None where there is none)."""
    try:
        with open("/proc/stat") as f:
            v = [int(t) for t in f.readline().split()[1:]]
    except OSError:
        return None
    idle = v[3] + v[4]
    return sum(v[:8]) - idle, sum(v[:8])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json_out")
    ap.add_argument("--sizes", default="1000,1048576")
    ap.add_argument("--calls", type=int, default=300)
    # the segment flags' share of rows: 0 (no flag: a segment longer than a part) times what a
    # search for a part's first flag costs where it finds none (the sixty-second session's
    # compiled search read every such row: benchmarks/RESULTS.md)
    ap.add_argument("--flag-density", type=float, default=0.01)
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args()
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    method = "doubling" if size >= exchange.DOUBLING_RANKS else "gather"
    if rank == 0:
        loops = _loops()
        comm.Barrier()
    else:
        comm.Barrier()
        loops = _loops()
    seg_carry, seg_scan, rec_carry, rec_scan = loops
    seg_op, aff_op = MPI.Op.Create(_seg_op, commute=False), MPI.Op.Create(_aff_op, commute=False)
    hz = os.sysconf("SC_CLK_TCK")
    rows = []
    for n in map(int, a.sizes.split(",")):
        rng = np.random.default_rng(rank)
        x = rng.integers(-9, 9, n).astype(np.int64)
        xf = rng.standard_normal(n)
        coef = rng.uniform(0.5, 1.0, n)
        flags = rng.random(n) < a.flag_density
        y, yf, ys = np.empty_like(x), np.empty_like(xf), np.empty_like(xf)
        total, offset = np.zeros(1, np.int64), np.zeros(1, np.int64)
        total_f, offset_f = np.zeros(1), np.zeros(1)
        pair, pair_before = np.zeros(2, np.int64), np.zeros(2, np.int64)
        amap, amap_before = np.zeros(2), np.zeros(2)

        def bare_pipeline(src, dst, total, offset):  # np.cumsum + Exscan + add, of src's dtype
            def bare():
                np.cumsum(src, out=dst)
                total[0] = dst[-1]
                comm.Exscan(total, offset)
                if rank:
                    dst.__iadd__(offset[0])
            return bare

        bare, bare_float = bare_pipeline(x, y, total, offset), bare_pipeline(xf, ys, total_f, offset_f)

        def bare_segmented():
            pair[0], pair[1] = seg_carry(x, flags)
            comm.Exscan(pair, pair_before, op=seg_op)
            seg_scan(x, flags, y, pair_before[1], rank > 0)

        def bare_recurrence():
            amap[0], amap[1] = rec_carry(coef, xf)
            comm.Exscan(amap, amap_before, op=aff_op)
            rec_scan(coef, xf, yf, amap_before[1] if rank else 0.0)

        impls = {
            "bare": bare,
            "sum": lambda: distscan.cumsum(x, out=y, comm=comm),
            "bare float": bare_float,
            "float sum": lambda: distscan.cumsum(xf, out=ys, comm=comm),
            "bare segmented": bare_segmented,
            "segmented sum": lambda: distscan.cumsum(x, segments=flags, out=y, comm=comm),
            "bare recurrence": bare_recurrence,
            "recurrence": lambda: distscan.linear_recurrence(coef, xf, out=yf, comm=comm),
        }
        own = {"sum": "bare", "float sum": "bare float", "segmented sum": "bare segmented",
               "recurrence": "bare recurrence"}
        # Each scan against its baseline before anything is timed.
        for name, base in own.items():
            out = {"recurrence": yf, "float sum": ys}.get(name, y)
            ref = np.empty_like(out)
            impls[base]()
            ref[...] = out
            impls[name]()
            ok = np.array_equal(out, ref) if out.dtype.kind == "i" else np.allclose(out, ref, rtol=1e-10, atol=1e-12)
            if not comm.allreduce(ok, op=MPI.LAND):
                raise SystemExit(f"{name} differs from {base} (n_local {n}, {size} ranks)")
        calls = a.calls if n <= 1 << 14 else max(10, a.calls // 30)
        for fn in impls.values():  # compile (numba), warm
            for _ in range(5):
                fn()
        times = {k: [] for k in impls}
        order = random.Random(3)  # the same order on every rank
        comm.Barrier()
        ticks0, own0, wall0 = _cpu_ticks(), sum(os.times()[:2]), time.perf_counter()
        for _ in range(a.rounds):
            for name in order.sample(list(impls), len(impls)):
                fn = impls[name]
                comm.Barrier()
                t = time.perf_counter()
                for _ in range(calls):
                    fn()
                dt = comm.allreduce(time.perf_counter() - t, op=MPI.MAX) / calls
                times[name].append(dt)
        own_cpu = comm.allreduce(sum(os.times()[:2]) - own0)
        ticks1, wall = _cpu_ticks(), time.perf_counter() - wall0
        other = None
        if ticks0 and ticks1:
            busy_s = (ticks1[0] - ticks0[0]) / hz
            other = max(0.0, busy_s - own_cpu) / (wall * (os.cpu_count() or 1))
        med = {k: statistics.median(v) for k, v in times.items()}
        low = {k: min(v) for k, v in times.items()}
        rows.append({"ranks": size, "method": method, "n_local": n, "flag_density": a.flag_density,
                     "calls": calls, "rounds": a.rounds,
                     "other_load": other,
                     **{f"{k}_us": v * 1e6 for k, v in med.items()},
                     **{f"{k}_min_us": v * 1e6 for k, v in low.items()},
                     **{f"{k}/bare": med[k] / med["bare"] for k in own},
                     **{f"{k}/own": med[k] / med[b] for k, b in own.items()}})
    seg_op.Free()
    aff_op.Free()
    if rank == 0:
        data = {"host": platform.node(), "cpus": os.cpu_count(), "mpi": MPI.Get_library_version().splitlines()[0],
                "numpy": np.__version__, "date": time.strftime("%Y-%m-%d %H:%M"),
                "doubling_ranks": exchange.DOUBLING_RANKS,
                "mpich_cvars": {k: v for k, v in os.environ.items() if k.startswith("MPIR_CVAR_")},
                "rows": rows}
        Path(a.json_out).write_text(json.dumps(data, indent=1))
        own_pairs = (("sum", "bare"), ("float sum", "bare float"), ("segmented sum", "bare segmented"),
                     ("recurrence", "bare recurrence"))
        for r in rows:
            load = "?" if r["other_load"] is None else f"{100 * r['other_load']:.0f}%"
            print(f"ranks {r['ranks']:3d} {r['method']:8s} n_local {r['n_local']:8d} flags {r['flag_density']:g} "
                  f"(other load {load})", flush=True)
            for k, b in own_pairs:
                print(f"  {k:14s} {r[k + '_us']:10.1f} us (min {r[k + '_min_us']:10.1f})  {b:16s} "
                      f"{r[b + '_us']:10.1f} us (min {r[b + '_min_us']:10.1f})  /own {r[k + '/own']:5.2f}x  "
                      f"/bare {r[k + '/bare']:6.2f}x", flush=True)


if __name__ == "__main__":
    main()
