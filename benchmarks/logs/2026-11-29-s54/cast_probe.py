"""Do the casts distscan leaves to CuPy flush float32 subnormals?  CuPy compiles its own elementwise
kernels (astype among them) with -ftz=true (cupy/cuda/compiler.py, _compile_with_cache_cuda), which
the scan kernels no longer are (modules.py).  Written in the fifty-third session, first run in the fifty-fourth (gpu1.sh).

    PYTHONPATH=$PWD python3 benchmarks/logs/2026-11-29-s54/cast_probe.py
"""
import cupy as cp
import numpy as np

import distscan
from mpi4py import MPI

SELF = MPI.COMM_SELF
tiny32 = np.finfo(np.float32).smallest_subnormal
x32 = np.full(1000, tiny32, np.float32)
x64 = np.full(1000, 1.0e-40, np.float64)  # a float32 subnormal once cast
b64 = np.zeros(1000)
b64[0] = 1.0
cases = {
    "cupy astype f32->f64": (lambda: cp.asarray(x32).astype(cp.float64), lambda: x32.astype(np.float64)),
    "cupy astype f64->f32": (lambda: cp.asarray(x64).astype(cp.float32), lambda: x64.astype(np.float32)),
    "cumsum f32, dtype=f64": (lambda: distscan.cumsum(cp.asarray(x32), dtype=np.float64, comm=SELF),
                              lambda: np.cumsum(x32, dtype=np.float64)),
    "cumsum f64, dtype=f32": (lambda: distscan.cumsum(cp.asarray(x64), dtype=np.float32, comm=SELF),
                              lambda: np.cumsum(x64, dtype=np.float32)),
    # a float32 coefficient array with float64 b: the coefficients cast to float64 by CuPy's astype
    # (_call._coefficient_rows, _kinds.Kind.aux); y[1] = a[1] * 1.0 = the subnormal, or 0 if flushed
    "recurrence a f32 subnormal, b f64": (
        lambda: distscan.linear_recurrence(cp.asarray(x32), cp.asarray(b64), comm=SELF)[:2],
        lambda: distscan.linear_recurrence(x32, b64, comm=SELF)[:2]),
}
for name, (gpu, ref) in cases.items():
    got, want = cp.asnumpy(gpu()), np.asarray(ref())
    print(f"{name:34s} last {got[-1]!r:>24} numpy {want[-1]!r:>24} equal {bool(np.array_equal(got, want))}")
