"""CPU benchmark: distscan's CPU backend against numpy.cumsum, 1 rank and several, in one run.

    python benchmarks/bench_cpu.py RESULTS.json [--n 67108864] [--ranks 1 2] [--repeat 7]

The driver starts one ``mpiexec -n K`` worker per rank count (itself with ``--worker``),
collects their JSON and prints a table last.  Each worker splits the N global elements
into balanced blocks, times ``distscan.cumsum(local, comm=..., out=...)`` between two
barriers (wall time of the slowest rank) and, on one rank, ``numpy.cumsum(x, out=...)``
of the whole array.  Outputs are preallocated for both so that page faults of a fresh
output are not timed.  Every result is checked exactly (integers) or against float64
(floats) before timing.

GB/s counts the bytes a scan must move: N·(input itemsize + result itemsize), which is
2·N·itemsize when the result has the input's dtype (int32 sums give int64: 12 bytes/element).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time

import numpy as np

DTYPES = ["int32", "int64", "float32", "float64"]


def _data(rng, n, dtype):
    if np.dtype(dtype).kind == "i":
        return rng.integers(-1000, 1000, n).astype(dtype)
    return rng.standard_normal(n).astype(dtype)


def _median_time(fn, comm, repeat):
    times = []
    for _ in range(repeat):
        comm.Barrier()
        t0 = time.perf_counter()
        fn()
        elapsed = time.perf_counter() - t0
        times.append(comm.allreduce(elapsed, op=_max()))
    return float(np.median(times))


def _max():
    from mpi4py import MPI
    return MPI.MAX


def worker(n, repeat, strategy):
    from mpi4py import MPI

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import distscan
    from distscan.io import block_split

    comm = MPI.COMM_WORLD
    start, stop = block_split(n, comm.size, comm.rank)
    rows = []
    for dtype in DTYPES:
        rng = np.random.default_rng(1000 + comm.rank)
        local = _data(rng, stop - start, dtype)
        out_dtype = np.cumsum(local[:1]).dtype
        out = np.empty(stop - start, out_dtype)

        # Check once (fresh data, poisoned output) before timing.
        out.fill(-7 if out_dtype.kind == "i" else np.nan)
        distscan.cumsum(local, comm=comm, out=out, strategy=strategy)
        everything = comm.gather(local, root=0)
        results = comm.gather(out, root=0)
        if comm.rank == 0:
            g = np.concatenate(everything)
            got = np.concatenate(results)
            if out_dtype.kind == "i":
                assert np.array_equal(got, np.cumsum(g)), f"{dtype}: wrong result"
            else:
                ref = np.cumsum(g.astype(np.float64))
                scale = np.cumsum(np.abs(g.astype(np.float64)))
                err = np.max(np.abs(got - ref) / np.maximum(scale, 1))
                assert err < (1e-5 if dtype == "float32" else 1e-12), f"{dtype}: error {err}"
        del everything, results

        run_distscan = lambda: distscan.cumsum(local, comm=comm, out=out, strategy=strategy)  # noqa: E731
        t_numpy = None
        if comm.size == 1:
            # Alternate the two, call by call, so that both see the same machine state.
            pairs = [(_median_time(run_distscan, comm, 1), _median_time(lambda: np.cumsum(local, out=out), comm, 1))
                     for _ in range(repeat)]
            t_distscan, t_numpy = (float(np.median(col)) for col in zip(*pairs))
        else:
            t_distscan = _median_time(run_distscan, comm, repeat)
        # The memory system's ceiling for these ranks: a plain copy of the same data.
        copy_dst = np.empty_like(local)
        t_copy = _median_time(lambda: np.copyto(copy_dst, local), comm, repeat)
        del copy_dst
        nbytes = n * (np.dtype(dtype).itemsize + out_dtype.itemsize)
        rows.append({"dtype": dtype, "n": n, "ranks": comm.size, "strategy": strategy,
                     "bytes": nbytes, "t_distscan_s": t_distscan, "t_numpy_s": t_numpy,
                     "gbps_distscan": nbytes / t_distscan / 1e9,
                     "gbps_numpy": nbytes / t_numpy / 1e9 if t_numpy else None,
                     "gbps_copy": 2 * n * np.dtype(dtype).itemsize / t_copy / 1e9})
    if comm.rank == 0:
        print(json.dumps(rows))


def _mpiexec():
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return here if os.path.exists(here) else shutil.which("mpiexec")


def driver(args):
    runs = {}
    for k in args.ranks:
        cmd = [_mpiexec(), "-n", str(k), sys.executable, os.path.abspath(__file__), "--worker",
               "--n", str(args.n), "--repeat", str(args.repeat), "--strategy", args.strategy]
        done = subprocess.run(cmd, check=True, capture_output=True, text=True)
        runs[k] = json.loads(done.stdout.strip().splitlines()[-1])

    one = {r["dtype"]: r for r in runs[args.ranks[0]]}
    table = []
    for k in args.ranks:
        for r in runs[k]:
            base = one[r["dtype"]]
            r["vs_numpy"] = base["t_numpy_s"] / r["t_distscan_s"] if base["t_numpy_s"] else None
            r["vs_one_rank"] = base["t_distscan_s"] / r["t_distscan_s"]
            table.append(r)
    meta = {"date": time.strftime("%Y-%m-%d"), "machine": platform.node(), "cpu": platform.processor(),
            "cores": os.cpu_count(), "numpy": np.__version__, "n": args.n, "repeat": args.repeat}
    with open(args.json, "w") as f:
        json.dump({"meta": meta, "rows": table}, f, indent=1)

    print(f"\nCPU scan, N = {args.n:,} elements, median of {args.repeat}, {os.cpu_count()} cores, "
          f"numpy {np.__version__}, strategy {args.strategy}")
    print("| dtype   | ranks | copy GB/s | numpy.cumsum GB/s | distscan GB/s | distscan / numpy | vs 1 rank |")
    print("|---------|-------|-----------|-------------------|---------------|------------------|-----------|")
    for r in table:
        np_col = f"{r['gbps_numpy']:.2f}" if r["gbps_numpy"] else "—"
        vs_np = f"{r['vs_numpy']:.2f}" if r["vs_numpy"] else "—"
        print(f"| {r['dtype']:<7} | {r['ranks']:>5} | {r['gbps_copy']:>9.2f} | {np_col:>17} | {r['gbps_distscan']:>13.2f} | "
              f"{vs_np:>16} | {r['vs_one_rank']:>9.2f} |")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("json", nargs="?", default="bench_cpu.json", help="where to write the full figures")
    p.add_argument("--n", type=int, default=1 << 26)
    p.add_argument("--ranks", type=int, nargs="+", default=[1, 2])
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--strategy", default="auto")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        worker(args.n, args.repeat, args.strategy)
    else:
        driver(args)


if __name__ == "__main__":
    main()
