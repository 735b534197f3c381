"""Which run length should the column-tile kernels take for each accumulator size?  The rows a
thread folds in sequence (``backends/cuda/columns.run_length``: ``RUNS`` by size, a formula for
the state sizes without an entry) is a launch argument, so one process sweeps it without
recompiling.

    PYTHONPATH=$PWD python3 benchmarks/sweep_column_runs.py OUT.json [--log2n 27] [--reps 5]
        [--widths 2,32,256,1024] [--runs 1,3,5,7,9,11,13,15,23,31]

Each case (a scan, a dtype: its kernels' accumulator size) at each width and run, 2^log2n bytes'
worth of items as ``(n, w)`` rows: GPU time (harness.events_interleaved, hide_host, L2 flushed),
median of --reps, ms; the best run of each (case, width) marked, against today's ``run_length``.
Runs whose tile passes 48 KB of shared memory (the launch's default limit) are skipped.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import cupy as cp  # noqa: E402

import distscan  # noqa: E402
from distscan._dtypes import scan_types  # noqa: E402
from distscan.backends.cuda import columns  # noqa: E402
from distscan.backends.cuda.ext_states import kernel_state  # noqa: E402
from distscan.ops.options import call_op  # noqa: E402
from harness import SELF, events_interleaved  # noqa: E402

# (label, dtype, the call's keywords for call_op, how to run it)
CASES = [("recurrence", "float32", {"coefficients": 1}), ("recurrence", "float64", {"coefficients": 1}),
         ("recurrence", "complex64", {"coefficients": 1}), ("segmented recurrence", "float32",
                                                            {"coefficients": 1, "segments": 1}),
         ("segmented sum", "float32", {"segments": 1}), ("segmented sum", "float64", {"segments": 1}),
         ("reverse cumsum", "float32", {"reverse": True}), ("cumsum", "float64", {})]


def acc_size(dtype: str, kw: dict) -> int:
    op = call_op("sum", segments=kw.get("segments"), coefficients=kw.get("coefficients"),
                 reverse=kw.get("reverse", False))
    return kernel_state(op, scan_types(op, np.dtype(dtype))).itemsize


def call_of(label: str, dtype: str, kw: dict, m: int, w: int):
    rs = cp.random.RandomState(3)
    b = rs.standard_normal((m, w)).astype(dtype)
    out = cp.empty_like(b)
    flags = rs.random_sample(m) < 1e-3
    if "coefficients" in kw:
        a = rs.uniform(-1, 1, (m, w)).astype(dtype)
        segs = flags if "segments" in kw else None
        return lambda: distscan.linear_recurrence(a, b, segments=segs, out=out, comm=SELF)
    if "segments" in kw:
        return lambda: distscan.cumsum(b, segments=flags, out=out, comm=SELF)
    return lambda: distscan.cumsum(b, reverse=kw.get("reverse", False), out=out, comm=SELF)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--log2n", type=int, default=27, help="bytes' worth, as 4-byte items (2^27: 512 MB)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--widths", default="2,32,256,1024")
    ap.add_argument("--runs", default="1,3,5,7,9,11,13,15,23,31")
    a = ap.parse_args()
    rows = []
    for label, dtype, kw in CASES:
        size = acc_size(dtype, kw)
        today = columns.run_length(size)
        n = (4 << a.log2n) // np.dtype(dtype).itemsize
        for w in (int(v) for v in a.widths.split(",")):
            fn = call_of(label, dtype, kw, n // w, w)
            saved = columns.RUNS.get(size)
            impls = {}
            for run in (int(v) for v in a.runs.split(",")):
                rows_ = columns.COLUMN_TILE_THREADS // min(w, columns.COLUMN_TILE_THREADS) * run
                if rows_ < 2:  # (columns._geometry refuses a tile of one row: its levels would not shrink)
                    continue
                # (+ rows_: room for a tile's segment flags, a byte a row, where the kernels stage them)
                if (columns.COLUMN_TILE_THREADS + rows_ * min(w, columns.COLUMN_TILE_THREADS)) * size + rows_ > 48 * 1024:
                    continue

                def timed(run=run, fn=fn):
                    columns.RUNS[size] = run
                    fn()
                impls[run] = timed
            try:
                med = events_interleaved(impls, a.reps, hide_host=True)
            finally:
                if saved is None:
                    columns.RUNS.pop(size, None)
                else:
                    columns.RUNS[size] = saved
            best = min(med, key=med.get)
            rows.append({"case": label, "dtype": dtype, "acc_bytes": size, "columns": w, "today": today,
                         "ms": {str(r): t * 1e3 for r, t in med.items()}, "best": best})
            cells = "  ".join(f"{r}{'*' if r == best else ''}{'(today)' if r == today else ''} {t * 1e3:.3f}"
                              for r, t in sorted(med.items()))
            print(f"{label:20s} {dtype:9s} {size:2d} B  w={w:<5d} {cells}", flush=True)
            del fn
            cp.get_default_memory_pool().free_all_blocks()
    dev = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    Path(a.out).write_text(json.dumps({"device": dev, "log2n": a.log2n, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
