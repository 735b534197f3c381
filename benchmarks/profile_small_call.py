"""Where a small distributed call's time goes, in situ: timers around the phases of real calls.

    mpiexec -n 2 python benchmarks/profile_small_call.py [--n 1000] [--calls 2000] [--rounds 7] [--json OUT]

Wrappers (``time.perf_counter``) around ``Part.__init__``, ``Part.plan``, ``ScanPlan.run``,
``Carries.of_part``, ``Exchange.__call__``, the CPU backend's ``scan`` and ``scan_lean``, the
state loops' ``carry`` and ``scan`` where a plan prepares them (``cpu_states.Loops``), the
agreement after the finish (``collectively``), and a communicator whose ``Allgather`` and
``Allreduce`` are timed, inside loops of ``--calls`` back-to-back real calls
(``distscan.cumsum``, a segmented sum, ``distscan.linear_recurrence``, each with ``out=``, as
``bench_exchange.py`` calls them).  The wrappers cost a little themselves (about 0.2 us each):
the whole call here is a little slower than the same call unwrapped.

Printed: µs per call for rank 0 (the first rank: it computes the local carry, and its scan has
no seed) and, in parentheses, for the last rank (no carry; its scan is seeded), in the round (of
``--rounds``) with the least whole-call time.  "MPI" includes waiting for the other ranks.
Derived: the exchange's Python (the exchange less its MPI), the agreement's Python, the rest of
``plan.run`` (its own bookkeeping, and whatever local work is not wrapped: the lean integer
call's scan and add) and of the API (the call less ``plan.run``, ``Part`` and the plan lookup:
``_scan``, the kind lookup, ...).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from pathlib import Path

import numpy as np
from mpi4py import MPI

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import distscan  # noqa: E402
from distscan import _call, _carry  # noqa: E402
from distscan.backends import cpu, cpu_states  # noqa: E402
from distscan.dist import exchange, plan  # noqa: E402

ACC: dict = {}
SCAN = "seeded scan (cpu.scan or Loops.scan)"


def _add(name, dt):
    ACC[name] = ACC.get(name, 0.0) + dt


def _timed(owner, attr, name):
    fn = getattr(owner, attr)

    def wrapper(*args, **kwargs):
        t = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            _add(name, time.perf_counter() - t)

    setattr(owner, attr, wrapper)


class TimedComm(MPI.Intracomm):
    """COMM_WORLD's handle, with its Allgather and Allreduce timed."""

    def Allgather(self, *args, **kwargs):
        t = time.perf_counter()
        super().Allgather(*args, **kwargs)
        _add("MPI Allgather", time.perf_counter() - t)

    def Allreduce(self, *args, **kwargs):
        t = time.perf_counter()
        super().Allreduce(*args, **kwargs)
        _add("MPI Allreduce (agreement)", time.perf_counter() - t)


def _instrument():
    _timed(_call.Part, "__init__", "Part(...)")
    _timed(_call.Part, "plan", "part.plan (lookup)")
    _timed(plan.ScanPlan, "run", "plan.run (incl.)")
    _timed(_carry.Carries, "of_part", "local carry")
    _timed(exchange.Exchange, "__call__", "exchange (incl. MPI)")
    _timed(cpu, "scan", SCAN)
    _timed(cpu, "scan_lean", "seeded scan (scan_lean)")
    if hasattr(cpu_states, "Loops"):  # the state loops a plan prepares (after the changes of issue 30)
        _timed(cpu_states.Loops, "carry", "local carry")
        _timed(cpu_states.Loops, "scan", SCAN)
    inner = plan.collectively

    @contextlib.contextmanager
    def timed_collectively(comm):
        with inner(comm):
            yield
            t_body = time.perf_counter()
        _add("agreement (incl. MPI)", time.perf_counter() - t_body)
        
    plan.collectively = timed_collectively


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--json")
    a = ap.parse_args()
    world = MPI.COMM_WORLD
    comm = TimedComm(world)
    rank = comm.Get_rank()
    rng = np.random.default_rng(rank)
    x = rng.integers(-9, 9, a.n).astype(np.int64)
    xf = rng.standard_normal(a.n)
    coef = rng.uniform(0.5, 1.0, a.n)
    flags = rng.random(a.n) < 0.01
    y, yf = np.empty_like(x), np.empty_like(xf)
    calls = {
        "sum": lambda: distscan.cumsum(x, out=y, comm=comm),
        "segmented sum": lambda: distscan.cumsum(x, segments=flags, out=y, comm=comm),
        "recurrence": lambda: distscan.linear_recurrence(coef, xf, out=yf, comm=comm),
    }
    for fn in calls.values():  # compile, warm every cache
        for _ in range(20):
            fn()
    _instrument()
    report = {}
    for name, fn in calls.items():
        best = None
        for _ in range(a.rounds):
            ACC.clear()
            comm.Barrier()
            t0 = time.perf_counter()
            for _ in range(a.calls):
                fn()
            ACC["whole call"] = time.perf_counter() - t0
            per = {k: v / a.calls * 1e6 for k, v in ACC.items()}
            if best is None or per["whole call"] < best["whole call"]:
                best = per
        g = best.get
        derived = {
            "exchange Python": g("exchange (incl. MPI)", 0) - g("MPI Allgather", 0),
            "agreement Python": g("agreement (incl. MPI)", 0) - g("MPI Allreduce (agreement)", 0),
            "plan.run rest": g("plan.run (incl.)", 0) - g("local carry", 0) - g("exchange (incl. MPI)", 0)
            - g("seeded scan (scan_lean)", 0) - g(SCAN, 0) - g("agreement (incl. MPI)", 0),
            "API rest": g("whole call", 0) - g("plan.run (incl.)", 0) - g("Part(...)", 0)
            - g("part.plan (lookup)", 0),
        }
        report[name] = {"phases": best, "derived": derived}
    reports = comm.gather(report)
    if rank == 0:
        print(f"{comm.Get_size()} ranks, {a.n} elements per rank, rank 0, µs per call, the round with the least "
              f"whole-call time of {a.rounds} x {a.calls} calls")
        for name, r in report.items():
            print(f"{name}:")
            last = reports[-1][name]["phases"]
            for k, v in sorted(r["phases"].items(), key=lambda kv: kv[0] != "whole call"):
                print(f"  {k:62s} {v:8.2f}   (last rank {last.get(k, 0):8.2f})")
            print("  => " + ", ".join(f"{k} {v:.2f}" for k, v in r["derived"].items()))
        if a.json:
            Path(a.json).write_text(json.dumps(reports, indent=1))


if __name__ == "__main__":
    main()
