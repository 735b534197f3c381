"""Where does a columns scan of states spend its time?  Each of its kernels alone (reduce, carry,
scan) against the plain module's for the same bytes, and variants that leave one input out.

    PYTHONPATH=$PWD python3 benchmarks/probe_state_columns.py [--log2n 27] [--w 4] [--reps 7]
    ncu --clock-control none -k regex:column_tiles python3 benchmarks/probe_state_columns.py --once [--only NAME]

float32 items as (2^log2n / w, w) rows: the plain forward sum (tiles_reduce, tiles_incl), the
reverse sum, the segmented sum (flags a row; and with its flags left out: the operator's own
cost), the recurrence (coefficients; and without them, a = 0) and the reverse recurrence.  GPU time
(harness.events_interleaved, hide_host, L2 flushed), median of --reps, ms, and GB/s over the
bytes each kernel moves.  ``--once``: each kernel once, for a profiler; ``--only``: the cases whose
name contains it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import cupy as cp  # noqa: E402

from distscan._dtypes import scan_types  # noqa: E402
from distscan.backends.cuda import columns, plans, state_columns  # noqa: E402
from distscan.backends.cuda.ext_states import kernel_state  # noqa: E402
from distscan.ops import affine, get_op, segmented  # noqa: E402
from harness import events_interleaved  # noqa: E402


def cases(n, w):
    m = n // w
    rs = cp.random.RandomState(5)
    x = rs.standard_normal((m, w), dtype=cp.float32)
    out = cp.empty_like(x)
    a = rs.uniform(-1, 1, (m, w)).astype(cp.float32)
    flags = rs.random_sample(m) < 1e-3
    null = np.uint64(0)
    stream = cp.cuda.get_current_stream().ptr
    found = {}
    sum_ = get_op("sum")
    types = scan_types(sum_, np.dtype("float32"))
    plan = plans.plan_of(0, np.dtype("float32"), types, sum_, "auto")
    run, tiles, slabs, smem = columns._geometry(m, w, 4)
    agg = cp.empty((tiles, w), np.float32)
    shape = (np.int64(m), np.int64(w), np.int32(run))
    found["plain sum"] = {
        "reduce": (lambda: plan.funcs["tiles_reduce"]((tiles, slabs), (256,), (x,) + shape + (agg,), shared_mem=smem),
                   4),
        "scan": (lambda: plan.funcs["tiles_incl"]((tiles, slabs), (256,), (x, out) + shape + (agg,),
                                                  shared_mem=smem), 8)}
    for name, op, reverse, aux in (("reverse sum", sum_, True, (null, null)),
                                   ("segmented sum", segmented(sum_), False, (flags, null)),
                                   ("segmented sum, no flags", segmented(sum_), False, (null, null)),
                                   ("recurrence", affine(), False, (null, a)),
                                   ("reverse recurrence", affine(), True, (null, a)),
                                   ("recurrence, no coefficients", affine(), False, (null, null))):
        t = scan_types(op, np.dtype("float32"))
        funcs = state_columns.column_funcs(0, np.dtype("float32"), t, op, reverse)
        size = kernel_state(op, t).itemsize
        run, tiles, slabs, smem = columns._geometry(m, w, size)
        sagg = cp.empty((tiles, w * size), np.uint8)
        shape = (np.int64(m), np.int64(w), np.int32(run))
        extra = 4 * (aux[1] is not null) + (aux[0] is not null) / w

        def reduce(funcs=funcs, tiles=tiles, slabs=slabs, smem=smem, sagg=sagg, shape=shape, aux=aux):
            funcs["cols_reduce"]((tiles, slabs), (256,), (x,) + shape + (sagg,) + aux, shared_mem=smem)

        def carry(funcs=funcs, size=size, sagg=sagg, tiles=tiles):
            columns._carry(funcs["cols_carry"], size, sagg, tiles, w, None, None, stream)

        def scan(funcs=funcs, tiles=tiles, slabs=slabs, smem=smem, sagg=sagg, shape=shape, aux=aux):
            funcs["cols_incl"]((tiles, slabs), (256,), (x, out) + shape + (sagg,) + aux + (null,), shared_mem=smem)

        found[name] = {"reduce": (reduce, 4 + extra), "carry": (carry, 0), "scan": (scan, 8 + extra)}
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--log2n", type=int, default=27)
    ap.add_argument("--w", type=int, default=4)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--once", action="store_true")
    ap.add_argument("--only", default="", help="the cases whose name contains this")
    a = ap.parse_args()
    n = 1 << a.log2n
    found = {name: k for name, k in cases(n, a.w).items() if a.only in name}
    if a.once:
        for kernels in found.values():
            for fn, _ in kernels.values():
                fn()
        cp.cuda.Device().synchronize()
        return
    dev = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    print(f"{dev}, 2^{a.log2n} float32 items as {a.w} columns: ms (GB/s over the kernel's bytes)")
    impls = {f"{name}: {k}": fn for name, kernels in found.items() for k, (fn, _) in kernels.items()}
    med = events_interleaved(impls, a.reps, hide_host=True)
    for name, kernels in found.items():
        cells = []
        for k, (_, bpe) in kernels.items():
            t = med[f"{name}: {k}"]
            cells.append(f"{k} {t * 1e3:.3f}" + (f" ({bpe * n / t / 1e9:.0f})" if bpe else ""))
        print(f"{name:30s} " + "  ".join(cells))


if __name__ == "__main__":
    main()
