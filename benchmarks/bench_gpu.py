"""One-GPU scan benchmark: copy bandwidth, distscan, CUB (cuda.compute), torch.cumsum, cupy.cumsum.

    python benchmarks/bench_gpu.py OUT.json [--sizes 16,20,24,27,29] [--reps 20] [--variants]

Every implementation scans the same fresh random input (sum, result dtype = input dtype)
and is timed with CUDA events around each call after warm-up; the median is reported as
GB/s counting 2*N*itemsize (one read, one write), with ratios to CUB and to the copy
(cudaMemcpyAsync device-to-device of the same bytes).  Each distscan result is checked
(integers exactly against cupy.cumsum, floats against a float64 cumsum).  At N = 2^16
the per-call wall time including the Python call is also measured (loop of calls, one
synchronisation) for distscan (backend and public API) and CUB.  With --variants, other
tile shapes are timed at the large sizes.
The table is printed last; everything goes to OUT.json.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cupy as cp  # noqa: E402

from distscan._dtypes import scan_types  # noqa: E402
from distscan.backends import cuda as gpu  # noqa: E402
from distscan.ops import get_op  # noqa: E402

DTYPES = ["int32", "float32", "int64", "float64"]
SUM = get_op("sum")


def _events_median(fn, reps, warm=3):
    for _ in range(warm):
        fn()
    times = []
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    for _ in range(reps):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) * 1e-3)
    return statistics.median(times), times


def _wall_per_call(fn, reps=2000, warm=50):
    for _ in range(warm):
        fn()
    cp.cuda.get_current_stream().synchronize()
    best = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        cp.cuda.get_current_stream().synchronize()
        best.append((time.perf_counter() - t0) / reps)
    return statistics.median(best)


def _random(dtype, n, rs):
    if np.dtype(dtype).kind == "f":
        return rs.standard_normal(n, dtype=dtype)
    return rs.randint(-1000, 1000, n, dtype=dtype)


def _check(dtype, x, y):
    if np.dtype(dtype).kind == "f":
        ref = cp.cumsum(x, dtype=cp.float64)
        scale = cp.cumsum(cp.abs(x), dtype=cp.float64)
        eps = np.finfo(dtype).eps
        ok = bool(cp.all(cp.abs(y.astype(cp.float64) - ref) <= 64 * eps * scale + 1e-30))
    else:
        ok = bool(cp.array_equal(y, cp.cumsum(x, dtype=dtype)))
    return ok


def make_cub(x, y, n):
    try:
        import os

        import cuda

        # a `cuda` package of the image (cuda-python) may shadow the wheel's cuda/compute
        for p in sys.path:
            d = os.path.join(p, "cuda")
            if os.path.isdir(os.path.join(d, "compute")) and d not in list(cuda.__path__):
                cuda.__path__.append(d)
        import cuda.compute as cc
    except Exception as exc:  # noqa: BLE001
        return None, f"cuda.compute unavailable: {exc!r}"
    try:
        s = cc.make_inclusive_scan(d_in=x, d_out=y, op=cc.OpKind.PLUS, init_value=None)
        nbytes = s(temp_storage=None, d_in=x, d_out=y, op=cc.OpKind.PLUS, init_value=None, num_items=n)
        tmp = cp.empty(max(int(nbytes), 1), dtype=cp.uint8)

        def run():
            s(temp_storage=tmp, d_in=x, d_out=y, op=cc.OpKind.PLUS, init_value=None, num_items=n)

        return run, None
    except Exception as exc:  # noqa: BLE001
        return None, f"cuda.compute failed: {exc!r}"


def bench_case(dtype, n, reps, results, api_scan):
    rs = cp.random.RandomState(1234 + n)
    x = _random(dtype, n, rs)
    y = cp.empty_like(x)
    nbytes = 2 * n * x.itemsize
    types = scan_types(SUM, np.dtype(dtype), np.dtype(dtype))
    x2, y2 = x.reshape(-1, 1), y.reshape(-1, 1)
    row = {"dtype": dtype, "n": n, "log2n": int(np.log2(n)), "bytes": nbytes}

    def copy():
        cp.cuda.runtime.memcpyAsync(y.data.ptr, x.data.ptr, n * x.itemsize, 3, cp.cuda.get_current_stream().ptr)

    def ds():
        gpu.scan(x2, SUM, types, out=y2)

    impls = {"copy": copy, "distscan": ds}
    if api_scan is not None:
        # The public call with dtype= and out= (one rank): its cost over the backend alone.
        impls["distscan_api"] = lambda: api_scan(x, y)
    cub, why = make_cub(x, y, n)
    if cub is not None:
        impls["cub"] = cub
    else:
        row["cub_error"] = why
    try:
        import torch

        tx, ty = torch.from_dlpack(x), torch.from_dlpack(y)
        impls["torch"] = lambda: torch.cumsum(tx, 0, dtype=tx.dtype, out=ty)
    except Exception as exc:  # noqa: BLE001
        row["torch_error"] = repr(exc)
    impls["cupy"] = lambda: cp.cumsum(x, dtype=x.dtype, out=y)
    reps_n = reps if n >= (1 << 24) else 5 * reps
    for name, fn in impls.items():
        med, times = _events_median(fn, reps_n)
        row[f"{name}_s"] = med
        row[f"{name}_gbs"] = nbytes / med / 1e9
        if name != "copy":
            y.fill(0)
            fn()
            row[f"{name}_ok"] = _check(dtype, x, y)
    if n <= (1 << 16):
        row["wall_distscan_backend_s"] = _wall_per_call(ds)
        if cub is not None:
            row["wall_cub_s"] = _wall_per_call(cub)
        if api_scan is not None:
            row["wall_distscan_api_s"] = _wall_per_call(lambda: api_scan(x, y))
        row["wall_cupy_s"] = _wall_per_call(impls["cupy"])
    results.append(row)
    del x, y
    cp.get_default_memory_pool().free_all_blocks()
    return row


# Tile shapes (threads, items, window, min_blocks).  The persistent cp.async kernel and the
# diagnostic builds (no look-back, no stores) were removed after measurement (NOTES-gpu.md, v4;
# they remain in the git history before issue 9).
VARIANTS_4 = [(256, 32, 1024, 4), (256, 16, 1024, 4), (128, 32, 1024, 8)]
VARIANTS_8 = [(256, 16, 1024, 3), (256, 8, 1024, 4), (128, 16, 1024, 6)]


def bench_variants(dtype, n, reps, out):
    rs = cp.random.RandomState(99)
    x = _random(dtype, n, rs)
    y = cp.empty_like(x)
    types = scan_types(SUM, np.dtype(dtype), np.dtype(dtype))
    nbytes = 2 * n * x.itemsize
    variants = VARIANTS_4 if x.itemsize == 4 else VARIANTS_8
    for v in variants:
        gpu._TUNING_OVERRIDE = v
        try:
            fn = lambda: gpu.scan(x.reshape(-1, 1), SUM, types, out=y.reshape(-1, 1))  # noqa: E731
            med, _ = _events_median(fn, reps)
            y.fill(0)
            fn()
            ok = _check(dtype, x, y)
            out.append({"dtype": dtype, "n": n, "variant": list(v), "s": med, "gbs": nbytes / med / 1e9, "ok": ok})
        except Exception as exc:  # noqa: BLE001
            out.append({"dtype": dtype, "n": n, "variant": list(v), "error": repr(exc)})
        finally:
            gpu._TUNING_OVERRIDE = None
    del x, y
    cp.get_default_memory_pool().free_all_blocks()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("json_out")
    ap.add_argument("--sizes", default="16,20,24,27,29")
    ap.add_argument("--dtypes", default=",".join(DTYPES))
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--variants", action="store_true")
    args = ap.parse_args()

    api_scan = None
    try:
        import distscan
        from mpi4py import MPI

        if hasattr(distscan, "scan"):
            api_scan = lambda a, b: distscan.cumsum(a, dtype=a.dtype, out=b, comm=MPI.COMM_SELF)  # noqa: E731
    except Exception:  # noqa: BLE001
        pass

    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    meta = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "gpu": props["name"].decode(),
            "sms": props["multiProcessorCount"], "host": platform.node(), "cupy": cp.__version__}
    results, variants = [], []
    for dtype in args.dtypes.split(","):
        for lg in [int(s) for s in args.sizes.split(",")]:
            r = bench_case(dtype, 1 << lg, args.reps, results, api_scan)
            print(json.dumps(r), flush=True)
    if args.variants:
        for dtype in args.dtypes.split(","):
            for lg in (29,):
                bench_variants(dtype, 1 << lg, args.reps, variants)
                print(json.dumps(variants[-1]), flush=True)
    Path(args.json_out).write_text(json.dumps({"meta": meta, "results": results, "variants": variants}, indent=1))

    print(f"\n{meta['gpu']} ({meta['sms']} SMs), {meta['date']}; GB/s = 2*N*itemsize / median time")
    if variants:
        print("\nvariants (threads, items, window, min_blocks):")
        for v in variants:
            print(f"  {v['dtype']:8s} 2^{int(np.log2(v['n']))} {str(v['variant']):55s} "
                  + (f"{v['gbs']:7.0f} GB/s ok={v['ok']}" if "gbs" in v else v["error"][:80]))
    hdr = f"{'dtype':8s} {'N':>5s} {'copy':>6s} {'dist':>6s} {'CUB':>6s} {'torch':>6s} {'cupy':>6s} {'d/CUB':>6s} {'d/copy':>6s} ok"
    print(hdr)
    for r in results:
        cub = r.get("cub_gbs", float("nan"))
        print(f"{r['dtype']:8s} 2^{r['log2n']:<3d} {r['copy_gbs']:6.0f} {r['distscan_gbs']:6.0f} {cub:6.0f} "
              f"{r.get('torch_gbs', float('nan')):6.0f} {r['cupy_gbs']:6.0f} {r['distscan_gbs'] / cub:6.2f} "
              f"{r['distscan_gbs'] / r['copy_gbs']:6.2f} {r.get('distscan_ok')}/{r.get('cub_ok')}")
    for r in results:
        if "distscan_api_s" in r:
            print(f"API with dtype= and out= at 2^{r['log2n']} {r['dtype']}: {r['distscan_api_s'] / r['distscan_s']:.3f}x "
                  f"the backend alone ({r['distscan_api_gbs']:.0f} vs {r['distscan_gbs']:.0f} GB/s)")
    for r in results:
        if "wall_distscan_backend_s" in r:
            print(f"wall per call at 2^{r['log2n']} {r['dtype']}: distscan backend {r['wall_distscan_backend_s'] * 1e6:.1f} us, "
                  f"API {r.get('wall_distscan_api_s', float('nan')) * 1e6:.1f} us, CUB {r.get('wall_cub_s', float('nan')) * 1e6:.1f} us, "
                  f"cupy {r['wall_cupy_s'] * 1e6:.1f} us")


if __name__ == "__main__":
    main()
