"""Where the look-ahead kernel's cycles go: clock64() counters around each step of its loop.

    python benchmarks/profile_lookahead.py [--dtypes float32,int64] [--log2n 28] [--behind 1,2] [--reps 5]

Copies kernels/ to a temporary folder, adds counters to agent/agent_lookahead.cuh (each warp sums
the cycles of each step of every iteration; lane 0 adds them to a global array at the end),
compiles that copy through CuPy and launches it like the shipped kernel, at the default
look-ahead shape of each dtype with each BEHIND given.  Its output is checked bitwise against
the shipped kernel's.  Prints, per warp, the share of its cycles in each step:

    data warps:   scan    the second pass over the staged tile (smem read, thread and warp scan)
                  loads   waiting for the tile's cp.async loads
                  reduce  the reduction of the newest tile
                  barrier the block's one __syncthreads
                  store   prefix, transpose through shared memory, global store
                  issue   issuing the next tile's loads
    service warp: top     the loop's top (the tile claim)
                  finish  finishing the prefix poll
                  barrier, agg (publishing the aggregate), behind (window words), poll (the next poll)

The counters perturb the kernel a little; compare shares between builds, not absolute time.
benchmarks/RESULTS.md, "Issue 10, eighth pass", has a run.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import cupy as cp  # noqa: E402

from distscan._dtypes import scan_types  # noqa: E402
from distscan.backends.cuda import compile as cc  # noqa: E402
from distscan.backends import cuda as gpu  # noqa: E402
from distscan.ops import get_op  # noqa: E402

SUM = get_op("sum")
DATA_STEPS = ["scan", "loads", "reduce", "barrier", "store", "issue"]
SERVICE_STEPS = ["top", "finish", None, "barrier", "agg", "behind", "poll"]

# (text in agent_lookahead.cuh, the text with a counter): PT(i) adds the cycles since the last
# counter to step i of the calling warp.
_PATCHES = [
    ('#include "../tile/tile_state.cuh"\n',
     '#include "../tile/tile_state.cuh"\nextern "C" __device__ unsigned long long ds_prof[16];\n'
     '#define PT(i) { const long long _t1 = clock64(); prof[i] += _t1 - _t0; _t0 = _t1; }\n'),
    ('        PrefixPoll<TAcc, Op, Policy::WINDOW> poll;',
     '        long long prof[8] = {0, 0, 0, 0, 0, 0, 0, 0};\n        long long _t0 = clock64();\n'
     '        PrefixPoll<TAcc, Op, Policy::WINDOW> poll;'),
    ('                    lane_exclusive = Tile::BScan::scan_up(s_scn[par], items);\n                }\n',
     '                    lane_exclusive = Tile::BScan::scan_up(s_scn[par], items);\n                }\n                PT(0)\n'),
    ('                    __syncwarp();\n                    stage_items',
     '                    __syncwarp();\n                    PT(1)\n                    stage_items'),
    ('                    Tile::BScan::reduce_up(s_red[par], red);\n                }\n            }',
     '                    Tile::BScan::reduce_up(s_red[par], red);\n                }\n                PT(2)\n            }'),
    ('            if (service && t_scan >= 0) {\n                const TAcc p',
     '            if (service && t_scan >= 0) {\n                PT(0)\n                const TAcc p'),
    ('                if (lane == 0) s_prefix[par] = p;\n            }\n            __syncthreads();\n',
     '                if (lane == 0) s_prefix[par] = p;\n                PT(1)\n            }\n            __syncthreads();\n'
     '            PT(3)\n'),
    ('            if (service) {\n                if (t_behind < num_tiles)',
     '            PT(4)\n            if (service) {\n                if (t_behind < num_tiles)'),
    ('                // The next scan\'s prefix', '                PT(5)\n                // The next scan\'s prefix'),
    ('                    if (t_next < num_tiles) poll.issue(st, t_next);\n                }\n            }',
     '                    if (t_next < num_tiles) poll.issue(st, t_next);\n                }\n                PT(6)\n            }'),
    ('                issue_loads(d_in, n, s_ids[(k + LOADS) % IDS], num_tiles, vector_ok, scan_slice, warp, lane);\n'
     '            }\n        }',
     '                issue_loads(d_in, n, s_ids[(k + LOADS) % IDS], num_tiles, vector_ok, scan_slice, warp, lane);\n'
     '                PT(5)\n            }\n        }\n'
     '        if (lane == 0)\n'
     '            for (int i = 0; i < 8; ++i) atomicAdd(&ds_prof[(service ? 8 : 0) + i], (unsigned long long)prof[i]);'),
]


def instrumented_kernels(dst: Path) -> Path:
    """kernels/ copied to dst with the counters; raises if the kernel no longer matches the patches."""
    shutil.copytree(cc.kernels_dir(), dst)
    agent = dst / "agent" / "agent_lookahead.cuh"
    text = agent.read_text()
    for old, new in _PATCHES:
        if text.count(old) != 1:
            raise RuntimeError(f"agent_lookahead.cuh changed: cannot place a counter at {old.strip()[:60]!r}")
        text = text.replace(old, new)
    agent.write_text(text)
    main = dst / "scan_kernels.cu"
    main.write_text(main.read_text().replace(
        '#include "agent/agent_lookahead.cuh"', 'extern "C" __device__ unsigned long long ds_prof[16] = {0};\n'
        '#include "agent/agent_lookahead.cuh"', 1))
    return dst


def profile(kdir: Path, dtype: str, log2n: int, behind: int, reps: int) -> dict:
    t = scan_types(SUM, np.dtype(dtype), np.dtype(dtype))
    shape = dataclasses.replace(gpu.tuning(t.input, t, "lookahead", default=True), behind=behind)
    with gpu.overrides(tuning=shape):
        plan = gpu.plans.plan_of(cp.cuda.Device().id, t.input, t, SUM, "lookahead")
        expr = cc.names(gpu.module_key(t.input, t, SUM, "lookahead"))["scan_incl"]
        n = 1 << log2n
        rs = cp.random.RandomState(log2n)
        x = rs.standard_normal(n).astype(dtype) if np.dtype(dtype).kind == "f" else rs.randint(-1000, 1000, n).astype(dtype)
        want = gpu.scan(x, SUM, t, algorithm="lookahead")[0]
    module = cp.RawModule(code=(kdir / "scan_kernels.cu").read_text(),
                          options=("-std=c++17", "-DDISTSCAN_NVRTC", f"-I{kdir}"), name_expressions=(expr,))
    fn = module.get_function(expr)
    fn.max_dynamic_shared_size_bytes = plan.la_smem
    counters = cp.ndarray((16,), cp.uint64, memptr=module.get_global("ds_prof"))
    # the shipped launch (scratch, epoch, arguments) with the instrumented kernel
    probe = copy.copy(plan)
    probe.funcs = {**plan.funcs, "scan_incl": fn}
    y = cp.empty_like(x)
    dev_id, stream_ptr = cp.cuda.Device().id, cp.cuda.get_current_stream().ptr
    total = np.zeros(16)
    for rep in range(reps + 1):  # the first launch warms up
        counters.fill(0)
        gpu.launch.launch_tiles(probe, x, y, n, False, plan.identity_k, 0, np.uint64(0), dev_id, stream_ptr)
        cp.cuda.Device().synchronize()
        if rep:
            total += counters.get().astype(np.float64)
    grid = min(-(-n // plan.tile), plan.la_grid)
    data = total[:8] / reps / (grid * (shape.block_threads // 32))
    service = total[8:] / reps / grid
    return {"dtype": dtype, "log2n": log2n, "shape": dataclasses.astuple(shape),
            "bitwise": bool(cp.array_equal(y, want)), "data": data[:len(DATA_STEPS)].tolist(),
            "service": service[:len(SERVICE_STEPS)].tolist()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dtypes", default="float32,int64")
    ap.add_argument("--log2n", type=int, default=28)
    ap.add_argument("--behind", default="1,2", help="BEHIND values to build (each at the default shape)")
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    print(cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)["name"].decode())
    with tempfile.TemporaryDirectory() as tmp:
        kdir = instrumented_kernels(Path(tmp) / "kernels")
        for dtype in args.dtypes.split(","):
            for behind in (int(b) for b in args.behind.split(",")):
                r = profile(kdir, dtype, args.log2n, behind, args.reps)
                d, s = np.array(r["data"]), np.array(r["service"])
                print(f"\n{dtype} 2^{args.log2n} shape {r['shape']} bitwise {r['bitwise']}: "
                      f"cycles per warp {d.sum():.0f} (data), {s.sum():.0f} (service)")
                print("  data:    " + "  ".join(f"{k} {v / d.sum():6.1%}" for k, v in zip(DATA_STEPS, d)))
                print("  service: " + "  ".join(f"{k} {v / s.sum():6.1%}" for k, v in zip(SERVICE_STEPS, s) if k))


if __name__ == "__main__":
    main()
