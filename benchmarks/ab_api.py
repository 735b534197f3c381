"""A/B of the API's cost per call against an older tree's, in one process, with CUB beside them.

Question: what did a change to the route from ``distscan.cumsum`` to its kernel cost a loop of
small calls (host-bound: 2^16 items), with and without ``out=``?  Both trees are imported in
one process (the older as ``distscan_old``), the calls timed in loops of ``--calls`` back-to-
back calls (one synchronisation at the end: wall time per call, Python included), the
implementations in a new random order every round, median of ``--rounds`` rounds.

Setup (the older tree as a package of another name, in an ignored folder):
    mkdir -p .old && git archive 63de94e distscan kernels | tar -x -C .old
    mv .old/distscan .old/distscan_old
    sed -i 's/import_module(f"distscan.backends.{name}")/import_module(f".{name}", __name__)/' \\
        .old/distscan_old/backends/__init__.py
Run:
    PYTHONPATH=$PWD python benchmarks/ab_api.py OUT.json [--old .old] [--sizes 16] [--rounds 9]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

import cupy as cp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import make_cub  # noqa: E402

import distscan  # noqa: E402

DTYPES = ["int32", "float32", "int64", "float64"]


def per_call(fn, calls):
    fn()
    cp.cuda.Device().synchronize()
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    cp.cuda.Device().synchronize()
    return (time.perf_counter() - t) / calls


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json_out")
    ap.add_argument("--old", default=".old")
    ap.add_argument("--sizes", default="16")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--calls", type=int, default=500)
    a = ap.parse_args()
    sys.path.insert(0, a.old)
    import distscan_old

    rows = []
    rnd = random.Random(7)
    for log2n in map(int, a.sizes.split(",")):
        n = 1 << log2n
        for dtype in DTYPES:
            x = cp.asarray(np.random.default_rng(log2n).integers(-9, 9, n).astype(dtype))
            y = cp.empty_like(x)
            impls = {"new out=": lambda: distscan.cumsum(x, dtype=x.dtype, out=y),
                     "new": lambda: distscan.cumsum(x, dtype=x.dtype),
                     "old out=": lambda: distscan_old.cumsum(x, dtype=x.dtype, out=y),
                     "old": lambda: distscan_old.cumsum(x, dtype=x.dtype)}
            cub, why = make_cub(x, y, n)
            if cub is not None:
                impls["cub"] = cub
            for fn in impls.values():  # compile, warm
                for _ in range(20):
                    fn()
            times = {k: [] for k in impls}
            for _ in range(a.rounds):
                order = list(impls)
                rnd.shuffle(order)
                for k in order:
                    times[k].append(per_call(impls[k], a.calls))
            row = {"dtype": dtype, "log2n": log2n, **{k: statistics.median(v) for k, v in times.items()}}
            if cub is None:
                row["cub_error"] = why
            rows.append(row)
    gpu = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    Path(a.json_out).write_text(json.dumps({"gpu": gpu, "rows": rows}, indent=1))
    names = [k for k in rows[0] if k not in ("dtype", "log2n", "cub_error")]
    print(f"{gpu}: us per call (loops of {a.calls}, median of {a.rounds} rounds)")
    print("dtype    N     " + "".join(f"{k:>10s}" for k in names) + "   new/old  new out=/old out=  new/cub")
    for r in rows:
        ratios = f"{r['new'] / r['old']:9.2f}  {r['new out='] / r['old out=']:15.2f}"
        ratios += f"  {r['new'] / r['cub']:7.2f}" if "cub" in r else ""
        print(f"{r['dtype']:8s} 2^{r['log2n']:<3d}" + "".join(f"{r[k] * 1e6:10.2f}" for k in names) + "   " + ratios)


if __name__ == "__main__":
    main()
