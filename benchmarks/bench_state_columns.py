"""How fast are reverse scans, segmented sums and linear recurrences along axis 0 of ``(n, w)`` rows
on one GPU (a state-space model's ``(L, D)`` channels, a batch of signals)?

    PYTHONPATH=$PWD python3 benchmarks/bench_state_columns.py OUT.json [--log2n 27] [--reps 5]
        [--widths 1,2,4,32,256,1024]
    python3 benchmarks/bench_state_columns.py --report OUT.json ...   (no GPU: the tables again)
    python3 benchmarks/bench_state_columns.py --plot OUT.png [LABEL=]RUN.json ...   (no GPU: ms against w)

2^log2n items of --dtype (float32, float64, complex64) as ``(2^log2n / w, w)`` C-ordered rows:
``distscan.linear_recurrence(a, b)`` forwards and in reverse (three items' bytes an item: a, b, y),
``distscan.cumsum(x, reverse=True)`` (two) and ``distscan.cumsum(x, segments=flags)`` (two, and a
flag a row), against JAX (``lax.associative_scan``
over the maps along axis 0; ``lax.cumsum(reverse=True)``; wall time of a jitted call, the host's
dispatch included) and CuPy (the reversed views' ``cumsum(axis=0)``).  distscan and CuPy: GPU time
(harness.events_interleaved, hide_host, L2 flushed), median of --reps; GB/s over the scan's bytes;
copy bandwidth of the same bytes.  Results are checked against float64 references on the GPU
(the recurrence's against JAX's where JAX runs: within 1e-3 of a column's scale).
Run it from another tree's copy (its parent folder first on sys.path) for that tree's figures.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

if "--report" not in sys.argv and "--plot" not in sys.argv:
    import cupy as cp

    import distscan
    from harness import SELF, copy_bandwidth, events_interleaved, jax_on_gpu, wall_median

SCANS = (("recurrence", 3), ("reverse recurrence", 3), ("reverse cumsum", 2), ("segmented sum", 2))  # items moved


def _wide(x):
    return x.astype(cp.complex128 if x.dtype.kind == "c" else cp.float64)


def _close(name, got, want):
    scale = cp.maximum(cp.abs(want).max(axis=0), 1.0)
    err = float((cp.abs(_wide(got) - _wide(want)) / scale).max())
    if not err <= 1e-3:
        raise SystemExit(f"{name}: relative error {err:.3g}")


def _segmented_reference(x, flags):
    """Each segment's running sum, in double precision: the whole running sum less its value before the segment."""
    c = cp.cumsum(_wide(x), axis=0)
    starts = cp.flatnonzero(flags)
    ids = cp.cumsum(flags.astype(cp.int64)) - 1  # the segment of each row (flags[0] is set)
    before = (c - _wide(x))[starts]
    return c - before[ids]


def rows_for(w, log2n, reps, jax_mod, dtype):
    n = 1 << log2n
    m = n // w
    rs = cp.random.RandomState(11)
    real = cp.dtype(dtype).kind == "f"
    b = rs.standard_normal((m, w)).astype(dtype)
    a = rs.uniform(-1, 1, (m, w)).astype(dtype)
    if not real:  # |a| <= 1 at any angle, b with both parts
        b = b + 1j * rs.standard_normal((m, w)).astype(dtype)
        a = a * cp.exp(1j * rs.uniform(0, 2 * np.pi, (m, w))).astype(dtype)
    flags = rs.random_sample(m) < 1e-3
    flags[0] = True
    y = cp.empty_like(b)
    impls = {
        "recurrence": {"distscan": lambda: distscan.linear_recurrence(a, b, out=y, comm=SELF)},
        "reverse recurrence": {"distscan": lambda: distscan.linear_recurrence(a, b, reverse=True, out=y, comm=SELF)},
        "reverse cumsum": {"distscan": lambda: distscan.cumsum(b, reverse=True, out=y, comm=SELF),
                           "cupy": lambda: cp.cumsum(b[::-1], axis=0)[::-1]},
        "segmented sum": {"distscan": lambda: distscan.cumsum(b, segments=flags, out=y, comm=SELF)},
    }
    jits = {}
    if jax_mod is not None:
        jax, jnp = jax_mod
        from jax import lax

        def aff(p, q):
            return q[0] * p[0], q[0] * p[1] + q[1]

        ja, jb = jnp.asarray(cp.asnumpy(a)), jnp.asarray(cp.asnumpy(b))
        jits = {"recurrence": (jax.jit(lambda p, q: lax.associative_scan(aff, (p, q), axis=0)[1]), (ja, jb)),
                "reverse recurrence": (jax.jit(lambda p, q: lax.associative_scan(aff, (p, q), reverse=True,
                                                                                 axis=0)[1]), (ja, jb)),
                "reverse cumsum": (jax.jit(lambda v: lax.cumsum(v, axis=0, reverse=True)), (jb,))}
    out = []
    for name, bpe in SCANS:
        impls[name]["distscan"]()
        if name == "reverse cumsum":
            _close(name, y, cp.cumsum(_wide(b[::-1]), axis=0)[::-1])
        elif name == "segmented sum":
            _close(name, y, _segmented_reference(b, flags))
        elif name in jits:
            fn, args = jits[name]
            _close(name, y, cp.asarray(np.asarray(fn(*args))))
        med = events_interleaved(impls[name], reps, hide_host=True)
        nbytes = bpe * b.itemsize * n + (m if name == "segmented sum" else 0)
        row = {"scan": name, "columns": w, "rows": m, "bytes": nbytes,
               **{k: {"ms": t * 1e3, "gbs": nbytes / t / 1e9} for k, t in med.items()}}
        if name in jits:
            fn, args = jits[name]
            t = wall_median(lambda: fn(*args).block_until_ready(), reps)
            row["jax"] = {"ms": t * 1e3, "gbs": nbytes / t / 1e9}
        out.append(row)
    return out


