"""Which device algorithm and tile shape suit the scans whose operator is costly, now that a
thread scans its run in the operator's run state (kernels/util/operators.cuh, RUN_STATE)?

    PYTHONPATH=$PWD python3 benchmarks/sweep_costly_tiles.py [--log2n 27] [--reps 11] [--json OUT]
        [--scans NAMES] [--shapes JSON] [--leads auto,0,0.5,2]

``--shapes '[[128, 32, 1024, 4], ...]'`` replaces the look-back's shapes (after the default) and
drops the look-ahead's; ``--lookahead '[[128, 16, 1024, 2, 7, 5, 2], ...]'`` replaces those (a
ring that does not fit beside the kernel's static shared memory is skipped with a line);
``--leads`` replaces the look-back's leads (the plan's own and off) with these multiples of the
default plan's lead (``auto``: the plan's own; 0: off).

Question: the tile shapes of ``tuning.choose_tuning`` were measured for sums (one instruction an
application) and for the segmented and affine states.  logaddexp and the compensated sum spend
tens of instructions an item; their run state keeps the items as loaded (no second array of
states: a compensated item's error is the constant 0), so longer runs, which spread the warp's
and the block's applications over more items, may now fit.  Each scan is timed with
``algorithm="lookback"`` and ``"lookahead"`` on its default shape and on the shapes below
(``cuda.overrides(tuning=)``), beside the plain sum of the same dtype on its default (the compensated
sum's target is at most 1.15x its time: issue 30), and with the look-back's reduction lead off
(``lead=0``).

Timing: harness.events_interleaved with ``hide_host`` (GPU time; L2 flushed; every variant of a
scan in turn each repetition, in a new random order), median of --reps.  Every variant's result
is checked first against the default's: within 1e-5 (float32) or 1e-12 (float64) of 1 + |value|.
Modules are compiled first, in parallel processes.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import cupy as cp  # noqa: E402

import distscan  # noqa: E402
from distscan.backends import cuda  # noqa: E402
from harness import SELF, events_interleaved, lead_multiples, lead_of  # noqa: E402

# (device, (threads, items, window, min blocks[, stages, depth, behind])): None is the default shape
SHAPES = {
    "lookback": [None, (256, 32, 1024, 2), (128, 32, 1024, 4), (512, 16, 1024, 2), (256, 64, 1024, 1),
                 (128, 32, 1024, 6), (64, 32, 1024, 8), (128, 64, 1024, 2), (256, 32, 1024, 3), (128, 16, 1024, 8)],
    "lookahead": [None, (64, 32, 1024, 3, 9, 7, 2), (128, 32, 1024, 1, 7, 5, 2), (64, 32, 1024, 2, 7, 5, 2)],
}


def fits(device, shape, dt) -> bool:
    """Whether a look-ahead shape's ring fits one block's shared memory (227 KB)."""
    from distscan.backends.cuda import compile as cc

    return device != "lookahead" or shape is None or cc.Tuning(*shape).lookahead_smem(dt, dt) <= 227 * 1024


# (name, bytes per element, operator, dtype): the plain sums are their dtype's baseline, timed on
# their default shape only
ROWS = [("cumsum f32", 8, "sum", "float32"), ("cumsum f64", 16, "sum", "float64"),
        ("cumsum c128", 32, "sum", "complex128"),
        ("compensated f32", 8, "compensated", "float32"), ("compensated f64", 16, "compensated", "float64"),
        ("compensated c128", 32, "compensated", "complex128"),
        ("logcumsumexp f32", 8, "logaddexp", "float32"), ("logcumsumexp f64", 16, "logaddexp", "float64")]


def operator(kind):
    from distscan.ops import compensated, get_op

    return compensated(get_op("sum")) if kind == "compensated" else get_op(kind)


def calls(n, dtypes=()):
    """{dtype: (input, output)} of seeded data (complex128 only where ``dtypes`` has it), and the call
    of a row given algorithm=."""
    rs = cp.random.RandomState(11)
    x32 = rs.standard_normal(n, dtype=cp.float32)
    x64 = x32.astype(cp.float64)
    data = {"float32": (x32, cp.empty_like(x32)), "float64": (x64, cp.empty_like(x64))}
    if "complex128" in dtypes:
        x128 = (x64 + 1j * x64[::-1]).astype(cp.complex128)
        data["complex128"] = (x128, cp.empty_like(x128))

    def call(kind, dt):
        x, y = data[dt]
        if kind == "compensated":
            return lambda alg: distscan.cumsum(x, compensated=True, out=y, algorithm=alg, comm=SELF)
        return lambda alg: distscan.scan(x, kind, out=y, algorithm=alg, comm=SELF)

    return data, call


def module_keys(rows):
    """The modules of the rows' variants, to compile in parallel processes first."""
    from distscan._dtypes import scan_types
    from distscan.backends.cuda import extended
    from distscan.backends.cuda import plans

    keys = []
    for name, _, kind, dt in rows:
        op, dt = operator(kind), np.dtype(dt)
        types = scan_types(op, dt)
        for device, shapes in SHAPES.items():
            for shape in shapes if kind != "sum" else [None]:
                if not fits(device, shape, dt):
                    continue
                with cuda.overrides(tuning=shape):
                    if op.state is not None:
                        keys.append(extended.ext_module_key(dt, types, op, device, False))
                    else:
                        keys.append(plans.module_key(dt, types, op, device if kind != "sum" else "auto"))
    return keys


