"""How fast are float products on the GPU once the zero-absorption repair runs?

    PYTHONPATH=$PWD python3 benchmarks/bench_products.py OUT.json [--log2n 27] [--reps 7]

A float product scan combined tile by tile can meet a zero with a partial product that overflowed
on its own (0 * inf = NaN where ``numpy.cumprod`` stays 0), so distscan repairs its results on the
GPU (``backends/absorb.py``) wherever a zero appears: a product of probabilities that underflows
does.  Timed: ``distscan.cumprod`` of float32 and float64 whose running product underflows to 0
(items uniform in [0.9, 1.0)) and of items near 1 whose product stays finite over the scan
(segmented, one flag in a thousand), one column and 4 columns, against ``cupy.cumprod`` and
``torch.cumprod`` (no repair: they give NaN where NumPy gives 0 only if an inf meets a zero, which
these inputs never make) and the same run's device copy.  Results checked against CuPy's (within
1e-4 relative, or a million times the smallest normal number).  GPU time (harness.events_interleaved, hide_host,
L2 flushed), median of --reps.
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
from harness import SELF, copy_bandwidth, events_interleaved  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--log2n", type=int, default=27)
    ap.add_argument("--reps", type=int, default=7)
    a = ap.parse_args()
    try:
        import torch
    except ImportError:
        torch = None
    n = 1 << a.log2n
    rs = cp.random.RandomState(5)
    copy_gbs = copy_bandwidth(4 * n, a.reps)
    flags = rs.random_sample(n) < 1e-3
    rows = []
    for dt in ("float32", "float64"):
        for label, lo, hi, segmented, w in [("underflows to 0", 0.9, 1.0, False, 1),
                                            ("underflows to 0, 4 columns", 0.9, 1.0, False, 4),
                                            ("segmented, no zero", 0.99, 1.01, True, 1)]:
            x = rs.uniform(lo, hi, n).astype(dt).reshape(n // w, w)
            seg = flags[: n // w] if segmented else None
            y = cp.empty_like(x)
            impls = {"distscan": lambda: distscan.cumprod(x, segments=seg, out=y, comm=SELF)}
            if not segmented:
                yc = cp.empty_like(x)
                impls["cupy"] = lambda: cp.cumprod(x, axis=0, out=yc)
                if torch is not None and w == 1:  # (4 columns along axis 0: 4.7 s at 2^27, H200)
                    tx = torch.as_tensor(x, device="cuda")
                    impls["torch"] = lambda: torch.cumprod(tx, 0)
            impls["distscan"]()
            if not segmented:
                want = cp.cumprod(x, axis=0)
                tiny = float(np.finfo(dt).tiny) * 2 ** 20  # (near underflow the two orders round apart)
                assert bool(cp.allclose(y, want, rtol=1e-4, atol=tiny)), f"{dt} {label}: differs from CuPy"
                assert bool((y[-1] == 0).all()), f"{dt} {label}: the product did not reach 0"
            med = events_interleaved(impls, a.reps, hide_host=True)
            nbytes = 2 * x.nbytes + (n // w if segmented else 0)
            row = {"dtype": dt, "case": label, "copy_gbs": copy_gbs,
                   **{k: {"ms": t * 1e3, "gbs": nbytes / t / 1e9} for k, t in med.items()}}
            rows.append(row)
            peers = "  ".join(f"{k} {v['ms']:.3f} ms" for k, v in row.items() if isinstance(v, dict) and k != "distscan")
            print(f"{dt} {label:28s} distscan {row['distscan']['ms']:.3f} ms "
                  f"({row['distscan']['gbs'] / copy_gbs:.3f} of copy)  {peers}", flush=True)
            del x, y, impls
    dev = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    print(f"\n{dev}, 2^{a.log2n}, copy {copy_gbs:.0f} GB/s, {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
    Path(a.out).write_text(json.dumps({"device": dev, "log2n": a.log2n, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
