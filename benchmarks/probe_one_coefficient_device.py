"""Which device algorithm should "auto" take for a linear recurrence of one (tame) coefficient?

    PYTHONPATH=$PWD python3 benchmarks/probe_one_coefficient_device.py [--log2n 24,27,29] [--reps 9]

``linear_recurrence(0.93, b)`` (a Python scalar: one device word, tame, ``ModuleKey.coef_one`` 2)
on the look-back and the look-ahead kernel, forward and reverse, with and without segments (1 flag
in 1000), float32, float64 and complex64 (the 8-byte items at 2^27 only), against copy and the
plain float32 cumsum in the same interleaved runs (harness.events_interleaved, GPU time, the host
hidden, L2 flushed).  Bytes: b and y.  Every result is checked against the float64 (complex128)
recurrence (relative error <= 1e-3 of the scale) and look-back against look-ahead.  Plans rest
on it: ``plans.aux_looks_ahead``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import cupy as cp  # noqa: E402

import distscan  # noqa: E402
from distscan._dtypes import scan_types  # noqa: E402
from distscan.backends.cuda import compile as cc  # noqa: E402
from distscan.backends.cuda.ext_states import ext_module_key  # noqa: E402
from distscan.ops import affine  # noqa: E402
from harness import SELF, copy_bandwidth, events_interleaved  # noqa: E402

DEVICES = ("lookback", "lookahead")
A0 = {"float32": 0.93, "float64": 0.93, "complex64": 0.6 + 0.7j}


def cases(log2ns):
    for log2n in log2ns:
        for dtype in ("float32", "float64", "complex64"):
            if dtype != "float32" and log2n != 27:
                continue
            for reverse in (False, True):
                for segmented in (False, True):
                    yield log2n, dtype, reverse, segmented


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--log2n", default="24,27,29")
    ap.add_argument("--reps", type=int, default=9)
    args = ap.parse_args()
    log2ns = [int(v) for v in args.log2n.split(",")]
    keys = set()
    for _, dtype, reverse, segmented in cases(log2ns):
        op, dt = affine(segmented, reverse), np.dtype(dtype)
        for device in DEVICES:
            keys.add(ext_module_key(dt, scan_types(op, dt), op, device, reverse, 2))
    cc.precompile(sorted(keys, key=repr))
    copies = {}
    print(f"{'log2n':>5} {'dtype':9} {'rev':>3} {'seg':>3} {'lookback':>9} {'lookahead':>9} {'ahead/back':>10} "
          f"{'back/copy':>9} {'ahead/copy':>10} {'cumsum32':>8}  GB/s (b and y)")
    for log2n, dtype, reverse, segmented in cases(log2ns):
        n = 1 << log2n
        rs = cp.random.RandomState(log2n)
        b = rs.standard_normal(n).astype(dtype)
        if np.dtype(dtype).kind == "c":
            b = b + 1j * rs.standard_normal(n).astype(dtype)
        flags = (rs.random_sample(n) < 1e-3) if segmented else None
        kw = dict(comm=SELF, reverse=reverse)
        if segmented:
            kw["segments"] = flags
        outs = {d: cp.empty_like(b) for d in DEVICES}
        impls = {d: (lambda d=d: distscan.linear_recurrence(A0[dtype], b, out=outs[d], algorithm=d, **kw))
                 for d in DEVICES}
        x32 = b.real.astype(cp.float32) if b.dtype != cp.float32 else b
        y32 = cp.empty_like(x32)
        impls["cumsum32"] = lambda: distscan.cumsum(x32, out=y32, comm=SELF)
        for fn in impls.values():
            fn()
        wide = np.complex128 if np.dtype(dtype).kind == "c" else np.float64
        want = distscan.linear_recurrence(cp.full(n, A0[dtype], wide), b.astype(wide), **kw)
        scale = float(cp.abs(want).max())
        for d in DEVICES:
            err = float(cp.abs(outs[d].astype(wide) - want).max()) / scale
            assert err <= 1e-3, (log2n, dtype, reverse, segmented, d, err)
        same = bool((outs["lookback"] == outs["lookahead"]).all())
        times = events_interleaved(impls, args.reps, hide_host=True)
        nbytes = n * b.itemsize  # (a copy of them moves twice that, as the scan: b read, y written)
        if nbytes not in copies:
            copies[nbytes] = copy_bandwidth(nbytes, 9)
        gb = {k: (2 * n * (4 if k == "cumsum32" else b.itemsize)) / t / 1e9 for k, t in times.items()}
        cbw = copies[nbytes]
        print(f"{log2n:>5} {dtype:9} {int(reverse):>3} {int(segmented):>3} {gb['lookback']:9.0f} {gb['lookahead']:9.0f} "
              f"{times['lookback'] / times['lookahead']:10.3f} {gb['lookback'] / cbw:9.3f} {gb['lookahead'] / cbw:10.3f} "
              f"{gb['cumsum32']:8.0f}  copy {cbw:.0f}{'' if same else '  (bits differ)'}", flush=True)


if __name__ == "__main__":
    main()
