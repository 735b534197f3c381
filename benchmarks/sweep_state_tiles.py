"""Which tile shape and reduction lead make the state scans fastest on this GPU?

    PYTHONPATH=$PWD python3 benchmarks/sweep_state_tiles.py OUT.json [--log2n 27] [--reps 11] [--device lookahead]
        [--scans NAMES] [--shapes JSON]

``--leads auto,0`` tries only these leads (``auto``: the default plan's; a number: that multiple
of it).  ``--shapes '{"8": [[128, 16, 1024, 3, 5, 3, 2]], "16": [...]}'`` replaces the lists below (by the
state's size) with these shapes, after the default.  ``--device lookahead`` sweeps the look-ahead kernel's shapes (threads, items, window, blocks per
SM, stages, depth, behind) instead, whose ring stages the flags and coefficients beside the items
(kernels/agent/agent_lookahead.cuh), each scan with ``algorithm="lookahead"`` against its default
("auto": the look-back with its lead) in the same repetitions.

"auto" runs segmented scans and linear recurrences on the look-back kernel (faster than the
look-ahead for them: RESULTS.md, "Flags and coefficients in the look-ahead kernel's ring"), with the tile shape
``tuning.choose_tuning`` picks by the size of the state (8 bytes: SegState<float>,
AffState<float>; 16 bytes: SegState<long long>, AffState<double>) and the reduction lead
``plans.setup_lead`` picks by bytes per item.  Both were measured for plain sums, not for states:
this sweeps shapes (threads, items per thread, blocks per SM) and leads (auto, none, and 0.5, 2
and 4 times the default plan's) per state scan, through the API with ``cuda.overrides(tuning=, lead=)``, and prints
GB/s over each scan's bytes per element (as bench_operators.py counts them) and the fraction of
the same run's device-to-device copy.

Timing: harness.events_interleaved with ``hide_host`` (the kernels' own time: the overrides'
host work is hidden), every variant of one scan in turn within each repetition, L2 flushed,
median of --reps.  Every variant's result is checked against the default's first (integers bit
for bit, floats within 1e-5 of the largest value).
"""

from __future__ import annotations

import argparse
import copy as copy_module
import datetime
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
from harness import copy_bandwidth, events_interleaved, lead_multiples, lead_of  # noqa: E402
from mpi4py import MPI  # noqa: E402

SELF = MPI.COMM_SELF

# (threads, items, window, min_blocks): the default first, then the value sizes' shapes that were
# the default before 2026-11-23 (256, 16, 3 | 256, 8, 1), then others, by the state's size
SHAPES = {
    8: [None, (256, 16, 1024, 3), (128, 32, 1024, 4), (128, 16, 1024, 6), (256, 32, 1024, 2),
        (128, 32, 1024, 5), (128, 16, 1024, 7)],
    16: [None, (256, 8, 1024, 1), (128, 16, 1024, 2), (128, 8, 1024, 4), (256, 16, 1024, 1),
         (128, 16, 1024, 3), (128, 16, 1024, 4)],
    # the segmented 16-byte maps (AffStartsState<double>, <complex<float>>: 24 bytes) and the
    # complex128 maps (32 bytes), whose default (256, 8, 1) is the value sizes' fallback
    24: [None, (128, 16, 1024, 2), (128, 8, 1024, 2), (128, 8, 1024, 3), (64, 16, 1024, 3), (128, 32, 1024, 1),
         (256, 8, 1024, 2)],
    # the segmented complex128 sums (SegState<complex<double>>: 32 bytes) and maps (48): on the
    # fallback (256, 8, 1) until the fifty-fifth session (tuning.py: 64 x 32 and 128 x 16 now)
    32: [None, (128, 16, 1024, 2), (128, 8, 1024, 2), (128, 16, 1024, 3), (64, 16, 1024, 4), (128, 32, 1024, 1),
         (128, 32, 1024, 2)],
}
# the reduction lead: the default plan's (auto), none, and multiples of the default's (of the lead
# plans.STATE_LEAD_SHARE gives where the default plan has none)
LEADS = [None, 0, 0.5, 1, 2, 4]
# --device lookahead: (threads, items, window, min_blocks, stages, depth, behind), the default first
LOOKAHEAD_SHAPES = {
    8: [None, (128, 16, 1024, 3, 4, 2, 2), (64, 16, 1024, 4, 6, 4, 2), (128, 32, 1024, 1, 5, 3, 2),
        (64, 32, 1024, 2, 6, 4, 2), (128, 16, 1024, 2, 8, 6, 2)],
    16: [None, (64, 16, 1024, 2, 6, 4, 2), (64, 16, 1024, 3, 4, 2, 2), (128, 16, 1024, 1, 7, 5, 2),
         (64, 32, 1024, 1, 5, 3, 2)],
    24: [None, (64, 16, 1024, 2, 5, 3, 2), (64, 16, 1024, 2, 4, 2, 2), (128, 8, 1024, 1, 6, 4, 2),
         (64, 8, 1024, 3, 5, 3, 2)],
}


