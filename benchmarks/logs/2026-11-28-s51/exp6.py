"""Where a NumPy-scalar EMA call's 0.3 ms of host time goes at 2^28 (exp4), and whether calls
interleaved with other kinds (as bench_multi_gpu_operators.py's) keep the warm route."""
import cProfile, pstats, sys, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
import cupy as cp, numpy as np
import distscan
from distscan import _kinds
from mpi4py import MPI
SELF = MPI.COMM_SELF
n = 1 << 28
x = cp.random.RandomState(3).standard_normal(n, dtype=cp.float32)
a = cp.random.RandomState(4).uniform(0.5, 1, n).astype(cp.float32)
flags = cp.random.RandomState(5).random_sample(n) < 1e-3
y = cp.empty_like(x)
for _ in range(3):
    distscan.linear_recurrence(np.float32(0.75), x, out=y, comm=SELF)
cp.cuda.Device().synchronize()
pr = cProfile.Profile()
pr.enable()
for _ in range(10):
    distscan.linear_recurrence(np.float32(0.75), x, out=y, comm=SELF)
    cp.cuda.Device().synchronize()
pr.disable()
pstats.Stats(pr).sort_stats("cumulative").print_stats(25)
# interleaved kinds, as the multi-GPU benchmark's alone column
calls = {"cumsum": lambda: distscan.cumsum(x, out=y, comm=SELF),
         "seg": lambda: distscan.cumsum(x, segments=flags, out=y, comm=SELF),
         "rec": lambda: distscan.linear_recurrence(a, x, out=y, comm=SELF),
         "ema": lambda: distscan.linear_recurrence(0.75, x, out=y, comm=SELF),
         "rev": lambda: distscan.cumsum(x, reverse=True, out=y, comm=SELF),
         "nan": lambda: distscan.nancumsum(x, out=y, comm=SELF),
         "log": lambda: distscan.scan(x, np.logaddexp, out=y, comm=SELF),
         "comp": lambda: distscan.cumsum(x, compensated=True, out=y, comm=SELF)}
rng = np.random.default_rng(1)
seen = {k: [] for k in calls}
for _ in range(9):
    for k in rng.permutation(list(calls)):
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        calls[k]()
        t1 = time.perf_counter()
        cp.cuda.Device().synchronize()
        seen[k].append((t1 - t0, time.perf_counter() - t0))
for k, v in seen.items():
    print(f"{k:6s} host {np.median([h for h, _ in v]) * 1e6:7.0f} us  wall {np.median([w for _, w in v]) * 1e3:.3f} ms")
print("kinds cached:", len(getattr(_kinds, "KINDS", {})) if hasattr(_kinds, "KINDS") else [n for n in dir(_kinds) if n.isupper()])
