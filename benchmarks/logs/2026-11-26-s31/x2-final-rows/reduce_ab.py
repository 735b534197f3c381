"""Session 31: the carry of a segmented part (gpu.reduce) at 2^28 float32 in one tree (argv[1]):
no flag, dense flags (1e-3), and the recurrence (no restarts: a control). Median ms of 15."""
import sys, time, statistics
sys.path.insert(0, sys.argv[1])
import numpy as np, cupy as cp
from distscan._dtypes import scan_types
from distscan.ops import affine, get_op, segmented
from distscan.backends import cuda as gpu
n = 1 << 28
rs = cp.random.RandomState(7)
x = rs.standard_normal(n, dtype=cp.float32)
a = rs.uniform(0.5, 1.0, n).astype(cp.float32)
cases = {"seg f32, no flag": (segmented(get_op("sum"), False), x, (cp.zeros(n, bool),)),
         "seg f32, 1e-3": (segmented(get_op("sum"), False), x, (rs.random_sample(n) < 1e-3,)),
         "rev seg f32, 1e-3": (segmented(get_op("sum"), True), x, (rs.random_sample(n) < 1e-3,)),
         "recurrence f32": (affine(False, False), x, (a,))}
out = []
for name, (op, v, aux) in cases.items():
    types = scan_types(op, v.dtype, v.dtype if "recurrence" in name else None)
    rev = "rev" in name
    gpu.reduce(v, op, types, aux=aux, reverse=rev)
    ts = []
    for _ in range(15):
        cp.cuda.Device().synchronize(); t = time.perf_counter()
        gpu.reduce(v, op, types, aux=aux, reverse=rev)
        ts.append(time.perf_counter() - t)
    out.append(f"{name}: {statistics.median(ts) * 1e3:.3f} ms")
print(sys.argv[2], "|", "; ".join(out))
