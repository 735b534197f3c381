"""Every scan algorithm side by side on one GPU, with CUB, torch.cumsum and copy, in one run.

    python benchmarks/bench_algorithms.py OUT.json [--sizes 10,13,16,19,22,25,27,29] [--reps 10] [--png OUT.png]

For each dtype (int32, float32, int64, float64) and N = 2^k, every `algorithm=` name of the
CUDA backend scans the same fresh random input (sum, result dtype = input dtype), timed with
CUDA events after warm-up (median); GB/s counts 2*N*itemsize; the ratio to the copy of the
same bytes measured in the same run is printed.  Each result is checked (integers exactly,
floats within a bound).  Beside the times: each algorithm's operator applications and
barriers per tile (work and depth), from the tile shape the backend uses.  The table is
printed last; JSON (and a PNG of GB/s against N, one line per algorithm, one panel per
dtype) are written.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import platform
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import cupy as cp  # noqa: E402
from bench_gpu import _check, _random  # noqa: E402
from harness import device_copy, events_median as _events_median, make_cub  # noqa: E402

from distscan._dtypes import scan_types  # noqa: E402
from distscan.backends.cuda import compile as cc  # noqa: E402
from distscan.backends import cuda as gpu  # noqa: E402
from distscan.ops import get_op  # noqa: E402

NAMES = ["coarsened", "kogge_stone", "kogge_stone_double_buffer", "brent_kung", "blelloch",
         "lookback", "lookahead", "domino", "hierarchical"]
DTYPES = ["int32", "float32", "int64", "float64"]
SUM = get_op("sum")


def tile_counts(name: str, threads: int, items: int) -> dict:
    """Operator applications and barriers of one tile (threads x items) for each algorithm.

    Every block algorithm first scans each thread's run of `items` (threads*(items-1) ops)
    and later folds the thread's prefix into its run (threads*items ops); what differs is the
    scan of the `threads` run totals.  Device-level names use the coarsened block scan.
    """
    lg = int(math.log2(threads))
    runs = threads * (items - 1) + threads * items
    block = cc.kernel_algorithm(name)[0]
    if block == "kogge_stone":
        ops, barriers = threads * lg - (threads - 1), 2 * lg + 2
    elif block == "kogge_stone_double_buffer":
        ops, barriers = threads * lg - (threads - 1), lg + 2
    elif block == "brent_kung":
        ops, barriers = 2 * (threads - 1) - lg, 2 * lg + 1
    elif block == "blelloch":
        ops, barriers = 2 * (threads - 1), 2 * lg + 2
    else:  # coarsened: 5 shuffle steps in each warp, then the warp totals
        warps = threads // 32
        ops, barriers = warps * (32 * 5 - 31) + threads * warps, 1
    return {"ops": runs + ops, "block_ops": ops, "barriers": barriers, "tile_items": threads * items}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json_out")
    ap.add_argument("--sizes", default="10,13,16,19,22,25,27,29")
    ap.add_argument("--dtypes", default=",".join(DTYPES))
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--png")
    args = ap.parse_args()
    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    meta = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "gpu": props["name"].decode(),
            "sms": props["multiProcessorCount"], "host": platform.node(), "cupy": cp.__version__}
    dtypes = args.dtypes.split(",")
    keys = [gpu.module_key(np.dtype(d), scan_types(SUM, np.dtype(d), np.dtype(d)), SUM, name)
            for d in dtypes for name in NAMES]
    cc.precompile(keys)
    rows, counts = [], {}
    for dtype in dtypes:
        types = scan_types(SUM, np.dtype(dtype), np.dtype(dtype))
        for name in NAMES:
            t = gpu.tuning(types.input, types, name)
            counts[f"{dtype}/{name}"] = {**tile_counts(name, t.block_threads, t.items), "threads": t.block_threads,
                                         "items": t.items}
        for lg in [int(s) for s in args.sizes.split(",")]:
            n = 1 << lg
            x = _random(dtype, n, cp.random.RandomState(lg))
            y = cp.empty_like(x)
            nbytes = 2 * n * x.itemsize
            row = {"dtype": dtype, "log2n": lg}
            impls = {"copy": device_copy(y, x)}
            for name in NAMES:
                impls[name] = (lambda nm: lambda: gpu.scan(x, SUM, types, out=y, algorithm=nm))(name)
            cub, _ = make_cub(x, y, n)
            if cub is not None:
                impls["cub"] = cub
            try:
                import torch
                tx, ty = torch.from_dlpack(x), torch.from_dlpack(y)
                impls["torch"] = lambda: torch.cumsum(tx, 0, dtype=tx.dtype, out=ty)
            except Exception:  # noqa: BLE001
                pass
            for name, fn in impls.items():
                reps = args.reps if n >= (1 << 22) else 5 * args.reps
                if name == "domino" and n >= (1 << 27):
                    reps = 3  # a serial chain of status hops: slow, and it says so in few runs
                med, _ = _events_median(fn, reps)
                row[name] = nbytes / med / 1e9
                if name != "copy":
                    y.fill(0)
                    fn()
                    row[f"{name}_ok"] = _check(dtype, x, y)
            rows.append(row)
            print(json.dumps(row), flush=True)
            del x, y
            cp.get_default_memory_pool().free_all_blocks()
    Path(args.json_out).write_text(json.dumps({"meta": meta, "rows": rows, "tile_counts": counts}, indent=1))
    if args.png:
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
            fig, axes = plt.subplots(1, len(dtypes), figsize=(5 * len(dtypes), 4.2), sharey=True)
            for ax, dtype in zip(np.atleast_1d(axes), dtypes):
                rs = [r for r in rows if r["dtype"] == dtype]
                for name in ["copy", "cub", "torch"] + NAMES:
                    if name in rs[0]:
                        ax.plot([r["log2n"] for r in rs], [r[name] for r in rs], marker="o", ms=3, label=name,
                                lw=2.2 if name in ("copy", "cub") else 1.2)
                ax.set_title(f"{dtype} sum, {meta['gpu']}")
                ax.set_xlabel("log2 N")
                ax.set_yscale("log")
                ax.grid(alpha=0.3)
            np.atleast_1d(axes)[0].set_ylabel("GB/s (2 N itemsize / time)")
            np.atleast_1d(axes)[-1].legend(fontsize=7)
            fig.tight_layout()
            fig.savefig(args.png, dpi=110)
        except Exception as exc:  # noqa: BLE001
            print(f"no plot: {exc!r}")
    print(f"\n{meta['gpu']} ({meta['sms']} SMs), {meta['date']}; GB/s (ratio to copy)")
    for dtype in dtypes:
        print(f"\n{dtype}: " + " ".join(f"{n[:10]:>10s}" for n in ["copy", "cub", "torch"] + NAMES))
        for r in (r for r in rows if r["dtype"] == dtype):
            cells = [f"{r.get(n, float('nan')):10.0f}" for n in ["copy", "cub", "torch"] + NAMES]
            print(f"  2^{r['log2n']:<3d}" + " ".join(cells))
    print("\nper tile (threads x items): operator applications, barriers")
    for k, c in counts.items():
        print(f"  {k:36s} {c['threads']}x{c['items']:<3d} ops {c['ops']:6d} (block part {c['block_ops']:5d}) "
              f"barriers {c['barriers']}")
    bad = [(r["dtype"], r["log2n"], k) for r in rows for k, v in r.items() if k.endswith("_ok") and v is False]
    print("checks:", "all passed" if not bad else f"FAILED {bad}")


if __name__ == "__main__":
    main()