def report(data):
    print(f"{data['device']}, 2^{data['log2n']} {data.get('dtype', 'float32')} items, copy {data['copy_gbs']:.0f} GB/s, "
          f"{data['when']}")
    print(f"{'scan':20s} {'w':>5s} {'distscan ms':>12s} {'of copy':>8s}  peers (ms)")
    for r in data["rows"]:
        ds = r["distscan"]
        peers = "  ".join(f"{k} {v['ms']:.3f}" for k, v in r.items() if isinstance(v, dict) and k != "distscan")
        print(f"{r['scan']:20s} {r['columns']:5d} {ds['ms']:12.3f} {ds['gbs'] / data['copy_gbs']:8.3f}  {peers}")


def plot(png: str, runs: list) -> None:
    """ms against the number of columns, one panel a scan: distscan of every run (``LABEL=RUN.json``),
    and JAX's and CuPy's of the first run."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(SCANS), figsize=(4 * len(SCANS), 3.8), sharey=True)
    for ax, (scan, _) in zip(axes, SCANS):
        for i, run in enumerate(runs):
            label, _, path = run.rpartition("=")
            data = json.loads(Path(path).read_text())
            rows = [r for r in data["rows"] if r["scan"] == scan and r["columns"] > 1]
            w = [r["columns"] for r in rows]
            ax.plot(w, [r["distscan"]["ms"] for r in rows], "o-", color=f"C{i}",
                    label=f"distscan {label or Path(path).stem}")
            for peer, style, color in (("jax", "s--", "C7"), ("cupy", "^:", "C8")) if i == 0 else ():
                if any(peer in r for r in rows):
                    ax.plot([r["columns"] for r in rows if peer in r], [r[peer]["ms"] for r in rows if peer in r],
                            style, color=color, label=peer)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(scan)
        ax.set_xlabel("columns")
    axes[0].set_ylabel(f"ms, 2^{data['log2n']} {data.get('dtype', 'float32')} items ({data['device']})")
    axes[2].legend(fontsize=7)  # (every series is in the reverse cumsum's panel)
    fig.tight_layout()
    fig.savefig(png, dpi=110)


def main():
    if "--plot" in sys.argv:
        at = sys.argv.index("--plot")
        return plot(sys.argv[at + 1], sys.argv[at + 2:])
    if "--report" in sys.argv:
        for path in sys.argv[sys.argv.index("--report") + 1:]:
            report(json.loads(Path(path).read_text()))
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--log2n", type=int, default=27)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--widths", default="1,2,4,32,256,1024")
    ap.add_argument("--dtype", default="float32", choices=("float32", "float64", "complex64"))
    a = ap.parse_args()
    jax_mod = jax_on_gpu(preallocate=False)  # (CuPy's arrays are the larger part)
    # JAX's start leaves the last GPU current on a host of several: the arrays would be made there
    # and the API's calls (bound to GPU 0 by ensure_device) read them through peer access
    # (2026-11-28, 2 H200s: the one-column rows of final-h200x2/state-columns.txt timed nothing)
    cp.cuda.Device(0).use()
    copy_gbs = copy_bandwidth(np.dtype(a.dtype).itemsize << a.log2n, a.reps)
    rows = []
    for w in (int(v) for v in a.widths.split(",")):
        for r in rows_for(w, a.log2n, a.reps, jax_mod, a.dtype):
            rows.append(r)
            peers = "  ".join(f"{k} {v['ms']:.3f}" for k, v in r.items() if isinstance(v, dict) and k != "distscan")
            print(f"{r['scan']:20s} w={w:<5d} distscan {r['distscan']['ms']:.3f} ms "
                  f"({r['distscan']['gbs'] / copy_gbs:.3f} of copy)  {peers}", flush=True)
        cp.get_default_memory_pool().free_all_blocks()  # (the call's arrays are gone with it)
    dev = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    data = {"device": dev, "log2n": a.log2n, "dtype": a.dtype, "when": stamp, "copy_gbs": copy_gbs, "rows": rows}
    Path(a.out).write_text(json.dumps(data, indent=1))
    report(data)


if __name__ == "__main__":
    main()