def cases(n):
    """(name, bytes per element, size class of the state, the call, its output)."""
    rs = cp.random.RandomState(7)
    x = rs.standard_normal(n, dtype=cp.float32)
    xi = rs.randint(-1000, 1000, n).astype(cp.int64)
    flags = rs.random_sample(n) < 1e-3
    a32 = rs.uniform(0.5, 1.0, n).astype(cp.float32)
    a64, b64 = a32.astype(cp.float64), x.astype(cp.float64)
    a_c = (a32 * cp.exp(1j * rs.uniform(0, 6.28, n))).astype(cp.complex64)
    b_c = (x + 1j * x[::-1]).astype(cp.complex64)
    y, yi, y64, y_c = cp.empty_like(x), cp.empty_like(xi), cp.empty_like(b64), cp.empty_like(b_c)
    a_c128, b_c128, y_c128 = a_c.astype(cp.complex128), b_c.astype(cp.complex128), cp.empty(n, cp.complex128)
    u_c128 = cp.exp(1j * rs.uniform(0, 6.28, n)).astype(cp.complex128)
    return [  # each call takes algorithm=
        ("segmented sum f32", 9, 8, lambda alg: distscan.cumsum(x, segments=flags, out=y, comm=SELF, algorithm=alg),
         y),
        ("segmented sum f32 reverse", 9, 8, lambda alg: distscan.cumsum(x, segments=flags, reverse=True, out=y,
                                                                        comm=SELF, algorithm=alg), y),
        ("segmented sum i64", 17, 16, lambda alg: distscan.cumsum(xi, segments=flags, out=yi, comm=SELF,
                                                                  algorithm=alg), yi),
        ("recurrence f32", 12, 8, lambda alg: distscan.linear_recurrence(a32, x, out=y, comm=SELF, algorithm=alg), y),
        ("recurrence f32 segments", 13, 16, lambda alg: distscan.linear_recurrence(a32, x, segments=flags, out=y,
                                                                                   comm=SELF, algorithm=alg), y),
        ("recurrence f32 segments reverse", 13, 16,
         lambda alg: distscan.linear_recurrence(a32, x, segments=flags, reverse=True, out=y, comm=SELF,
                                                algorithm=alg), y),
        ("recurrence f64", 24, 16, lambda alg: distscan.linear_recurrence(a64, b64, out=y64, comm=SELF,
                                                                          algorithm=alg), y64),
        ("recurrence c64", 24, 16, lambda alg: distscan.linear_recurrence(a_c, b_c, out=y_c, comm=SELF,
                                                                          algorithm=alg), y_c),
        ("recurrence f64 segments", 25, 24, lambda alg: distscan.linear_recurrence(
            a64, b64, segments=flags, out=y64, comm=SELF, algorithm=alg), y64),
        ("recurrence c64 segments", 25, 24, lambda alg: distscan.linear_recurrence(
            a_c, b_c, segments=flags, out=y_c, comm=SELF, algorithm=alg), y_c),
        ("recurrence c64 segments reverse", 25, 24, lambda alg: distscan.linear_recurrence(
            a_c, b_c, segments=flags, reverse=True, out=y_c, comm=SELF, algorithm=alg), y_c),
        ("recurrence c128", 48, 24, lambda alg: distscan.linear_recurrence(
            a_c128, b_c128, out=y_c128, comm=SELF, algorithm=alg), y_c128),
        ("segmented sum c128", 33, 32, lambda alg: distscan.cumsum(b_c128, segments=flags, out=y_c128, comm=SELF,
                                                                  algorithm=alg), y_c128),
        ("recurrence c128 segments", 49, 32, lambda alg: distscan.linear_recurrence(
            a_c128, b_c128, segments=flags, out=y_c128, comm=SELF, algorithm=alg), y_c128),
        ("segmented sum c128 reverse", 33, 32, lambda alg: distscan.cumsum(
            b_c128, segments=flags, reverse=True, out=y_c128, comm=SELF, algorithm=alg), y_c128),
        ("recurrence c128 segments reverse", 49, 32, lambda alg: distscan.linear_recurrence(
            a_c128, b_c128, segments=flags, reverse=True, out=y_c128, comm=SELF, algorithm=alg), y_c128),
        # the other SegState<complex128> scans on the 32-byte tile (a complex product a combine):
        # unit-modulus factors keep the products finite
        ("segmented prod c128", 33, 32, lambda alg: distscan.cumprod(u_c128, segments=flags, out=y_c128, comm=SELF,
                                                                    algorithm=alg), y_c128),
        ("segmented prod c128 reverse", 33, 32, lambda alg: distscan.cumprod(
            u_c128, segments=flags, reverse=True, out=y_c128, comm=SELF, algorithm=alg), y_c128),
    ]


