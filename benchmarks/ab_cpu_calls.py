"""Issue 30's CPU calls across ranks, for A/B runs of API changes (one process group per tree).

    PYTHONPATH=TREE mpiexec -n 3 python benchmarks/ab_cpu_calls.py LABEL [--n 1000] [--reps 100]
        [--strategy reduce_then_scan] [--calls "segmented sum f64,cumsum f64"]
    PYTHONPATH=TREE python benchmarks/ab_cpu_calls.py LABEL      (one rank: ScanPlan.one_rank_state's calls)

Question: did a change to the host side (the carries between ranks, the plans) make the CPU
backend's distributed calls slower?  Each rank holds ``n`` float64 items (segment flags one in
64, drawn alike for every tree); every call runs with ``out=``: ``harness.ranks_interleaved``, loops
of --reps calls each in turn, five rounds, the slowest rank's time, the median round.  Rank 0
prints one line per call: LABEL, call, µs.
Results are checked first against NumPy on the gathered array (within 1e-9 relative: products of millions of items).
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np
from mpi4py import MPI

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import ranks_interleaved  # noqa: E402

import distscan  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("label")
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--strategy", default="auto", help="every call's strategy= (reduce_then_scan: each part's carry first)")
    ap.add_argument("--calls", default=None, help="comma-separated names of the calls to time (default: all)")
    a = ap.parse_args()
    kw = {"strategy": a.strategy}
    comm = MPI.COMM_WORLD
    rs = np.random.default_rng(1000 + comm.rank)
    x = rs.uniform(0.999, 1.001, a.n)  # products of millions stay in range
    flags = rs.random(a.n) < 1 / 64
    coef = rs.uniform(0.5, 1.0, a.n)  # the recurrence's coefficients
    y = np.empty_like(x)
    calls = {
        "segmented prod f64": lambda: distscan.cumprod(x, segments=flags, out=y, comm=comm, **kw),
        "segmented prod f64 rev": lambda: distscan.cumprod(x, segments=flags, reverse=True, out=y, comm=comm, **kw),
        "segmented sum f64": lambda: distscan.cumsum(x, segments=flags, out=y, comm=comm, **kw),
        "segmented sum f64 rev": lambda: distscan.cumsum(x, segments=flags, reverse=True, out=y, comm=comm, **kw),
        "prod f64": lambda: distscan.cumprod(x, out=y, comm=comm, **kw),
        "cumsum f64": lambda: distscan.cumsum(x, out=y, comm=comm, **kw),
        "nancumsum f64": lambda: distscan.nancumsum(x, out=y, comm=comm, **kw),
        "cumsum f64 rev": lambda: distscan.cumsum(x, reverse=True, out=y, comm=comm, **kw),
        "recurrence f64": lambda: distscan.linear_recurrence(coef, x, out=y, comm=comm, **kw),
        "compensated f64": lambda: distscan.cumsum(x, compensated=True, out=y, comm=comm, **kw),
    }
    if a.calls:
        calls = {name: calls[name] for name in a.calls.split(",")}
    xs, fs = comm.allgather(x), comm.allgather(flags)
    whole, starts, coefs = np.concatenate(xs), np.concatenate(fs), np.concatenate(comm.allgather(coef))
    recurrence = np.empty_like(whole)
    prev = 0.0
    if "recurrence f64" in calls:
        for i, (ai, bi) in enumerate(zip(coefs, whole)):  # y[i] = a[i] y[i-1] + b[i], sequentially
            prev = recurrence[i] = ai * prev + bi
    lo = sum(len(p) for p in xs[:comm.rank])
    for name, call in calls.items():  # check first
        call()
        ufunc = np.multiply if "prod" in name else np.add
        data, st = (whole[::-1], np.roll(starts, -1)[::-1]) if "rev" in name else (whole, starts)
        if "rev" in name and "segmented" in name:
            st[0] = True
        if name == "recurrence f64":
            assert np.allclose(y, recurrence[lo:lo + a.n], rtol=1e-9, atol=0), name
            continue
        if "segmented" in name:
            want = np.empty_like(data)
            for seg in np.split(np.arange(len(data)), np.flatnonzero(st)[1:] if st[0] else np.flatnonzero(st)):
                want[seg] = ufunc.accumulate(data[seg])
        else:
            want = ufunc.accumulate(data)
        if "rev" in name:
            want = want[::-1]
        assert np.allclose(y, want[lo:lo + a.n], rtol=1e-9, atol=0), name
    rounds = ranks_interleaved(comm, calls, a.reps, 5, warm=5)  # the slowest rank's µs per call, by round
    worst = {name: float(np.median(t)) for name, t in rounds.items()}
    if comm.rank == 0:
        for name, t in worst.items():
            print(f"{a.label:<10} {name:<24} {t:8.1f} us  ({comm.size} ranks, n={a.n})", flush=True)


if __name__ == "__main__":
    main()
