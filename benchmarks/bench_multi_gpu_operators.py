"""Issue 30's scans spread over several GPUs against their bytes' 3-pass floor.

    mpirun -n 2 python3 benchmarks/bench_multi_gpu_operators.py OUT.json [--log2n 28] [--reps 9]

Question: does a reverse, segmented, recurrence (an array a; a scalar a: an exponential moving
average), logcumsumexp, NaN-aware or compensated scan
over k GPUs (one rank each, the array split in equal parts) keep the plain sum's share of its
floor?  Each rank scans 2^log2n items of its own on its GPU through ``distscan`` (CuPy arrays,
``out=``, the default strategy); only carries travel between ranks.

Floor: a distributed scan must read its inputs twice (the reduction that gives the rank's
total, then the scan) and write its output once: 3 passes, (2 * input bytes + output bytes)
per item, at the same run's device-to-device copy bandwidth of each GPU (read + write counted,
as ``bench_multi_gpu.py``'s ``copy``).  Time: the wall time of one call, the maximum over the
ranks (barrier before, device synchronised after), median of --reps, the scans taken in turn in a
new random order each repetition (``bench_multi_gpu._timed_interleaved``).  Each scan is checked
first at 2^16 items per rank against NumPy (or a float64 loop) on the gathered array.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_multi_gpu import REPO, _copy_gbs, _timed_interleaved  # noqa: E402

sys.path.insert(0, str(REPO))


def _cases(cp, n, rank):
    """{name: (input bytes, output bytes, call, inputs, check(global inputs) -> reference[, output])}: each
    call scans this rank's part; inputs per rank from a seed of its own."""
    import distscan

    rs = cp.random.RandomState(100 + rank)
    x = rs.standard_normal(n, dtype=cp.float32)
    xnan = x.copy()
    xnan[rs.random_sample(n) < 0.01] = cp.nan
    flags = rs.random_sample(n) < 1e-3
    no_flags = cp.zeros(n, bool)  # one segment over every part: the carry's search finds no flag
    ints = rs.randint(-1000, 1000, n).astype(cp.int64)
    a = rs.uniform(0.5, 1.0, n).astype(cp.float32)
    y = cp.empty_like(x)
    yi = cp.empty_like(ints)
    return {
        "cumsum f32": (4, 4, lambda c, **k: distscan.cumsum(x, out=y, comm=c, **k), (x,),
                       lambda g: np.cumsum(g[0].astype(np.float64))),
        "reverse cumsum f32": (4, 4, lambda c, **k: distscan.cumsum(x, reverse=True, out=y, comm=c, **k), (x,),
                               lambda g: np.cumsum(g[0][::-1].astype(np.float64))[::-1]),
        "segmented sum f32": (5, 4, lambda c, **k: distscan.cumsum(x, segments=flags, out=y, comm=c, **k), (x, flags),
                              lambda g: _segmented(g[0].astype(np.float64), g[1])),
        "segmented sum i64": (9, 8, lambda c, **k: distscan.cumsum(ints, segments=flags, out=yi, comm=c, **k),
                              (ints, flags), lambda g: _segmented(g[0].astype(np.float64), g[1]), yi),
        "reverse segmented f32": (5, 4, lambda c, **k: distscan.cumsum(x, segments=flags, reverse=True, out=y, comm=c,
                                                                       **k),
                                  (x, flags), lambda g: _segmented_reverse(g[0].astype(np.float64), g[1])),
        "segmented f32, 1 seg": (5, 4, lambda c, **k: distscan.cumsum(x, segments=no_flags, out=y, comm=c, **k),
                                 (x, no_flags), lambda g: _segmented(g[0].astype(np.float64), g[1])),
        "recurrence f32": (8, 4, lambda c, **k: distscan.linear_recurrence(a, x, out=y, comm=c, **k), (a, x),
                           lambda g: _recurrence(g[0], g[1])),
        # one coefficient for every item (an exponential moving average): b and y alone (coef_one)
        "EMA f32 (scalar a)": (4, 4, lambda c, **k: distscan.linear_recurrence(0.75, x, out=y, comm=c, **k), (x,),
                               lambda g: _recurrence(np.full(len(g[0]), 0.75), g[0])),
        "logcumsumexp f32": (4, 4, lambda c, **k: distscan.scan(x, np.logaddexp, out=y, comm=c, **k), (x,),
                             lambda g: np.logaddexp.accumulate(g[0].astype(np.float64))),
        "nancumsum f32": (4, 4, lambda c, **k: distscan.nancumsum(xnan, out=y, comm=c, **k), (xnan,),
                          lambda g: np.nancumsum(g[0].astype(np.float64))),
        "compensated f32": (4, 4, lambda c, **k: distscan.cumsum(x, compensated=True, out=y, comm=c, **k), (x,),
                            lambda g: np.cumsum(g[0].astype(np.float64))),
    }, y


