"""How fast is a linear recurrence whose coefficient is one value along the scanned axis (an
exponential moving average ``y[i] = a*y[i-1] + b[i]``; one decay a channel of ``(L, D)`` rows)?

    PYTHONPATH=$PWD python3 benchmarks/bench_one_coefficient.py OUT.json [--log2n 27] [--reps 5]
        [--dtype float32] [--widths 1,64] [--algorithm auto] [--no-jax]
    python3 benchmarks/bench_one_coefficient.py --report OUT.json ...   (no GPU: the table again)

2^log2n items of --dtype as ``(2^log2n / w, w)`` rows (1-D where w is 1): ``linear_recurrence(a0,
b)`` with a Python scalar, with ``a`` of shape ``(w,)`` (one a column), and with the full ``(n, w)``
array of the same values made beforehand; against JAX's ``lax.associative_scan`` of the maps with
the scalar broadcast inside the jitted function (wall time, dispatch included) and copy bandwidth.
distscan: GPU time (harness.events_interleaved, hide_host, L2 flushed; a call's own allocations
and fills included), median of --reps.  Bytes: b and y (two items an item) for the scalar and the
row, and a too (three) for the array.  Every result is checked against the float64 (complex128)
recurrence of the same scan (relative error <= 1e-3 of its column's scale).  Run it from another
tree's copy (its parent folder first on sys.path) for that tree's figures.
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

if "--report" not in sys.argv:
    import cupy as cp

    import distscan
    from harness import SELF, copy_bandwidth, events_interleaved, jax_on_gpu, wall_median


def rows_for(w: int, log2n: int, reps: int, dtype: str, jax_mod, algorithm: str = "auto") -> list:
    n = 1 << log2n
    m = n // w
    shape = (m,) if w == 1 else (m, w)
    rs = cp.random.RandomState(7)
    complex_ = np.dtype(dtype).kind == "c"
    b = rs.standard_normal(shape).astype(dtype)
    a0 = (0.6 + 0.7j) if complex_ else 0.93
    if complex_:
        b = b + 1j * rs.standard_normal(shape).astype(dtype)
    row = cp.asarray((a0 * np.linspace(0.9, 1.0, w)).astype(dtype))
    full = cp.full(shape, a0, dtype)
    y = cp.empty_like(b)
    wide = np.complex128 if complex_ else np.float64
    want = distscan.linear_recurrence(full.astype(wide), b.astype(wide), comm=SELF)  # (the array's way)
    kw = dict(out=y, comm=SELF, algorithm=algorithm)
    impls = {"scalar": lambda: distscan.linear_recurrence(a0, b, **kw),
             "array": lambda: distscan.linear_recurrence(full, b, **kw)}
    if w > 1:
        impls["row"] = lambda: distscan.linear_recurrence(row, b, **kw)
    for name, fn in impls.items():
        fn()
        ref = want if name != "row" else distscan.linear_recurrence(
            cp.ascontiguousarray(cp.broadcast_to(row, shape)).astype(wide), b.astype(wide), comm=SELF)
        scale = cp.maximum(cp.abs(ref).max(axis=0), 1.0)
        err = float((cp.abs(y.astype(wide) - ref) / scale).max())
        if not err <= 1e-3:
            raise SystemExit(f"{name} w={w}: relative error {err:.3g}")
    med = events_interleaved(impls, reps, hide_host=True)
    item = np.dtype(dtype).itemsize
    out = []
    for name, t in med.items():
        nbytes = (3 if name == "array" else 2) * item * n
        out.append({"call": name, "columns": w, "bytes": nbytes, "ms": t * 1e3, "gbs": nbytes / t / 1e9})
    if jax_mod is not None:
        jax, jnp = jax_mod
        from jax import lax

        def aff(p, q):
            return q[0] * p[0], q[0] * p[1] + q[1]

        fn = jax.jit(lambda q: lax.associative_scan(aff, (jnp.full_like(q, a0), q), axis=0)[1])
        jb = jnp.asarray(cp.asnumpy(b))
        got = cp.asarray(np.asarray(fn(jb)))
        err = float((cp.abs(got.astype(wide) - want) / cp.maximum(cp.abs(want).max(axis=0), 1.0)).max())
        if not err <= 1e-3:
            raise SystemExit(f"jax w={w}: relative error {err:.3g}")
        t = wall_median(lambda: fn(jb).block_until_ready(), reps)
        out.append({"call": "jax scalar", "columns": w, "bytes": 2 * item * n, "ms": t * 1e3,
                    "gbs": 2 * item * n / t / 1e9})
    return out


def report(data: dict) -> None:
    print(f"{data['device']}, 2^{data['log2n']} {data['dtype']} items, algorithm {data.get('algorithm', 'auto')}, "
          f"copy {data['copy_gbs']:.0f} GB/s, {data['when']}")
    print(f"{'call':12s} {'w':>5s} {'ms':>8s} {'of copy':>8s}")
    for r in data["rows"]:
        print(f"{r['call']:12s} {r['columns']:5d} {r['ms']:8.3f} {r['gbs'] / data['copy_gbs']:8.3f}")


def main():
    if "--report" in sys.argv:
        for path in sys.argv[sys.argv.index("--report") + 1:]:
            report(json.loads(Path(path).read_text()))
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--log2n", type=int, default=27)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--dtype", default="float32", choices=("float32", "float64", "complex64"))
    ap.add_argument("--widths", default="1,64")
    ap.add_argument("--no-jax", action="store_true")
    ap.add_argument("--algorithm", default="auto", help="distscan's algorithm= (auto, lookback, lookahead)")
    a = ap.parse_args()
    jax_mod = None if a.no_jax else jax_on_gpu(preallocate=False)
    cp.cuda.Device(0).use()  # (JAX's start leaves the last GPU current on a host of several)
    copy_gbs = copy_bandwidth(np.dtype(a.dtype).itemsize << a.log2n, a.reps)
    rows = []
    for w in (int(v) for v in a.widths.split(",")):
        for r in rows_for(w, a.log2n, a.reps, a.dtype, jax_mod, a.algorithm):
            rows.append(r)
            print(f"{r['call']:12s} w={w:<5d} {r['ms']:.3f} ms ({r['gbs'] / copy_gbs:.3f} of copy)", flush=True)
        cp.get_default_memory_pool().free_all_blocks()
    dev = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    data = {"device": dev, "log2n": a.log2n, "dtype": a.dtype, "algorithm": a.algorithm, "when": stamp,
            "copy_gbs": copy_gbs, "rows": rows}
    Path(a.out).write_text(json.dumps(data, indent=1))
    report(data)


if __name__ == "__main__":
    main()
