"""Host cost of a call's parts passed by keyword against by position, on one rank.

``scan(x, "max", comm=comm)`` against ``scan(x, op="max", comm=comm)`` and ``cumsum(x, comm=comm)``
against ``cumsum(x=x, comm=comm)`` (keyword parts go through ``distscan.dist.arguments.by_keyword``):
the variants interleaved, each timed by ``timeit`` (``--number`` calls, best of ``--inner``), the
whole repeated ``--rounds`` times; prints each round's µs per call and each variant's best and median.
The clock is the process's CPU time by default (``--clock cpu``: on a shared, loaded machine wall time
counts the other processes' turns), or wall time (``--clock wall``).  ``--comm default`` drops
``comm=comm`` from every call (``cumsum(x)``, ``cumsum(x=x)``, ``scan(x, op="max")``: the calls
without ``comm=`` test their part for a communicator, ``distscan.dist.arguments``).

    python benchmarks/probe_keyword_calls.py [--n 1000] [--number 2000] [--inner 3] [--rounds 5] [--clock cpu]
                                             [--comm given]
"""

from __future__ import annotations

import argparse
import statistics
import time
import timeit

import numpy as np
from mpi4py import MPI

import distscan


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--number", type=int, default=2000)
    ap.add_argument("--inner", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--clock", choices=["cpu", "wall"], default="cpu")
    ap.add_argument("--comm", choices=["given", "default"], default="given")
    args = ap.parse_args()
    comm = MPI.COMM_WORLD
    x = np.random.default_rng(0).standard_normal(args.n)
    if args.comm == "given":
        variants = {
            'scan(x, "max", comm=comm)': lambda: distscan.scan(x, "max", comm=comm),
            'scan(x, op="max", comm=comm)': lambda: distscan.scan(x, op="max", comm=comm),
            "cumsum(x, comm=comm)": lambda: distscan.cumsum(x, comm=comm),
            "cumsum(x=x, comm=comm)": lambda: distscan.cumsum(x=x, comm=comm),
        }
    else:
        variants = {
            'scan(x, "max")': lambda: distscan.scan(x, "max"),
            'scan(x, op="max")': lambda: distscan.scan(x, op="max"),
            "cumsum(x)": lambda: distscan.cumsum(x),
            "cumsum(x=x)": lambda: distscan.cumsum(x=x),
        }
    ref = {"scan": np.maximum.accumulate(x), "cumsum": np.cumsum(x)}
    for name, fn in variants.items():  # right results, and every first call made
        np.testing.assert_allclose(fn(), ref[name.split("(")[0]], rtol=1e-12)
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    best = {name: [] for name in variants}
    for r in range(args.rounds):
        order = list(variants) if r % 2 == 0 else list(variants)[::-1]
        for name in order:
            t = min(timeit.repeat(variants[name], number=args.number, repeat=args.inner, timer=clock)) / args.number
            best[name].append(t * 1e6)
        print(f"round {r}: " + ", ".join(f"{name} {best[name][-1]:.2f}" for name in variants), flush=True)
    print(f"n={args.n}, {comm.Get_size()} rank(s), {args.clock} time, µs per call: best / median of "
          f"{args.rounds} rounds, comm= {args.comm}")
    for name, ts in best.items():
        print(f"  {name:32s} {min(ts):7.2f} / {statistics.median(ts):7.2f}")


if __name__ == "__main__":
    main()
