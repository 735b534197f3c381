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

Several older trees at once (a bisection in one process): give ``--old`` once per folder, each
folder holding one package named ``distscan_<tag>`` (made as above, renamed to that name); the
columns are then named by tag, and each ratio is the current call's against that tree's.
"""

from __future__ import annotations

import argparse
import importlib
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
    ap.add_argument("--old", action="append", help="folder holding one distscan_<tag> package (repeatable)")
    ap.add_argument("--sizes", default="16")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--calls", type=int, default=500)
    a = ap.parse_args()
    olds = {}
    for folder in a.old or [".old"]:
        (pkg,) = [p.name for p in Path(folder).iterdir() if p.name.startswith("distscan_") and p.is_dir()]
        sys.path.insert(0, folder)
        olds[pkg.removeprefix("distscan_")] = importlib.import_module(pkg)

    rows = []
    rnd = random.Random(7)
    for log2n in map(int, a.sizes.split(",")):
        n = 1 << log2n
        for dtype in DTYPES:
            x = cp.asarray(np.random.default_rng(log2n).integers(-9, 9, n).astype(dtype))
            y = cp.empty_like(x)
            impls = {"new out=": lambda: distscan.cumsum(x, dtype=x.dtype, out=y),
                     "new": lambda: distscan.cumsum(x, dtype=x.dtype)}
            for tag, mod in olds.items():
                impls[f"{tag} out="] = lambda mod=mod: mod.cumsum(x, dtype=x.dtype, out=y)
                impls[tag] = lambda mod=mod: mod.cumsum(x, dtype=x.dtype)
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
    print("dtype    N     " + "".join(f"{k:>14s}" for k in names))
    for r in rows:
        print(f"{r['dtype']:8s} 2^{r['log2n']:<3d}" + "".join(f"{r[k] * 1e6:14.2f}" for k in names))
    print("new against each (new/tag, new out=/tag out=), and new/cub:")
    for r in rows:
        ratios = "".join(f"  {t}: {r['new'] / r[t]:.2f} {r['new out='] / r[t + ' out=']:.2f}" for t in olds)
        ratios += f"  cub: {r['new'] / r['cub']:.2f}" if "cub" in r else ""
        print(f"{r['dtype']:8s} 2^{r['log2n']:<3d}" + ratios)


if __name__ == "__main__":
    main()
