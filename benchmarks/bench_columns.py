"""How fast is a scan along axis 0 of a few columns on one GPU (a simulation's ``(n, 3)`` positions)?

    PYTHONPATH=$PWD python3 benchmarks/bench_columns.py OUT.json [--log2n 27] [--reps 7]
        [--widths 1,2,3,4,8,16,32,33,64] [--dtypes float32,float64]
    python3 benchmarks/bench_columns.py --plot OUT.png [LABEL=]RUN.json ...   (no GPU: ms against w)

``distscan.cumsum(x)`` of ``(2^log2n / w, w)`` C-ordered rows against ``cupy.cumsum(x, axis=0)``,
``torch.cumsum(x, 0)`` (one column only) and the same bytes as one column (the 1-D scan: the
speed a layout-blind kernel would reach).  Until 2026-11-28 distscan transposed up to 32 columns into
a contiguous copy and back around a 1-D scan a column; ``--transposes`` times CuPy's two copies
alone (``x.T`` made contiguous, the result's copy back), the cost that way paid.  All the same run, GPU time
(harness.events_interleaved, hide_host, L2 flushed), median of --reps; GB/s over 2 x the array's
bytes; copy bandwidth of the same bytes.  Results checked against CuPy's (floats within 1e-3
relative of the column's scale).
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

if "--plot" not in sys.argv:
    import cupy as cp

    import distscan
    from harness import SELF, copy_bandwidth, events_interleaved


def _check(got, want, dtype: str, label: str) -> None:
    scale = float(cp.abs(want).max()) or 1.0
    if not bool(cp.allclose(got, want, rtol=1e-3, atol=1e-3 * scale)):
        raise SystemExit(f"{dtype} {label}: distscan differs from CuPy")


def plot(png: str, runs: list) -> None:
    """ms against the number of columns, float32: distscan of every run (``LABEL=RUN.json``, or the
    file's folder as its label), CuPy's of all runs, and the one-column scan of the same bytes."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    peers: dict = {"cupy": {}, "one column": {}}
    for run in runs:
        label, _, path = run.rpartition("=")
        data = json.loads(Path(path).read_text())
        rows = [r for r in data["rows"] if r["dtype"] == "float32"]
        ax.plot([r["columns"] for r in rows], [r["distscan"]["ms"] for r in rows], "o-",
                label=f"distscan, {label or Path(path).parent.name} ({data['when']})")
        for name, seen in peers.items():
            seen.update({r["columns"]: r[name]["ms"] for r in rows if name in r})
    for name, style, text in (("cupy", "s--", "CuPy cumsum(axis=0)"),
                              ("one column", "k:", "the same bytes as one column (distscan)")):
        w = sorted(peers[name])
        ax.plot(w, [peers[name][k] for k in w], style, label=text)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("columns (2^%d float32 items in all)" % data["log2n"])
    ax.set_ylabel("ms (GPU time)")
    ax.set_title(f"{data['device']}: cumsum along axis 0 of (n, w) rows")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png, dpi=120)


def main():
    if "--plot" in sys.argv:
        at = sys.argv.index("--plot")
        return plot(sys.argv[at + 1], sys.argv[at + 2:])
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--log2n", type=int, default=27)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--widths", default="1,2,3,4,8,16,32,33,64,256,1024,4096")
    ap.add_argument("--dtypes", default="float32,float64")
    ap.add_argument("--transposes", action="store_true", help="time CuPy's transposed copies too (1 < w <= 32)")
    a = ap.parse_args()
    try:
        import torch
    except ImportError:
        torch = None
    n = 1 << a.log2n
    rs = cp.random.RandomState(7)
    rows, copy_gbs = [], {}
    for dt in a.dtypes.split(","):
        itemsize = cp.dtype(dt).itemsize
        copy_gbs[dt] = copy_bandwidth(itemsize * n, a.reps)
        for w in (int(v) for v in a.widths.split(",")):
            m = n // w
            x = rs.uniform(-1, 1, m * w).astype(dt).reshape(m, w)
            y = cp.empty_like(x)
            flat, flat_out = x.reshape(-1), cp.empty(m * w, dt)
            impls = {"distscan": lambda: distscan.cumsum(x, out=y, comm=SELF),
                     "cupy": lambda: cp.cumsum(x, axis=0),
                     "one column": lambda: distscan.cumsum(flat, out=flat_out, comm=SELF)}
            if a.transposes and 1 < w <= 32:
                impls["transpose in"] = lambda: cp.ascontiguousarray(x.T)
                yt = cp.empty((w, m), dt)
                impls["copy back"] = lambda: y.__setitem__(Ellipsis, yt.T)
            if torch is not None and w == 1:  # (along axis 0 of a few columns torch takes seconds: 4.7 s
                tx = torch.as_tensor(x, device="cuda")   # for a cumprod of (2^25, 4) float32, H200)
                impls["torch"] = lambda: torch.cumsum(tx, 0)
            impls["distscan"]()
            _check(y, cp.cumsum(x, axis=0), dt, f"{w} columns")
            med = events_interleaved(impls, a.reps, hide_host=True)
            nbytes = 2 * x.nbytes
            row = {"dtype": dt, "columns": w, "rows": m, "copy_gbs": copy_gbs[dt],
                   **{k: {"ms": t * 1e3, "gbs": nbytes / t / 1e9} for k, t in med.items()}}
            rows.append(row)
            parts = "  ".join(f"{k} {v['ms']:.3f}" for k, v in row.items() if isinstance(v, dict) and k != "distscan")
            print(f"{dt} w={w:<3d} distscan {row['distscan']['ms']:.3f} ms ({row['distscan']['gbs'] / copy_gbs[dt]:.3f}"
                  f" of copy)  {parts}", flush=True)
            del x, y, flat, flat_out, impls
            cp.get_default_memory_pool().free_all_blocks()
    dev = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"\n{dev}, 2^{a.log2n} items, copy {', '.join(f'{k} {v:.0f}' for k, v in copy_gbs.items())} GB/s, {stamp}")
    Path(a.out).write_text(json.dumps({"device": dev, "log2n": a.log2n, "when": stamp, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