def fits(shape, dt, op) -> bool:
    """Whether a look-ahead shape's ring fits one block's shared memory (227 KB)."""
    from distscan._dtypes import scan_types
    from distscan.backends.cuda import compile as cc
    from distscan.backends.cuda import extended

    types = scan_types(op, dt)
    t = cc.choose_tuning(dt, extended.kernel_state(op, types), types.result, shape, "coarsened", "lookahead",
                         extended.struct_state(op))
    return t.lookahead_smem(dt, types.result, extended.staged_aux(op, types)) <= 227 * 1024


CASE_NAMES = ["segmented sum f32", "segmented sum f32 reverse", "segmented sum i64", "recurrence f32",
              "recurrence f32 segments", "recurrence f32 segments reverse", "recurrence f64",
              "recurrence c64", "recurrence f64 segments", "recurrence c64 segments", "recurrence c64 segments reverse",
              "recurrence c128", "segmented sum c128", "recurrence c128 segments",
              "segmented sum c128 reverse", "recurrence c128 segments reverse", "segmented prod c128",
              "segmented prod c128 reverse"]  # cases()' order


def module_keys(n, device="auto", names=None):
    """The extended modules of every case (of ``names``) and shape, to compile in parallel processes first."""
    from distscan.ops.options import call_op
    from distscan._dtypes import scan_types
    from distscan.backends.cuda import extended, plans

    keys, seen = [], []
    for kw, dt, size in [({"segments": 1}, "float32", 8), ({"segments": 1, "reverse": True}, "float32", 8),
                         ({"segments": 1}, "int64", 16), ({"coefficients": 1}, "float32", 8),
                         ({"coefficients": 1, "segments": 1}, "float32", 16),
                         ({"coefficients": 1, "segments": 1, "reverse": True}, "float32", 16),
                         ({"coefficients": 1}, "float64", 16),
                         ({"coefficients": 1}, "complex64", 16), ({"coefficients": 1, "segments": 1}, "float64", 24),
                         ({"coefficients": 1, "segments": 1}, "complex64", 24),
                         ({"coefficients": 1, "segments": 1, "reverse": True}, "complex64", 24),
                         ({"coefficients": 1}, "complex128", 24), ({"segments": 1}, "complex128", 32),
                         ({"coefficients": 1, "segments": 1}, "complex128", 32),
                         ({"segments": 1, "reverse": True}, "complex128", 32),
                         ({"coefficients": 1, "segments": 1, "reverse": True}, "complex128", 32),
                         ({"segments": 1, "base": "prod"}, "complex128", 32),
                         ({"segments": 1, "reverse": True, "base": "prod"}, "complex128", 32)]:
        case = CASE_NAMES[len(seen)]
        seen.append(case)
        if names and case not in names:
            continue
        reverse = kw.get("reverse", False)
        op = call_op(kw.get("base", "sum"), segments=kw.get("segments"), coefficients=kw.get("coefficients"),
                     reverse=reverse)
        dt = np.dtype(dt)
        types = scan_types(op, dt)
        auto = plans.ext_device(op, "auto", n, dt.itemsize, types.result.itemsize, types.result.kind,
                                reverse=reverse, fast_dram=plans.fast_dram(0))
        keys.append(extended.ext_module_key(dt, types, op, auto, reverse))
        for shape in SHAPES[size] if device == "auto" else LOOKAHEAD_SHAPES[size]:
            if device == "lookahead" and not fits(shape, dt, op):
                continue
            with cuda.overrides(tuning=shape):
                dev = plans.ext_device(op, device, n, dt.itemsize, types.result.itemsize, types.result.kind)
                keys.append(extended.ext_module_key(dt, types, op, dev, reverse))
    return keys


