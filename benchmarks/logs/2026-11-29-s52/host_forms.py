"""Host time of a warm linear recurrence call by the form of its one coefficient: a Python float,
a NumPy scalar (float32, float64), a 0-d CuPy array, the full array (control); and whether any
call after the first built a Part.  One GPU, 2^24 float32 b, out=y, COMM_SELF: perf_counter
around each call (the device synchronised between), median of 30 calls a form, forms in a new
random order each round."""
import sys, time
from collections import defaultdict
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
import cupy as cp, numpy as np
import distscan
from distscan import _call
from mpi4py import MPI
SELF = MPI.COMM_SELF
built = []
real_init = _call.Part.__init__


def counting(self, *a, **k):
    built.append(1)
    return real_init(self, *a, **k)


_call.Part.__init__ = counting
n = 1 << 24
x = cp.random.RandomState(3).standard_normal(n, dtype=cp.float32)
y = cp.empty_like(x)
y64 = cp.empty(n, cp.float64)
full = cp.full(n, 0.75, cp.float32)
forms = {"python float": lambda: distscan.linear_recurrence(0.75, x, out=y, comm=SELF),
         "np.float32": lambda: distscan.linear_recurrence(np.float32(0.75), x, out=y, comm=SELF),
         "np.float64": lambda: distscan.linear_recurrence(np.float64(0.75), x, out=y64, comm=SELF),
         "0-d cupy f32": lambda: distscan.linear_recurrence(zero_d, x, out=y, comm=SELF),
         "array (control)": lambda: distscan.linear_recurrence(full, x, out=y, comm=SELF)}
zero_d = cp.asarray(np.float32(0.75))
for f in forms.values():
    f(); f()
cp.cuda.Device().synchronize()
times, parts = defaultdict(list), defaultdict(int)
rng = np.random.default_rng(1)
for _ in range(30):
    for k in rng.permutation(list(forms)):
        cp.cuda.Device().synchronize()
        before = len(built)
        t0 = time.perf_counter()
        forms[k]()
        times[k].append(time.perf_counter() - t0)
        parts[k] += len(built) - before
cp.cuda.Device().synchronize()
print(f"{'form':18s} {'host us (median of 30)':>24s} {'Parts built':>12s}")
for k in forms:
    print(f"{k:18s} {np.median(times[k]) * 1e6:24.1f} {parts[k]:12d}")
