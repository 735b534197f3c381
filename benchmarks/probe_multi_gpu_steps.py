"""Where a distributed GPU call's time goes, step by step, on each rank (no added synchronisation).

    mpirun -n 2 python3 benchmarks/probe_multi_gpu_steps.py OUT.json [--log2n 28] [--reps 9]

Question: between the reduction's end on the first rank and the seeded scan's launch on the next
one (the exchange, 48-69 µs on 2 H100s: RESULTS.md, "Issue 30's scans on two GPUs"), and around
them, which host step takes the time?  The probe wraps the call's layers (``ScanPlan.run``, the
carry ``Carries.of_part`` with its device-to-host copy, the exchange's ``Allgather`` and its read,
the backend's scans, a seed's copy) with timestamps of ``time.perf_counter_ns`` (CLOCK_MONOTONIC:
one clock for every process of the host), so the ranks' steps share one time axis: 0 is the
earliest rank's call start after a barrier.  The device is synchronised only after the call, as
the benchmarks do; *done* is when that synchronisation returns.  Medians over --reps, µs.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_multi_gpu import REPO  # noqa: E402
from bench_multi_gpu_operators import _cases  # noqa: E402 - the same calls on the same data

sys.path.insert(0, str(REPO))

EVENTS: list = []  # (step, "b" | "e", ns) of the current call on this rank
ORIGINAL: dict = {}  # step -> the unwrapped function
LAST: dict = {}  # step -> the arguments of its last call (the loops of --loops replay them)


def _wrap(owner, attr: str, step: str) -> None:
    fn = ORIGINAL[step] = getattr(owner, attr)

    @functools.wraps(fn)
    def timed(*args, **kwargs):
        LAST[step] = (args, kwargs)
        EVENTS.append((step, "b", time.perf_counter_ns()))
        try:
            return fn(*args, **kwargs)
        finally:
            EVENTS.append((step, "e", time.perf_counter_ns()))
    setattr(owner, attr, timed)


def _instrument() -> None:
    import distscan._carry as carry
    import distscan.backends.cuda as be
    import distscan.backends.cuda.extended as extended
    import distscan.backends.cuda.general as general
    import distscan.dist.exchange as exchange
    import distscan.dist.plan as plan

    _wrap(plan.ScanPlan, "run", "run")
    _wrap(carry.Carries, "of_part", "carry")
    _wrap(exchange.Exchange, "_exchange", "exchange")
    _wrap(exchange.Exchange, "read", "read")
    for name in ("scan", "scan_lean", "reduce"):
        _wrap(be, name, "be." + name)
    _wrap(general, "_scan", "general._scan")
    _wrap(extended, "scan", "extended.scan")
    _wrap(extended, "reduce", "extended.reduce")
    # (the seed's copy, scratch.SeedStage, is gone: extended scans take their seed by value)
    _wrap(extended.ExtCall, "run", "ext launch")
    # inside the exchange's read
    _wrap(exchange.Exchange, "agreed_heads", "agreed_heads")
    _wrap(carry.Carries, "fold", "fold")
    # inside the hot path's seeded launch
    import distscan.backends.cuda.dependent as dependent
    import distscan.backends.cuda.hotpath as hotpath
    _wrap(hotpath, "_seed_scalar", "seed scalar")
    _wrap(hotpath.FastEntry, "set_seed", "set_seed")
    _wrap(dependent.DependentLaunch, "__call__", "cuLaunchKernelEx")
    _wrap(plan.ScanPlan, "_checked", "checked")
    import cupy as cp
    _wrap(cp.cuda, "alloc", "cp.alloc")
    for name in ("memcpyAsync", "eventRecord"):
        try:
            _wrap(cp.cuda.runtime, name, name)
        except (AttributeError, TypeError):  # an extension module that takes no new attributes
            pass


def _loops(reps: int = 2000) -> dict:
    """µs per call of a few steps replayed alone in a loop on this rank (their last arguments), and
    of an empty Python function: what they cost when the process is not coming out of a wait."""
    out = {}

    def empty(*args):
        return None
    for step, fn in [("empty function", empty), ("read", ORIGINAL["read"]),
                     ("fold", ORIGINAL["fold"])]:
        if step != "empty function" and step not in LAST:
            continue
        args, kwargs = LAST.get(step, ((), {}))
        t0 = time.perf_counter_ns()
        for _ in range(reps):
            fn(*args, **kwargs)
        out[step] = (time.perf_counter_ns() - t0) / reps / 1e3
    return out


def _steps(events, origin):
    """{"step#k b|e": µs from origin} for the k-th call of each step in this call."""
    seen: dict = {}
    out = {}
    for step, edge, ns in events:
        k = seen.get((step, edge), 0)
        seen[(step, edge)] = k + 1
        out[f"{step}#{k} {edge}"] = (ns - origin) / 1e3
    return out


def main():
    from mpi4py import MPI
    import cupy as cp

    from distscan.gpus import bind_gpu

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json_out")
    ap.add_argument("--log2n", type=int, default=28)
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--spin", action="store_true", help="the device's waits spin (cudaDeviceScheduleSpin)")
    ap.add_argument("--only", default="cumsum f32,reverse cumsum f32,segmented sum f32,recurrence f32,compensated f32,"
                    "logcumsumexp f32", help="comma-separated names of bench_multi_gpu_operators.py's cases")
    a = ap.parse_args()
    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    bind_gpu(world)
    if a.spin:  # CU_CTX_SCHED_SPIN on the primary context (applied to an active one too)
        import ctypes
        lib = ctypes.CDLL("libcuda.so.1")
        dev = ctypes.c_int()
        lib.cuDeviceGet(ctypes.byref(dev), cp.cuda.Device().id)
        rc = lib.cuDevicePrimaryCtxSetFlags_v2(dev, 1)
        flags, active = ctypes.c_uint(), ctypes.c_int()
        lib.cuDevicePrimaryCtxGetState(dev, ctypes.byref(flags), ctypes.byref(active))
        print(f"rank {rank}: cuDevicePrimaryCtxSetFlags rc {rc}, flags now {flags.value}, active {active.value}",
              flush=True)
    _instrument()
    cases = {name: (lambda c, call=case[2]: call(c)) for name, case in _cases(cp, 1 << a.log2n, rank)[0].items()}
    stream = cp.cuda.get_current_stream()
    results = {}
    loops = {}
    for name, call in cases.items():
        if name not in a.only.split(","):
            continue
        for _ in range(2):  # warm: compile, plans, kinds
            call(world)
        stream.synchronize()
        per_rep = []
        for _ in range(a.reps):
            world.Barrier()
            EVENTS.clear()
            start = time.perf_counter_ns()
            call(world)
            returned = time.perf_counter_ns()
            stream.synchronize()
            done = time.perf_counter_ns()
            mine = (start, returned, done, list(EVENTS))
            allr = world.allgather(mine)
            origin = min(r[0] for r in allr)
            per_rep.append([dict(_steps(r[3], origin), start=(r[0] - origin) / 1e3, returned=(r[1] - origin) / 1e3,
                                 done=(r[2] - origin) / 1e3) for r in allr])
        med = []
        for r in range(size):
            keys = per_rep[0][r].keys()
            med.append({k: statistics.median(rep[r][k] for rep in per_rep if k in rep[r]) for k in keys})
        results[name] = med
        loops[name] = world.gather(_loops(), root=0)
    if rank == 0:
        Path(a.json_out).write_text(json.dumps({"log2n": a.log2n, "reps": a.reps, "ranks": size,
                                                "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
                                                "spin": a.spin, "steps": results, "loops": loops}, indent=1))
        for name, med in results.items():
            print(f"\n{name} (µs from the earliest call start; medians of {a.reps})")
            for r, m in enumerate(med):
                order = sorted(m.items(), key=lambda kv: kv[1])
                print(f"  rank {r}: " + ", ".join(f"{k} {v:.1f}" for k, v in order))
            for r, lp in enumerate(loops[name]):
                print(f"  rank {r} alone in a loop, µs a call: " + ", ".join(f"{k} {v:.2f}" for k, v in lp.items()))


if __name__ == "__main__":
    main()
