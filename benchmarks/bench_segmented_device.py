"""Which device kernel should "auto" give a forward segmented scan, now that the look-ahead folds
a thread's run by its flags' bits (RUN_BITS, RESULTS.md "The segmented runs folded by their start
bits")?

    PYTHONPATH=$PWD python3 benchmarks/bench_segmented_device.py OUT.json [--log2n 22,24,27,29] [--reps 7]

Each segmented scan (one flag in a thousand, bool flags) is timed with ``algorithm="lookback"``
and ``"lookahead"`` in the same repetitions (harness.events_interleaved, ``hide_host``: GPU time,
L2 flushed, a new random order each repetition; median of --reps), at sizes where the plain scan
of the same item sizes takes the look-ahead (``plans.uses_lookahead``), and "auto" is named by
the kernel it takes now.  Bytes per element: input + output + 1 (the flag).  Results checked
first: the two kernels' results against each other and against a NumPy reference of the first
2^20 items (integers bit for bit; floats within 1e-5 of 1 + |value|, float16 within 2e-2).
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

import cupy as cp  # noqa: E402

import distscan  # noqa: E402
from distscan.backends.cuda import plans  # noqa: E402
from distscan.ops.options import call_op  # noqa: E402
from harness import SELF, copy_bandwidth, events_interleaved  # noqa: E402

# (name, op, input dtype, dtype=): 4-byte items first (the look-ahead's case), then others
CASES = [("sum f32", "sum", "float32", None), ("max f32", "max", "float32", None),
         ("prod f32", "prod", "float32", None), ("nansum f32", "nansum", "float32", None),
         ("sum i32", "sum", "int32", "int32"), ("max i32", "max", "int32", None),
         ("sum f16", "sum", "float16", None), ("sum f64", "sum", "float64", None),
         ("sum i64", "sum", "int64", None), ("sum i8 -> i64", "sum", "int8", None)]


def data(op, dt, n, rs):
    """Items whose segmented scan stays finite: products of values near 1; NaNs for nansum."""
    if np.dtype(dt).kind != "f":
        return rs.randint(-100, 100, n).astype(dt)
    if op == "prod":
        return rs.uniform(0.99, 1.01, n).astype(dt)
    x = rs.standard_normal(n, dtype=cp.float32).astype(dt)
    if op == "nansum":
        x[::997] = np.nan
    return x


def reference(op, x, flags, dtype):
    """The segmented scan of the host arrays, segment by segment with NumPy."""
    starts = np.flatnonzero(flags).tolist()
    bounds = sorted(set([0] + starts + [len(x)]))
    parts = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        seg = x[lo:hi]
        if op == "nansum":
            parts.append(np.nancumsum(seg, dtype=dtype))
        elif op == "sum":
            parts.append(np.cumsum(seg, dtype=dtype))
        elif op == "prod":
            parts.append(np.cumprod(seg, dtype=dtype))
        else:
            parts.append(np.maximum.accumulate(seg))
    return np.concatenate(parts)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--log2n", default="22,24,27,29")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--cases", help="comma-separated case names (default: all)")
    a = ap.parse_args()
    rs = cp.random.RandomState(11)
    dev = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    rows = []
    for log2n in [int(v) for v in a.log2n.split(",")]:
        n = 1 << log2n
        copy_gbs = copy_bandwidth(4 * n, a.reps)
        flags = rs.random_sample(n) < 1e-3
        flags[0] = True
        for name, op, dt, dtype in CASES:
            if a.cases and name not in a.cases.split(","):
                continue
            x = data(op, dt, n, rs)
            y = distscan.scan(x, op, segments=flags, dtype=dtype, comm=SELF)
            in_size, out_size = x.itemsize, y.itemsize
            if not plans.uses_lookahead(n, in_size, out_size):
                continue
            outs = {alg: cp.empty_like(y) for alg in ("lookback", "lookahead")}
            impls = {alg: (lambda alg=alg: distscan.scan(x, op, segments=flags, dtype=dtype, out=outs[alg],
                                                        comm=SELF, algorithm=alg)) for alg in outs}
            for fn in impls.values():
                fn()
            m = 1 << 20
            want = reference(op, cp.asnumpy(x[:m]), cp.asnumpy(flags[:m]), dtype)
            for alg, out in outs.items():
                got = cp.asnumpy(out)
                if got.dtype.kind in "iu":
                    assert np.array_equal(got[:m], want), f"{name} {alg} differs from NumPy"
                    assert np.array_equal(got, cp.asnumpy(outs["lookback"])), f"{name} {alg} differs"
                else:
                    w = want.astype(np.float64)
                    tol = (2e-2 if dt == "float16" else 1e-5) * (1 + np.nanmax(np.abs(w)))
                    assert np.allclose(got[:m], w, rtol=0, atol=tol), f"{name} {alg} differs from NumPy"
            med = events_interleaved(impls, a.reps, hide_host=True)
            auto = plans.ext_device(call_op(op, segments=True), "auto", n, in_size, out_size,
                                    np.dtype(y.dtype).kind)
            per = in_size + out_size + 1
            row = {"case": name, "log2n": log2n, "copy_gbs": copy_gbs, "auto": auto, "bytes": per,
                   **{f"{alg}_ms": t * 1e3 for alg, t in med.items()},
                   **{f"{alg}_of_copy": per * n / t / 1e9 / copy_gbs for alg, t in med.items()}}
            rows.append(row)
            print(f"{name:14s} 2^{log2n}  lookback {row['lookback_ms']:.3f} ms ({row['lookback_of_copy']:.3f})  "
                  f"lookahead {row['lookahead_ms']:.3f} ms ({row['lookahead_of_copy']:.3f})  auto={auto}", flush=True)
            del x, y, outs, impls
    print(f"\n{dev}, {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, median of {a.reps}; of copy over in+out+1 bytes")
    print("| scan | n | look-back ms (of copy) | look-ahead ms (of copy) | ahead / back time | auto now |\n|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['case']} | 2^{r['log2n']} | {r['lookback_ms']:.3f} ({r['lookback_of_copy']:.3f}) | "
              f"{r['lookahead_ms']:.3f} ({r['lookahead_of_copy']:.3f}) | "
              f"{r['lookahead_ms'] / r['lookback_ms']:.3f} | {r['auto']} |")
    Path(a.out).write_text(json.dumps({"device": dev, "reps": a.reps, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