def _segmented(x, flags):
    out, acc = np.empty_like(x), 0.0
    for i in range(len(x)):
        acc = x[i] if flags[i] else acc + x[i]
        out[i] = acc
    return out


def _segmented_reverse(x, flags):
    """Each run (a flag marks its first element) scanned right to left."""
    out, acc = np.empty_like(x), 0.0
    for i in range(len(x) - 1, -1, -1):
        acc = x[i] if i == len(x) - 1 or flags[i + 1] else acc + x[i]
        out[i] = acc
    return out


def _recurrence(a, b):
    out, acc = np.empty(len(a)), 0.0
    a, b = a.astype(np.float64), b.astype(np.float64)
    for i in range(len(a)):
        acc = a[i] * acc + b[i]
        out[i] = acc
    return out


def main():
    from mpi4py import MPI
    import cupy as cp

    from distscan.gpus import bind_gpu

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json_out")
    ap.add_argument("--log2n", type=int, default=28)
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--phases", action="store_true",
                    help="also each call's phases (timings=, max over ranks) and each rank's part scanned alone")
    a = ap.parse_args()
    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    bind_gpu(world)

    # the check: 2^16 items per rank, the gathered result against NumPy on the gathered inputs
    small, y = _cases(cp, 1 << 16, rank)
    checks = {}
    for name, (_, _, call, inputs, ref, *result) in small.items():  # result: an output other than y
        call(world)
        parts = world.gather(([cp.asnumpy(v) for v in inputs], cp.asnumpy(result[0] if result else y)), root=0)
        if rank == 0:
            got = np.concatenate([p[1] for p in parts]).astype(np.float64)
            want = ref([np.concatenate([p[0][k] for p in parts]) for k in range(len(inputs))])
            bad = float(np.max(np.abs(got - want) / (1 + np.abs(want))))
            checks[name] = bad
            assert bad <= 1e-4, f"{name}: off by {bad:.1e} on {size} ranks"
    n = 1 << a.log2n
    cases, _ = _cases(cp, n, rank)
    src, dst = cp.empty(n, cp.float32), cp.empty(n, cp.float32)
    copy = world.allreduce(_copy_gbs(cp, src, dst, 9), op=MPI.MIN)  # read + write GB/s per GPU
    del src, dst
    timed = _timed_interleaved({k: (lambda c=v[2]: c(world)) for k, v in cases.items()}, world, cp, a.reps)
    alone, phases = {}, {}
    if a.phases:
        # Where the time goes: the part scanned alone (one rank's communicator: the 2-pass
        # kernel and the call's host work, no exchange), and the distributed call's phases
        # (timings= synchronises the device at each phase), medians, max over ranks.
        solo = _timed_interleaved({k: (lambda c=v[2]: c(MPI.COMM_SELF)) for k, v in cases.items()}, world, cp,
                                  a.reps)
        alone = {k: solo[k][0] for k in cases}
        for name, (_, _, call, *_rest) in cases.items():
            runs = []
            for _ in range(5):
                t = {}
                world.Barrier()
                call(world, timings=t)
                cp.cuda.Device().synchronize()
                runs.append(t)
            keys = sorted({k for r in runs for k in r})
            mine = {k: statistics.median([r.get(k, 0.0) for r in runs]) for k in keys}
            every = world.allgather(mine)
            phases[name] = {k: max(p.get(k, 0.0) for p in every) for k in keys}
    rows = []
    for name, (b_in, b_out, *_rest) in cases.items():
        t = timed[name][0]
        floor = (2 * b_in + b_out) * n / (copy * 1e9)
        rows.append({"scan": name, "bytes_in": b_in, "bytes_out": b_out, "seconds": t, "floor_seconds": floor,
                     "of_floor": floor / t, "check": checks.get(name), "alone_seconds": alone.get(name),
                     "phases_seconds": phases.get(name)})
    if rank == 0:
        gpu = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
        Path(a.json_out).write_text(json.dumps({"gpu": gpu, "ranks": size, "log2n": a.log2n, "copy_gbs": copy,
                                                "rows": rows}, indent=1))
        print(f"{size} x {gpu}, 2^{a.log2n} items per GPU, copy {copy:.0f} GB/s per GPU; 3-pass floor = "
              f"(2 x input + output bytes) / copy; median of {a.reps}")
        print(f"{'scan':<20}{'ms':>9}{'floor ms':>10}{'of floor':>10}  check")
        for r in rows:
            print(f"{r['scan']:<20}{r['seconds'] * 1e3:9.2f}{r['floor_seconds'] * 1e3:10.2f}{r['of_floor']:10.3f}"
                  f"  {r['check']:.1e}")
        if a.phases:
            print("the part alone (one rank's communicator) and the distributed call's phases, ms, max over ranks")
            for r in rows:
                ph = ", ".join(f"{k} {v * 1e3:.3f}" for k, v in r["phases_seconds"].items())
                print(f"{r['scan']:<20} alone {r['alone_seconds'] * 1e3:7.3f} | {ph}")


if __name__ == "__main__":
    main()
