"""s44: where does a segmented float32 product's time go (6 ms at 2^27 on an H200, 16x the sum)?"""
import sys, time
sys.path.insert(0, "benchmarks")
import numpy as np, cupy as cp
import distscan
from distscan.backends.cuda import extended, absorbing
from harness import events_interleaved
from mpi4py import MPI
SELF = MPI.COMM_SELF
n = 1 << 27
rs = cp.random.RandomState(1)
flags = rs.random_sample(n) < 1e-3
flags[0] = True
x = rs.uniform(0.99, 1.01, n).astype(cp.float32)
xi = rs.randint(1, 3, n).astype(cp.int32)
y = cp.empty_like(x); yi = cp.empty_like(xi)
x64 = x.astype(cp.float64); y64 = cp.empty_like(x64)
impls = {
  "seg sum f32": lambda: distscan.scan(x, "sum", segments=flags, out=y, comm=SELF),
  "seg prod f32": lambda: distscan.scan(x, "prod", segments=flags, out=y, comm=SELF),
  "seg prod f64": lambda: distscan.scan(x64, "prod", segments=flags, out=y64, comm=SELF),
  "seg prod i32": lambda: distscan.scan(xi, "prod", segments=flags, out=yi, comm=SELF),
  "prod f32 plain": lambda: distscan.scan(x, "prod", out=y, comm=SELF),
}
real = absorbing.absorbed_results
def skip(x, flags, columns, op, types, seed, exclusive, reverse, initial, host_dtype):
    return None, None, None
t = events_interleaved(impls, 5, hide_host=True)
for k, v in t.items(): print(f"{k:18s} {v*1e3:8.3f} ms")
extended.absorbed_results = skip
t = events_interleaved({"seg prod f32 no repair": impls["seg prod f32"]}, 5, hide_host=True)
for k, v in t.items(): print(f"{k:18s} {v*1e3:8.3f} ms")
extended.absorbed_results = real
# the repair alone
from distscan.backends.absorb import absorb_segmented
rows = x.reshape(n, 1); outc = y.reshape(n, 1)
for name, fn in {"absorb_segmented": lambda: absorb_segmented(cp, rows, outc, flags, None, False, False),
                 "x==0 any": lambda: bool(((rows == 0) | (outc == 0)).any())}.items():
    t = events_interleaved({name: fn}, 5)
    print(f"{name:18s} {t[name]*1e3:8.3f} ms")
# host wall of one call
cp.cuda.Device().synchronize(); t0 = time.perf_counter(); impls["seg prod f32"](); cp.cuda.Device().synchronize()
print("wall one call", (time.perf_counter() - t0) * 1e3, "ms")
import cupyx.profiler
print(cupyx.profiler.benchmark(impls["seg prod f32"], n_repeat=5, n_warmup=1))