def variant(call, device, shape, lead=None):
    def run():
        with cuda.overrides(tuning=shape, lead=lead):
            call(device)
    return run


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--log2n", type=int, default=27)
    ap.add_argument("--reps", type=int, default=11)
    ap.add_argument("--json")
    ap.add_argument("--scans", help="comma-separated names of the rows to run (default: all)")
    ap.add_argument("--shapes", help="JSON list of look-back shapes (after the default) instead; no look-ahead")
    ap.add_argument("--leads", help="comma-separated multiples of the default plan's lead (auto: its own, 0: none) "
                    "instead")
    ap.add_argument("--lookahead", help="JSON list of look-ahead shapes [threads, items, window, min blocks, stages, "
                    "depth, behind] (after the default) instead; with --shapes, the look-ahead kept")
    a = ap.parse_args()
    if a.shapes:
        SHAPES["lookback"] = [None] + [tuple(s) for s in json.loads(a.shapes)]
        SHAPES["lookahead"] = []
    if a.lookahead:
        SHAPES["lookahead"] = [None] + [tuple(s) for s in json.loads(a.lookahead)]
    multiples = lead_multiples(a.leads, [None, 0])
    n = 1 << a.log2n
    from distscan.backends.cuda import compile as cc
    from distscan.backends.cuda import extended

    chosen = [r for r in ROWS if not a.scans or r[0] in a.scans.split(",")]
    chosen = [r for r in ROWS if r in chosen or (r[2] == "sum" and r[3] in {c[3] for c in chosen})]  # baselines
    t0 = time.perf_counter()
    cc.precompile(module_keys(chosen))
    print(f"# kernels compiled in {time.perf_counter() - t0:.0f} s", flush=True)
    data, call_of = calls(n, {r[3] for r in chosen})
    rows = []
    base = {}
    for name, bpe, kind, dt in chosen:
        call, out = call_of(kind, dt), data[dt][1]
        call("auto")
        want = out.copy()
        lead0 = list(extended.EXT_PLANS.values())[-1].lead if kind != "sum" else 0
        tol = 1e-5 if dt == "float32" else 1e-12
        impls = {"auto": lambda call=call: call("auto")}
        for device, shapes in SHAPES.items():
            for shape in shapes if kind != "sum" else []:
                if not fits(device, shape, np.dtype(dt)):
                    continue
                for m in multiples if device == "lookback" else (None,):
                    lead = lead_of(m, lead0)
                    ring = (shape if device == "lookahead" else shape[:4]) if shape else "default"
                    label = f"{device} {ring}" + ("" if m is None else f" lead {lead}")
                    fn = variant(call, device, shape, lead)
                    try:
                        fn()
                    except RuntimeError as e:  # a ring past the SM's shared memory with the static part
                        print(f"# {name} {label}: {e}", flush=True)
                        continue
                    wide = out.astype(cp.complex128 if out.dtype.kind == "c" else cp.float64)
                    bad = float(cp.max(cp.abs(wide - want) / (1 + cp.abs(want))))
                    if not bad <= tol:
                        print(f"# {name} {label}: DIFFERS by {bad:.1e}", flush=True)
                        continue
                    impls[label] = fn
        med = events_interleaved(impls, a.reps, hide_host=True)
        if kind == "sum":
            base[dt] = med["auto"]
        for label, t in med.items():
            rows.append({"scan": name, "variant": label, "us": t * 1e6, "gbs": bpe * n / t / 1e9,
                         "over_cumsum": t / base[dt]})
        print(f"# {name}: done", flush=True)
    dev = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    print(f"{dev}, 2^{a.log2n} items, GPU time (median of {a.reps}); x cumsum: time over the cumsum's of the dtype")
    print(f"{'scan':<18} {'variant':<40} {'us':>9} {'GB/s':>7} {'x cumsum':>9}")
    for r in sorted(rows, key=lambda r: (r["scan"], r["us"])):
        print(f"{r['scan']:<18} {r['variant']:<40} {r['us']:>9.1f} {r['gbs']:>7.0f} {r['over_cumsum']:>9.3f}")
    if a.json:
        Path(a.json).write_text(json.dumps({"gpu": dev, "log2n": a.log2n, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
