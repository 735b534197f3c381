"""Which device-level algorithm suits the scans whose operator is costly (issue 30's misses)?

Question: the look-ahead kernel, which auto runs from 2^25-2^26 bytes, applies the operator
about three times per item (the reduction of the tiles ahead, the thread's scan, the prefix
added at the store); the decoupled look-back applies it twice.  For the sums that is free (both
run at copy speed); for logaddexp (an exp and a log1p per application) and the compensated sum
(TwoSum), it may not be.  Each scan is timed with ``algorithm="auto"``, ``"lookback"`` and
``"lookahead"`` (GPU time, L2 flushed, interleaved: ``harness.events_interleaved``, the host
hidden behind a sleep), beside torch where it has the scan, and checked first against auto's
result (and logcumsumexp against NumPy's float64 ``logaddexp.accumulate`` on a prefix).

    PYTHONPATH=$PWD python benchmarks/probe_device_algorithm.py [--log2n 27] [--reps 15] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import cupy as cp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import events_interleaved  # noqa: E402

import distscan  # noqa: E402

ALGOS = ("auto", "lookback", "lookahead")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--log2n", type=int, default=27)
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--json")
    ap.add_argument("--scans", help="comma-separated names of the rows to run (default: all)")
    a = ap.parse_args()
    n = 1 << a.log2n
    rng = np.random.default_rng(5)
    x32 = cp.asarray(rng.standard_normal(n).astype(np.float32))
    x64 = x32.astype(cp.float64)
    xnan = x32.copy()
    xnan[cp.asarray(rng.random(n) < 0.01)] = cp.nan
    flags = cp.asarray(rng.random(n) < 1e-3)
    coef = cp.asarray(rng.uniform(0.5, 1.0, n).astype(np.float32))
    xg = cp.asarray(6 * rng.integers(1, 1000, n))  # gcds of 6 (a few Euclid steps per application)
    xl = cp.asarray(rng.integers(1, 4, n).astype(np.int32))  # lcms of 1, 2, 3: 6 from the first few items
    y32, y64, yg, yl = cp.empty_like(x32), cp.empty_like(x64), cp.empty_like(xg), cp.empty_like(xl)
    x16 = x32.astype(cp.float16)
    y16 = cp.empty_like(x16)
    try:
        import torch
    except ImportError:
        torch = None

    def scans(alg):
        return {
            "logcumsumexp f32": (8, lambda: distscan.scan(x32, np.logaddexp, out=y32, algorithm=alg), y32),
            "logcumsumexp f64": (16, lambda: distscan.scan(x64, np.logaddexp, out=y64, algorithm=alg), y64),
            "compensated f32": (8, lambda: distscan.cumsum(x32, compensated=True, out=y32, algorithm=alg), y32),
            "compensated f64": (16, lambda: distscan.cumsum(x64, compensated=True, out=y64, algorithm=alg), y64),
            "nancumsum f32": (8, lambda: distscan.nancumsum(xnan, out=y32, algorithm=alg), y32),
            "nanmax f32": (8, lambda: distscan.scan(xnan, "nanmax", out=y32, algorithm=alg), y32),
            "max f32": (8, lambda: distscan.cummax(x32, out=y32, algorithm=alg), y32),
            "reverse max f32": (8, lambda: distscan.cummax(x32, reverse=True, out=y32, algorithm=alg), y32),
            "max f64": (16, lambda: distscan.cummax(x64, out=y64, algorithm=alg), y64),
            "min f32": (8, lambda: distscan.cummin(x32, out=y32, algorithm=alg), y32),
            "nanmin f32": (8, lambda: distscan.scan(xnan, "nanmin", out=y32, algorithm=alg), y32),
            "max f16": (4, lambda: distscan.cummax(x16, out=y16, algorithm=alg), y16),
            "max i32": (8, lambda: distscan.cummax(xl, out=yl, algorithm=alg), yl),
            "max i64": (16, lambda: distscan.cummax(xg, out=yg, algorithm=alg), yg),
            "cumsum f32": (8, lambda: distscan.cumsum(x32, out=y32, algorithm=alg), y32),
            "gcd i64": (16, lambda: distscan.scan(xg, np.gcd, out=yg, algorithm=alg), yg),
            "lcm i32": (8, lambda: distscan.scan(xl, np.lcm, out=yl, algorithm=alg), yl),
            "reverse cumsum f32": (8, lambda: distscan.cumsum(x32, reverse=True, out=y32, algorithm=alg), y32),
            "segmented sum f32": (9, lambda: distscan.cumsum(x32, segments=flags, out=y32, algorithm=alg), y32),
            "recurrence f32": (12, lambda: distscan.linear_recurrence(coef, x32, out=y32, algorithm=alg), y32),
        }

    table = {alg: scans(alg) for alg in ALGOS}
    rows = []
    for name in table["auto"]:
        if a.scans and name not in a.scans.split(","):
            continue
        bpe, auto_fn, out = table["auto"][name]
        auto_fn()
        ref = out.copy()
        if name.startswith("logcumsumexp"):
            m = 1 << 16
            want = np.logaddexp.accumulate(cp.asnumpy(x64[:m]))
            err = float(np.max(np.abs(cp.asnumpy(ref[:m]).astype(np.float64) - want) / (1 + np.abs(want))))
            print(f"# {name}: auto within {err:.1e} of NumPy float64 on the first 2^16", flush=True)
        impls, status = {}, {}
        for alg in ALGOS:
            fn = table[alg][name][1]
            try:
                fn()
                # another association of float sums: within 1e-4 (f32) of the largest |prefix|
                scale = (1 + cp.abs(ref)) if name.startswith("log") else (1 + float(cp.max(cp.abs(ref))))
                bad = float(cp.max(cp.abs(out.astype(cp.float64) - ref) / scale))
                ok = bad <= (1e-4 if "f32" in name else 1e-9) or alg == "auto"
                status[alg] = f"{bad:.1e}" if ok else f"DIFFERS {bad:.1e}"
                if ok:
                    impls[alg] = fn
            except Exception as exc:  # noqa: BLE001 - a combination the API refuses: say so
                status[alg] = f"{type(exc).__name__}: {exc}"[:80]
        if torch is not None and name.startswith("logcumsumexp"):
            t = torch.as_tensor(x32 if "f32" in name else x64, device="cuda")
            impls["torch"] = lambda t=t: torch.logcumsumexp(t, 0)
        med = events_interleaved(impls, a.reps, hide_host=True)
        row = {"scan": name, "bytes_per_item": bpe, "check": status,
               "gbs": {k: bpe * n / v / 1e9 for k, v in med.items()}}
        rows.append(row)
        print(f"# {name}: " + ", ".join(f"{k} {v:.0f} GB/s" for k, v in row["gbs"].items()) + f"  ({status})",
              flush=True)
    gpu = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    print(f"{gpu}, 2^{a.log2n} items, GB/s over each scan's bytes (median of {a.reps}, GPU time):")
    print(f"{'scan':<20}" + "".join(f"{k:>11}" for k in ALGOS + ("torch",)) + "  lookback/auto")
    for r in rows:
        g = r["gbs"]
        cells = "".join(f"{g[k]:>11.0f}" if k in g else f"{'-':>11}" for k in ALGOS + ("torch",))
        ratio = f"{g['lookback'] / g['auto']:>13.2f}" if "lookback" in g else ""
        print(f"{r['scan']:<20}" + cells + ratio)
    if a.json:
        Path(a.json).write_text(json.dumps({"gpu": gpu, "log2n": a.log2n, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
