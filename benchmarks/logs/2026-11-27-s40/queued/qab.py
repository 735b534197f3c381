"""Same-process A/B of the queued seeded scan on 2 GPUs: hotpath.queue_fast on, and off
(general.queue_fast replaced by a function returning None), alternating."""
import sys, time, statistics as st
import numpy as np
from mpi4py import MPI
import cupy as cp
import distscan
from distscan.gpus import bind_gpu
from distscan.backends.cuda import general, queued
comm = MPI.COMM_WORLD
bind_gpu(comm)
ARMS = [0]
_arm = queued.Gate.arm
def arm(self, s):
    ARMS[0] += 1
    r = _arm(self, s)
    if r is None: print("arm refused", flush=True)
    return r
queued.Gate.arm = arm
on = general.queue_fast
off = lambda *a, **k: None
n = 1 << int(sys.argv[1]) if len(sys.argv) > 1 else 1 << 28
x = cp.random.random(n, dtype=cp.float32); y = cp.empty_like(x)
res = {"queued": [], "after": []}
for r in range(4):
    for mode in ("queued", "after"):
        general.queue_fast = on if mode == "queued" else off
        for _ in range(2): distscan.cumsum(x, comm=comm, out=y)
        cp.cuda.Device().synchronize()
        for _ in range(9):
            comm.Barrier(); t = time.perf_counter()
            distscan.cumsum(x, comm=comm, out=y)
            cp.cuda.Device().synchronize()
            dt = comm.allreduce(time.perf_counter() - t, op=MPI.MAX)
            res[mode].append(dt * 1e3)
if comm.rank == 0:
    print("arms on rank 0:", ARMS[0], "n", n)
    for k, v in res.items():
        print(f"{k:8s} median {st.median(v):.3f} ms  min {min(v):.3f}  rounds {[round(st.median(v[i*9:(i+1)*9]),3) for i in range(4)]}")
