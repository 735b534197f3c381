"""Do the casts distscan leaves to CuPy flush float32 subnormals?  CuPy compiles its own elementwise
kernels (astype among them) with -ftz=true (cupy/cuda/compiler.py, _compile_with_cache_cuda), which
the scan kernels no longer are (modules.py).  NOT RUN (written 2026-11-29, fifty-third session).

    PYTHONPATH=$PWD python3 benchmarks/logs/2026-11-29-s53/cast_probe.py
"""
import cupy as cp
import numpy as np

import distscan
from mpi4py import MPI

SELF = MPI.COMM_SELF
tiny32 = np.finfo(np.float32).smallest_subnormal
x32 = np.full(1000, tiny32, np.float32)
x64 = np.full(1000, 1.0e-40, np.float64)  # a float32 subnormal once cast
cases = {
    "cupy astype f32->f64": (lambda: cp.asarray(x32).astype(cp.float64), lambda: x32.astype(np.float64)),
    "cupy astype f64->f32": (lambda: cp.asarray(x64).astype(cp.float32), lambda: x64.astype(np.float32)),
    "cumsum f32, dtype=f64": (lambda: distscan.cumsum(cp.asarray(x32), dtype=np.float64, comm=SELF),
                              lambda: np.cumsum(x32, dtype=np.float64)),
    "cumsum f64, dtype=f32": (lambda: distscan.cumsum(cp.asarray(x64), dtype=np.float32, comm=SELF),
                              lambda: np.cumsum(x64, dtype=np.float32)),
    "recurrence a f64 array, b f32": (
        lambda: distscan.linear_recurrence(cp.full(1000, 1.0, cp.float64), cp.asarray(x32), comm=SELF),
        lambda: distscan.linear_recurrence(np.full(1000, 1.0), x32, comm=SELF)),
}
for name, (gpu, ref) in cases.items():
    got, want = cp.asnumpy(gpu()), ref()
    print(f"{name:32s} last {got[-1]!r:>24} numpy {want[-1]!r:>24} equal {bool(np.array_equal(got, want))}")
