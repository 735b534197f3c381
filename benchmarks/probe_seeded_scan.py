#!/usr/bin/env python3
"""What does a seed cost the scans of the extended path (reverse, segmented, recurrences,
compensated) on one GPU, against the same scan without one?

    PYTHONPATH=$PWD python3 benchmarks/probe_seeded_scan.py OUT.json [--log2n 28] [--reps 15]

Question (issue 30's rows on 2 GPUs, 2026-11-26, benchmarks/RESULTS.md): on the last of two
ranks the seeded scan phase of a reverse cumsum, a segmented sum, a recurrence and a
compensated sum took 38-51 µs more than the same rank's part scanned alone (one rank, no seed),
while the plain cumsum's seeded scan (the hot path, its seed a kernel argument) took what it
took alone.  Is it the host's work for a seed (the seed's copy to the device through CuPy, the
extended call's checks) or the kernel's?

Each scan is a :class:`distscan.dist.plan.ScanPlan` of one rank on the CUDA backend, called as a
pipeline calls it (``seeded_scan(rows, seed, out, aux=...)``), with ``seed`` None and with the
carry of its own part (``local_carry``: a seed of the plan's own form, as the exchange gives it).
Times, median of --reps, the calls in a new random order each repetition, L2 flushed:

- ``wall``: the host's ``perf_counter`` around the call and a device synchronisation;
- ``gpu``: CUDA events around the call with the host's work hidden behind a sleep on the GPU
  (``harness.events_interleaved(hide_host=True)``), so the kernel's time alone.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness import cp, events_interleaved  # noqa: E402


def _wall(fn, reps: int) -> float:
    times = []
    for _ in range(reps):
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        fn()
        cp.cuda.Device().synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json_out")
    ap.add_argument("--log2n", type=int, default=28)
    ap.add_argument("--reps", type=int, default=15)
    a = ap.parse_args()
    from distscan.dist.plan import ScanPlan
    from distscan.ops import derive, get_op

    n = 1 << a.log2n
    rs = cp.random.RandomState(7)
    x = rs.standard_normal(n, dtype=cp.float32)
    flags = rs.random_sample(n) < 1e-3
    coef = rs.uniform(0.5, 1.0, n).astype(cp.float32)
    y = cp.empty_like(x)
    s = get_op("sum")
    cases = {  # name: (operator, reverse, aux)
        "cumsum f32": (s, False, ()),
        "reverse cumsum f32": (s, True, ()),
        "segmented sum f32": (derive.segmented(s), False, (flags,)),
        "recurrence f32": (derive.affine(), False, (coef,)),
        "compensated f32": (derive.compensated(s), False, ()),
    }
    impls = {}
    for name, (op, reverse, aux) in cases.items():
        plan = ScanPlan(op, np.float32, backend="cuda", reverse=reverse)
        seed = plan.local_carry(x, aux)
        for label, sd in (("unseeded", None), ("seeded", seed)):
            impls[f"{name} {label}"] = (lambda p=plan, sd=sd, aux=aux: p.seeded_scan(x, sd, out=y, aux=aux))
    for fn in impls.values():  # compile and warm
        fn()
    gpu = events_interleaved(impls, a.reps, hide_host=True)
    wall = {k: _wall(fn, a.reps) for k, fn in impls.items()}
    rows = [{"call": k, "gpu_s": gpu[k], "wall_s": wall[k]} for k in impls]
    name = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    Path(a.json_out).write_text(json.dumps({"gpu": name, "log2n": a.log2n, "rows": rows}, indent=1))
    print(f"{name}, 2^{a.log2n} float32, median of {a.reps}, µs: GPU only | wall (host + GPU + sync)")
    for case in cases:
        u, s_ = f"{case} unseeded", f"{case} seeded"
        print(f"{case:<20} unseeded {gpu[u] * 1e6:8.1f} | {wall[u] * 1e6:8.1f}   seeded {gpu[s_] * 1e6:8.1f} | "
              f"{wall[s_] * 1e6:8.1f}   seed costs GPU {1e6 * (gpu[s_] - gpu[u]):+6.1f}, wall {1e6 * (wall[s_] - wall[u]):+6.1f}")


if __name__ == "__main__":
    main()