def variant(call, tuning, lead, algorithm="auto"):
    def run():
        with cuda.overrides(tuning=tuning, lead=lead):
            call(algorithm)
    return run


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--log2n", type=int, default=27)
    ap.add_argument("--reps", type=int, default=11)
    ap.add_argument("--device", choices=("auto", "lookahead"), default="auto")
    ap.add_argument("--scans", help="comma-separated names of the scans to run (default: all)")
    ap.add_argument("--shapes", help="JSON {state size: [shape, ...]}: these shapes (after the default) instead")
    ap.add_argument("--leads", help="comma-separated leads to try instead of LEADS: auto, 0 or a multiple")
    a = ap.parse_args()
    if a.shapes:
        table = SHAPES if a.device == "auto" else LOOKAHEAD_SHAPES
        for size, shapes in json.loads(a.shapes).items():
            table[int(size)] = [None] + [tuple(s) for s in shapes]
    leads = lead_multiples(a.leads, LEADS)
    n = 1 << a.log2n
    from distscan.backends.cuda import compile as cc
    from distscan.backends.cuda import extended

    t0 = time.perf_counter()
    cc.precompile(module_keys(n, a.device, a.scans.split(",") if a.scans else None))
    print(f"kernels compiled in {time.perf_counter() - t0:.0f} s", flush=True)

    copy_gbs = copy_bandwidth(4 * n, a.reps)
    rows = []
    for name, bytes_per, state_size, call, out in cases(n):
        if a.scans and name not in a.scans.split(","):
            continue
        call("auto")
        want = cp.asnumpy(out).copy()
        plan0 = list(extended.EXT_PLANS.values())[-1]  # the default plan, made by the call above
        lead0 = plan0.lead
        if not lead0:  # no lead by default: the multiples are of the share state scans take elsewhere
            from distscan.backends.cuda import plans
            trial = copy_module.copy(plan0)
            plans.setup_lead(trial, 0, "auto", plans.STATE_LEAD_SHARE)
            lead0 = trial.lead
        print(f"{name}: the default plan's lead {plan0.lead} (multiples of {lead0})", flush=True)
        impls = {}
        t0 = time.perf_counter()
        if a.device == "auto":
            variants = [(f"{shape or 'default'} lead={lead_v if lead_v is not None else 'auto'}", shape, lead_v, "auto")
                        for shape in SHAPES[state_size] for lead in leads if not (lead == 1 and lead0 == plan0.lead)
                        for lead_v in [lead_of(lead, lead0)]]
        else:
            variants = [("auto (default)", None, None, "auto")] + [
                (f"lookahead {shape or 'default'}", shape, None, "lookahead") for shape in LOOKAHEAD_SHAPES[state_size]]
        for label, shape, lead_v, algorithm in variants:
            fn = variant(call, shape, lead_v, algorithm)
            try:
                fn()
            except RuntimeError as exc:  # a ring that does not fit this GPU
                print(f"{name} {label}: {exc}", flush=True)
                continue
            got = cp.asnumpy(out)
            if want.dtype.kind == "i":
                assert np.array_equal(got, want), f"{name} {label}: differs"
            else:
                assert np.allclose(got, want, rtol=0, atol=1e-5 * (np.abs(want).max() + 1)), f"{name} {label}"
            impls[label] = fn
        print(f"{name}: {len(impls)} variants compiled and checked in {time.perf_counter() - t0:.0f} s", flush=True)
        med = events_interleaved(impls, a.reps, hide_host=True)
        for label, t in med.items():
            gbs = bytes_per * n / t / 1e9
            rows.append({"scan": name, "variant": label, "ms": t * 1e3, "gbs": gbs, "of_copy": gbs / copy_gbs})
    dev = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    print(f"\n{dev}, 2^{a.log2n}, copy {copy_gbs:.0f} GB/s, {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC")
    print("| scan | variant (threads, items, window, min blocks) | ms | GB/s | of copy |\n|---|---|---|---|---|")
    for r in sorted(rows, key=lambda r: (r["scan"], -r["gbs"])):
        print(f"| {r['scan']} | {r['variant']} | {r['ms']:.3f} | {r['gbs']:.0f} | {r['of_copy']:.3f} |")
    Path(a.out).write_text(json.dumps({"device": dev, "log2n": a.log2n, "copy_gbs": copy_gbs, "rows": rows},
                                      indent=1))


if __name__ == "__main__":
    main()
