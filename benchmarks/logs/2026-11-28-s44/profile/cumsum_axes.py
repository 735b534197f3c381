"""s44: CuPy's cumsum / argmax / any along axis 0 of (n, w) arrays against 1-D, 2^27 items."""
import sys
sys.path.insert(0, "benchmarks")
import cupy as cp
from harness import events_interleaved
n = 1 << 27
rs = cp.random.RandomState(1)
b1 = rs.random_sample(n) < 0.5
f1 = rs.uniform(0.99, 1.01, n).astype(cp.float32)
b2 = b1.reshape(n, 1)
b4 = (rs.random_sample(n) < 0.5).reshape(n // 4, 4)
b4t = cp.ascontiguousarray(b4.T)
print("accelerators", cp._core._accelerator.get_routine_accelerators(), cp._core._accelerator.get_reduction_accelerators())
cases = {
    "cumsum 1-D": lambda: cp.cumsum(b1, dtype=cp.int64),
    "cumsum (n,1) axis 0": lambda: cp.cumsum(b2, axis=0, dtype=cp.int64),
    "cumsum (n/4,4) axis 0": lambda: cp.cumsum(b4, axis=0, dtype=cp.int64),
    "cumsum (4,n/4) axis 1": lambda: cp.cumsum(b4t, axis=1, dtype=cp.int64),
    "cumsum uint8 (n,1) axis 0": lambda: cp.cumsum(b2, axis=0, dtype=cp.uint8),
    "argmax 1-D": lambda: b1.argmax(),
    "argmax (n,1) axis 0": lambda: b2.argmax(axis=0),
    "any 1-D": lambda: b1.any(),
    "any (n,1)": lambda: b2.any(),
    "any (n,1) axis 0": lambda: b2.any(axis=0),
    "(f==0)|(f==0) any": lambda: ((f1 == 0) | (f1 == 0)).any(),
    "count_nonzero": lambda: cp.count_nonzero(f1 == 0),
    "flatnonzero": lambda: cp.flatnonzero(b1[: n // 1000]),
}
t = events_interleaved(cases, 5)
for k, v in t.items():
    print(f"{k:28s} {v * 1e3:9.3f} ms")
