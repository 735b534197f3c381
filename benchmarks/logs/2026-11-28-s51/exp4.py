"""Why did the EMA (a Python scalar a) take 1.10 ms alone at 2^28 on an H200 (x2-bench), where its
seeded scan phase took 0.90 and one GPU's GPU time at 2^27 was 0.42?  Wall and GPU time of one
call, by how a is given, and the host's profile of the scalar call."""
import cProfile, pstats, sys, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import cupy as cp, numpy as np
import distscan
from mpi4py import MPI
SELF = MPI.COMM_SELF
for log2n in (27, 28):
    n = 1 << log2n
    x = cp.random.RandomState(3).standard_normal(n, dtype=cp.float32)
    y = cp.empty_like(x)
    full = cp.full(n, 0.75, cp.float32)
    ways = {"python float": 0.75, "np.float32": np.float32(0.75), "cupy 0-d": cp.asarray(np.float32(0.75)),
            "full array": full}
    for name, a in ways.items():
        for _ in range(3):
            distscan.linear_recurrence(a, x, out=y, comm=SELF)
        cp.cuda.Device().synchronize()
        walls, gpus = [], []
        for _ in range(15):
            e0, e1 = cp.cuda.Event(), cp.cuda.Event()
            t0 = time.perf_counter()
            e0.record()
            distscan.linear_recurrence(a, x, out=y, comm=SELF)
            t1 = time.perf_counter()
            e1.record()
            e1.synchronize()
            t2 = time.perf_counter()
            walls.append(t2 - t0)
            gpus.append(cp.cuda.get_elapsed_time(e0, e1) * 1e-3)
            host = t1 - t0
        print(f"2^{log2n} {name:14s} wall {np.median(walls)*1e3:.3f} ms  events {np.median(gpus)*1e3:.3f} ms  "
              f"host (last) {host*1e6:.0f} us", flush=True)
n = 1 << 28
x = cp.random.RandomState(3).standard_normal(n, dtype=cp.float32)
y = cp.empty_like(x)
pr = cProfile.Profile()
pr.enable()
for _ in range(20):
    distscan.linear_recurrence(0.75, x, out=y, comm=SELF)
    cp.cuda.Device().synchronize()
pr.disable()
pstats.Stats(pr).sort_stats("tottime").print_stats(14)
