"""One-GPU scan benchmark: copy bandwidth, distscan (auto, look-back, look-ahead, the public API),
CUB (cuda.compute), torch.cumsum and cupy.cumsum, in one run.

    python benchmarks/bench_gpu.py OUT.json [--sizes 16,18,20,22,23,24,26,27,28,29] [--reps 20]
                                   [--variants] [--leads 0,66,132,264] [--profile] [--png OUT.png]
    python benchmarks/bench_gpu.py OUT.json --loops 16,18,20,22,24,26 [--rounds 7]   (loops of calls)
    python benchmarks/bench_gpu.py OUT.json --replot --png OUT.png   (plot an earlier run)

Every implementation scans the same fresh random input (sum, result dtype = input dtype)
and is timed with CUDA events around each call after warm-up, the implementations in turn
within each repetition, in a new random order every repetition (a drift of clocks or load falls
on all alike, and none always follows the same one); the median is reported
as GB/s counting 2*N*itemsize (one read, one write), with ratios to CUB and to the copy
(cudaMemcpyAsync device-to-device of the same bytes).  The L2 is flushed before each call (the
data comes from DRAM, as in a pipeline that streams it).  At small N a call's time is mostly
the host's work before the launch.  "auto" is what a user gets (the look-back kernel, its
reductions a lead of tiles ahead of its scans from a few hundred tiles on, and the look-ahead
kernel from 2^23 4-byte or 2^21 8-byte items); "lookback" (the classic one-tile-per-block
look-back) and "lookahead" force one device algorithm;
"api" is ``distscan.cumsum(x, dtype=x.dtype, out=y)`` and "api_alloc" the same call without
``out=`` (it allocates its result, as CUB's and torch's calls here do not).  Each distscan
result is checked (integers exactly against cupy.cumsum, floats against a float64 cumsum).
Up to N = 2^18 the wall time per call including Python is also measured (a loop of calls, one
synchronisation).  --variants times other look-ahead tile shapes, stage counts and depths at 2^29;
--leads times "auto" with each reduction lead (tiles) at 2^24, 2^27 and 2^29, against copy;
--profile prints where the host time of a 2^16 API call goes (cProfile).  --loops times loops of
back-to-back calls instead (no flush, no synchronisation between calls), distscan with and
without its CUDA graphs and dependent launches, against CUB and torch (bench_loops).
The table is printed last; everything goes to OUT.json.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import random
import statistics
import sys

from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

try:
    import cupy as cp  # noqa: E402
except ImportError:  # --replot needs no GPU
    cp = None

from harness import events_interleaved as _events_interleaved, events_median as _events_median  # noqa: E402
from harness import device_copy, make_cub, wall_per_call as _wall_per_call  # noqa: E402
from distscan._dtypes import scan_types  # noqa: E402
from distscan.backends import cuda as gpu  # noqa: E402
from distscan.ops import get_op  # noqa: E402

DTYPES = ["int32", "float32", "int64", "float64"]
SUM = get_op("sum")


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


def bench_case(dtype, n, reps, results, api):
    rs = cp.random.RandomState(1234 + n)
    x = _random(dtype, n, rs)
    y = cp.empty_like(x)
    nbytes = 2 * n * x.itemsize
    types = scan_types(SUM, np.dtype(dtype), np.dtype(dtype))
    row = {"dtype": dtype, "n": n, "log2n": int(np.log2(n)), "bytes": nbytes}

    copy = device_copy(y, x)

    impls = {"copy": copy,
             "auto": lambda: gpu.scan(x, SUM, types, out=y),
             "lookback": lambda: gpu.scan(x, SUM, types, out=y, algorithm="lookback"),
             "lookahead": lambda: gpu.scan(x, SUM, types, out=y, algorithm="lookahead")}
    if api is not None:
        impls["api"] = lambda: api(x, dtype=x.dtype, out=y)
        impls["api_alloc"] = lambda: api(x, dtype=x.dtype)
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
    plan = gpu.plans.plan_of(x.device.id, x.dtype, types, SUM, "auto")
    row["lead"] = gpu.plans.lead_of(plan, -(-n // plan.tile))
    medians = _events_interleaved(impls, reps_n)
    for name, fn in impls.items():
        med = medians[name]
        row[f"{name}_s"] = med
        row[f"{name}_gbs"] = nbytes / med / 1e9
        if name != "copy":
            y.fill(0)
            r = fn()
            row[f"{name}_ok"] = _check(dtype, x, r if name == "api_alloc" else y)
    if n <= (1 << 18):
        for name in ("auto", "api", "api_alloc", "cub", "torch", "cupy"):
            if name in impls:
                row[f"wall_{name}_s"] = _wall_per_call(impls[name])
    results.append(row)
    del x, y
    cp.get_default_memory_pool().free_all_blocks()
    return row


# Look-ahead tile shapes (threads, items, window, min_blocks, stages, depth, behind): the default
# first, then the runners-up of the sweeps in benchmarks/RESULTS.md ("Issue 10, fifth pass" to
# "eighth pass").
VARIANTS_4 = [(64, 32, 1024, 3, 9, 7, 2), (64, 32, 1024, 3, 9, 7, 1), (64, 32, 1024, 3, 8, 6, 2),
              (128, 32, 1024, 2, 7, 5, 2), (128, 32, 1024, 2, 7, 5, 1)]
VARIANTS_8 = [(128, 16, 1024, 2, 7, 5, 2), (128, 16, 1024, 2, 7, 5, 1), (128, 16, 1024, 2, 7, 4, 2),
              (64, 16, 1024, 3, 9, 6, 2)]


def bench_variants(dtype, n, reps, out):
    rs = cp.random.RandomState(99)
    x = _random(dtype, n, rs)
    y = cp.empty_like(x)
    types = scan_types(SUM, np.dtype(dtype), np.dtype(dtype))
    nbytes = 2 * n * x.itemsize
    variants = VARIANTS_4 if x.itemsize == 4 else VARIANTS_8
    for v in variants:
        try:
            with gpu.overrides(tuning=v):
                fn = lambda: gpu.scan(x, SUM, types, out=y, algorithm="lookahead")  # noqa: E731
                med, _ = _events_median(fn, reps)
                y.fill(0)
                fn()
                ok = _check(dtype, x, y)
            out.append({"dtype": dtype, "n": n, "variant": list(v), "s": med, "gbs": nbytes / med / 1e9, "ok": ok})
        except Exception as exc:  # noqa: BLE001
            out.append({"dtype": dtype, "n": n, "variant": list(v), "error": repr(exc)})
        print(json.dumps(out[-1]), flush=True)
    del x, y
    cp.get_default_memory_pool().free_all_blocks()


def _case_with_copy(dtype, n, seed, reps):
    """Fresh random input of n items, an output, and the median time of copying one to the other."""
    x = _random(dtype, n, cp.random.RandomState(seed))
    y = cp.empty_like(x)
    copy, _ = _events_median(device_copy(y, x), reps)
    return x, y, copy


def bench_leads(dtype, leads, reps, out):
    """"auto" with each reduction lead forced, against copy, in one run."""
    types = scan_types(SUM, np.dtype(dtype), np.dtype(dtype))
    for lg in (24, 27, 29):
        n = 1 << lg
        x, y, copy = _case_with_copy(dtype, n, 7 + lg, reps)
        nbytes = 2 * n * x.itemsize
        row = {"dtype": dtype, "n": n, "copy_gbs": nbytes / copy / 1e9, "lead_gbs": {}, "ok": True}
        for lead in leads:
            with gpu.overrides(lead=lead):
                med, _ = _events_median(lambda: gpu.scan(x, SUM, types, out=y), reps)
                y.fill(0)
                gpu.scan(x, SUM, types, out=y)
                row["ok"] = row["ok"] and _check(dtype, x, y)
                row["lead_gbs"][lead] = nbytes / med / 1e9
        out.append(row)
        print(json.dumps(row), flush=True)
        del x, y
        cp.get_default_memory_pool().free_all_blocks()


# Tile shapes of the "auto" (lead) kernel to compare (threads, items, window, min_blocks): the
# default first; smaller blocks at the same registers per thread put more independent blocks
# (each in its own phase: DRAM read, L2 re-read, scan, store) on an SM.
SHAPES_4 = [(256, 32, 1024, 4), (128, 32, 1024, 8), (64, 32, 1024, 16), (128, 16, 1024, 12), (256, 16, 1024, 6)]
SHAPES_8 = [(256, 16, 1024, 3), (128, 16, 1024, 6), (128, 16, 1024, 8), (64, 16, 1024, 16), (128, 8, 1024, 12)]


def _shape_keys(dtypes):
    from distscan.backends.cuda import compile as cc

    keys = []
    for dtype in dtypes:
        types = scan_types(SUM, np.dtype(dtype), np.dtype(dtype))
        kacc = cc.kernel_acc_dtype(types.acc)
        for shape in SHAPES_4 if np.dtype(dtype).itemsize == 4 else SHAPES_8:
            t = cc.choose_tuning(np.dtype(dtype), kacc, types.result, shape)
            keys.append(cc.ModuleKey(np.dtype(dtype), kacc, np.dtype(types.result), SUM.functor, t))
    return keys


def bench_shapes(dtype, reps, out):
    """"auto" with each tile shape of SHAPES_4/SHAPES_8, its lead by the rule and 1.5x it, against copy."""
    types = scan_types(SUM, np.dtype(dtype), np.dtype(dtype))
    for lg in (27, 29):
        n = 1 << lg
        x, y, copy = _case_with_copy(dtype, n, 11 + lg, reps)
        nbytes = 2 * n * x.itemsize
        for shape in SHAPES_4 if x.itemsize == 4 else SHAPES_8:
            try:
                with gpu.overrides(tuning=shape):
                    plan = gpu.plans.plan_of(x.device.id, x.dtype, types, SUM, "auto")
                    for lead in (plan.lead, round(1.5 * plan.lead)):
                        with gpu.overrides(lead=lead):
                            med, _ = _events_median(lambda: gpu.scan(x, SUM, types, out=y), reps)
                            y.fill(0)
                            gpu.scan(x, SUM, types, out=y)
                        out.append({"dtype": dtype, "n": n, "shape": list(shape), "lead": lead,
                                    "gbs": nbytes / med / 1e9, "copy_gbs": nbytes / copy / 1e9,
                                    "ok": _check(dtype, x, y)})
                        print(json.dumps(out[-1]), flush=True)
            except Exception as exc:  # noqa: BLE001
                out.append({"dtype": dtype, "n": n, "shape": list(shape), "error": repr(exc)})
        del x, y
        cp.get_default_memory_pool().free_all_blocks()


def _loop_span(fn, stream, calls):
    """Seconds per call of ``calls`` back-to-back calls on ``stream`` (events around the loop:
    the host's time or the GPU's, whichever bounds it)."""
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    with stream:
        stream.synchronize()
        start.record(stream)
        for _ in range(calls):
            fn()
        stop.record(stream)
        stop.synchronize()
    return cp.cuda.get_elapsed_time(start, stop) / 1e3 / calls


def _switch_off(stream, graphs: bool, dependent: bool, always_dependent: bool = False):
    """Turn the hot path's graphs and/or dependent launches off (or dependent launches on at every
    size) for the entries of one stream (the bench's other streams keep what ships); their launch
    shapes are made again."""
    for key, ent in gpu.hotpath.FAST.items():
        if key[1] == stream.ptr and ent is not gpu.hotpath.NOT_FAST:
            if graphs:
                ent.graphs = None
            if dependent:
                ent.dependent = None
            if always_dependent:
                ent.dependent_min_bytes = 0
            ent.shapes.clear()


def bench_loops(dtype, sizes, rounds, out, api):
    """Loops of back-to-back calls, as a code that scans repeatedly runs them (no L2 flush, no
    synchronisation between calls): the time per call of distscan.cumsum(x, out=y) as shipped
    ("api": graphs of repeated calls below gpu.SETTINGS.dependent_min_bytes moved, dependent launches
    from it), with neither ("plain"), with graphs only ("graphs"), with dependent launches at
    every size ("dependent"), and of CUB and torch; each implementation on a stream of its own,
    in a new random order every round, median of the rounds."""
    order = random.Random(5)
    for lg in sizes:
        n = 1 << lg
        x = _random(dtype, n, cp.random.RandomState(77 + lg))
        y = cp.empty_like(x)
        streams = {k: cp.cuda.Stream(non_blocking=True) for k in ("api", "plain", "graphs", "dependent")}
        impls = {k: (lambda: api(x, dtype=x.dtype, out=y), st) for k, st in streams.items()}
        for k, (fn, st) in impls.items():
            with st:
                for _ in range(3):  # the scratch, the hot-path entry, a graph
                    fn()
            _switch_off(st, graphs=k in ("plain", "dependent"), dependent=k in ("plain", "graphs"),
                        always_dependent=k == "dependent")
            with st:
                fn()  # the launch shape made again (kept by the entry), under the switches
        cub, _ = make_cub(x, y, n)
        null = cp.cuda.Stream.null
        if cub is not None:
            impls["cub"] = (cub, null)
        try:
            import torch

            tx, ty = torch.from_dlpack(x), torch.from_dlpack(y)
            impls["torch"] = (lambda: torch.cumsum(tx, 0, dtype=tx.dtype, out=ty), null)
        except Exception:  # noqa: BLE001
            pass
        calls = 400 if n <= (1 << 20) else 100 if n <= (1 << 24) else 20
        times = {k: [] for k in impls}
        for k, (fn, st) in impls.items():
            _loop_span(fn, st, 20)
        for _ in range(rounds):
            for k in order.sample(list(impls), len(impls)):
                fn, st = impls[k]
                times[k].append(_loop_span(fn, st, calls))
        row = {"dtype": dtype, "n": n, "log2n": lg, "calls": calls}
        row.update({f"{k}_us": statistics.median(v) * 1e6 for k, v in times.items()})
        y.fill(0)
        with streams["api"]:
            api(x, dtype=x.dtype, out=y)
            streams["api"].synchronize()
        row["ok"] = _check(dtype, x, y)
        out.append(row)
        print(json.dumps(row), flush=True)
        del x, y
        cp.get_default_memory_pool().free_all_blocks()


def profile_api(api, n=1 << 16):
    """Where the host time of one small API call goes."""
    import cProfile
    import io
    import pstats

    x = cp.arange(n, dtype=cp.int32)
    y = cp.empty_like(x)
    for _ in range(100):
        api(x, dtype=x.dtype, out=y)
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(2000):
        api(x, dtype=x.dtype, out=y)
    prof.disable()
    cp.cuda.get_current_stream().synchronize()
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(14)
    return buf.getvalue()


def plot(data, png):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows, meta = data["results"], data["meta"]
    dtypes = list(dict.fromkeys(r["dtype"] for r in rows))
    fig, axes = plt.subplots(1, len(dtypes), figsize=(4.6 * len(dtypes), 4), sharey=True)
    for ax, dtype in zip(np.atleast_1d(axes), dtypes):
        rs = [r for r in rows if r["dtype"] == dtype]
        labels = {"auto": "distscan", "api_alloc": "distscan.cumsum, no out="}
        for name, style in (("copy", "k--"), ("cub", "C1-"), ("torch", "C2-"), ("auto", "C0-"),
                            ("api_alloc", "C4-"), ("lookback", "C0:"), ("lookahead", "C3-.")):
            if f"{name}_gbs" in rs[0]:
                ax.plot([r["log2n"] for r in rs], [r[f"{name}_gbs"] for r in rs], style, marker="o", ms=3,
                        label=labels.get(name, name))
        ax.set_title(f"{dtype} cumsum, {meta['gpu']}", fontsize=9)
        ax.set_xlabel("log2 N")
        ax.grid(alpha=0.3)
    np.atleast_1d(axes)[0].set_ylabel("GB/s (2 N itemsize / time)")
    np.atleast_1d(axes)[-1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png, dpi=110)


def report_loops(loops):
    names = [k[:-3] for k in loops[0] if k.endswith("_us")] if loops else []
    print("\nloops of back-to-back calls, us per call (median of the rounds):")
    print(f"{'dtype':8s} {'N':6s}" + "".join(f"{k:>10s}" for k in names) + "   cub/api  plain/api  ok")
    for r in loops:
        ratio = lambda a, b: r.get(f"{a}_us", float("nan")) / r[f"{b}_us"]  # noqa: E731
        print(f"{r['dtype']:8s} 2^{r['log2n']:<4d}" + "".join(f"{r.get(f'{k}_us', float('nan')):10.2f}" for k in names)
              + f"   {ratio('cub', 'api'):7.3f}  {ratio('plain', 'api'):9.3f}  {r['ok']}")


def report(data):
    meta, results, variants = data["meta"], data["results"], data.get("variants", [])
    print(f"\n{meta['gpu']} ({meta['sms']} SMs), {meta['date']}; GB/s = 2*N*itemsize / median time")
    if data.get("leads"):
        leads = list(data["leads"][0]["lead_gbs"])
        print("\n\"auto\" with its reduction lead forced (tiles): GB/s / copy")
        print(f"{'dtype':8s} {'N':5s}{'copy':>7s}" + "".join(f"{'L' + str(v):>8s}" for v in leads) + "  ok")
        for r in data["leads"]:
            print(f"{r['dtype']:8s} 2^{int(np.log2(r['n'])):<3d}{r['copy_gbs']:7.0f}"
                  + "".join(f"{r['lead_gbs'][v] / r['copy_gbs']:8.3f}" for v in leads) + f"  {r['ok']}")
    if variants:
        print("\nlook-ahead variants (threads, items, window, min_blocks, stages, depth, behind):")
        for v in variants:
            print(f"  {v['dtype']:8s} 2^{int(np.log2(v['n']))} {str(v['variant']):28s} "
                  + (f"{v['gbs']:7.0f} GB/s ok={v['ok']}" if "gbs" in v else v["error"][:80]))
    if data.get("shapes"):
        print("\n\"auto\" by tile shape (threads, items, window, min_blocks) and lead: GB/s / copy")
        for r in data["shapes"]:
            print(f"  {r['dtype']:8s} 2^{int(np.log2(r['n']))} {str(r['shape']):22s} "
                  + (f"lead {r['lead']:4d} {r['gbs']:6.0f} GB/s {r['gbs'] / r['copy_gbs']:6.3f}  ok={r['ok']}"
                     if "gbs" in r else r["error"][:90]))
    names = ["copy", "auto", "lookback", "lookahead", "api", "api_alloc", "cub", "torch", "cupy"]
    print(f"\n{'dtype':8s} {'N':5s}" + "".join(f"{n[:9]:>10s}" for n in names)
          + f"{'auto/CUB':>9s}{'api/CUB':>8s}{'auto/copy':>10s}  ok")
    nan = float("nan")
    for r in results:
        cub = r.get("cub_gbs", nan)
        oks = all(v for k, v in r.items() if k.endswith("_ok"))
        print(f"{r['dtype']:8s} 2^{r['log2n']:<3d}" + "".join(f"{r.get(n + '_gbs', nan):10.0f}" for n in names)
              + f"{r['auto_gbs'] / cub:9.2f}{r.get('api_gbs', nan) / cub:8.2f}{r['auto_gbs'] / r['copy_gbs']:10.2f}  {oks}")
    if "lead" in results[0]:
        print("reduction lead of \"auto\" (tiles) per size: "
              + ", ".join(f"2^{r['log2n']} {r['lead']}" for r in results if r["dtype"] == results[0]["dtype"]))
    walls = [r for r in results if "wall_auto_s" in r]
    if walls:
        print("\nwall time per call (us, Python included, loop of calls):")
        wn = ["auto", "api", "api_alloc", "cub", "torch", "cupy"]
        print(f"{'dtype':8s} {'N':5s}" + "".join(f"{n:>10s}" for n in wn))
        for r in walls:
            print(f"{r['dtype']:8s} 2^{r['log2n']:<3d}" + "".join(f"{r.get(f'wall_{n}_s', nan) * 1e6:10.1f}" for n in wn))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("json_out")
    ap.add_argument("--sizes", default="16,18,20,22,23,24,26,27,28,29")
    ap.add_argument("--dtypes", default=",".join(DTYPES))
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--variants", action="store_true")
    ap.add_argument("--shapes", action="store_true", help="time \"auto\" with other tile shapes at 2^27, 2^29")
    ap.add_argument("--leads", help="comma-separated reduction leads (tiles) to time \"auto\" with")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--loops", help="comma-separated log2 sizes: loops of back-to-back calls (graphs, "
                                    "dependent launches) instead of the table")
    ap.add_argument("--rounds", type=int, default=7, help="rounds of --loops")
    ap.add_argument("--png")
    ap.add_argument("--replot", action="store_true", help="plot and print the table of an earlier OUT.json")
    args = ap.parse_args()
    if args.replot:
        data = json.loads(Path(args.json_out).read_text())
        if args.png:
            plot(data, args.png)
        report(data)
        return

    api = None
    try:
        import distscan
        from mpi4py import MPI

        api = lambda a, **kw: distscan.cumsum(a, comm=MPI.COMM_SELF, **kw)  # noqa: E731
    except Exception:  # noqa: BLE001
        pass

    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    meta = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "gpu": props["name"].decode(),
            "sms": props["multiProcessorCount"], "host": platform.node(), "cupy": cp.__version__}
    if args.loops:
        loops = []
        for dtype in args.dtypes.split(","):
            bench_loops(dtype, [int(v) for v in args.loops.split(",")], args.rounds, loops, api)
        Path(args.json_out).write_text(json.dumps({"meta": meta, "loops": loops}, indent=1))
        report_loops(loops)
        return
    results, variants = [], []
    # A discarded first case: the first cell measured read up to 40 % slow at 2^16 (the host's
    # first loops of calls; benchmarks/RESULTS.md, "Issue 10, tenth pass").
    bench_case(args.dtypes.split(",")[0], 1 << 16, args.reps, [], api)
    for dtype in args.dtypes.split(","):
        for lg in [int(s) for s in args.sizes.split(",")]:
            r = bench_case(dtype, 1 << lg, args.reps, results, api)
            print(json.dumps(r), flush=True)
    if args.variants:
        for dtype in args.dtypes.split(","):
            bench_variants(dtype, 1 << 29, args.reps, variants)
    leads = []
    if args.leads:
        for dtype in args.dtypes.split(","):
            bench_leads(dtype, [int(v) for v in args.leads.split(",")], args.reps, leads)
    shapes = []
    if args.shapes:
        from distscan.backends.cuda import compile as cc

        cc.precompile(_shape_keys(args.dtypes.split(",")))
        for dtype in args.dtypes.split(","):
            bench_shapes(dtype, args.reps, shapes)
    data = {"meta": meta, "results": results, "variants": variants, "leads": leads, "shapes": shapes}
    if args.profile and api is not None:
        data["profile"] = profile_api(api)
        print(data["profile"])
    Path(args.json_out).write_text(json.dumps(data, indent=1))
    if args.png:
        try:
            plot(data, args.png)
        except Exception as exc:  # noqa: BLE001
            print(f"no plot here ({exc!r}); replot later with --replot")
    report(data)


if __name__ == "__main__":
    main()
