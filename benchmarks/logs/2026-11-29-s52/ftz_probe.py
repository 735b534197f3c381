"""Does the GPU flush float32 subnormals to zero (CuPy compiles RawModules with -ftz=true)?
distscan.cumsum of subnormal float32 and float64 items against NumPy's, CuPy's cumsum, and a
one-line RawModule's a + b under CuPy's defaults and with -ftz=false among our options."""
import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
import cupy as cp, numpy as np
import distscan
from mpi4py import MPI
SELF = MPI.COMM_SELF
for dt in (np.float32, np.float64):
    tiny = np.finfo(dt).smallest_subnormal
    x = np.full(1000, tiny, dt)
    want = np.cumsum(x)
    for name, got in (("distscan.cumsum", distscan.cumsum(cp.asarray(x), comm=SELF)),
                      ("distscan reverse", distscan.cumsum(cp.asarray(x), reverse=True, comm=SELF)[::-1]),
                      ("distscan recurrence a=1.0", distscan.linear_recurrence(1.0, cp.asarray(x), comm=SELF)),
                      ("cupy.cumsum", cp.cumsum(cp.asarray(x)))):
        g = cp.asnumpy(got)
        print(f"{np.dtype(dt).name:8s} {name:28s} last {g[-1]!r:>14s} numpy {want[-1]!r:>14s} "
              f"equal {bool(np.array_equal(g, want))}")
src = 'extern "C" __global__ void k(const float* a, float* o) { o[0] = a[0] + a[1]; o[1] = a[0] * 2.0f; }'
a = cp.asarray(np.full(2, np.finfo(np.float32).smallest_subnormal, np.float32))
for opts in ((), ("-ftz=false",), ("-ftz=false", "--ftz=false")):
    o = cp.zeros(2, cp.float32)
    try:
        cp.RawModule(code=src, options=opts).get_function("k")((1,), (1,), (a, o))
        print("RawModule options", opts, "->", cp.asnumpy(o).tolist())
    except Exception as e:  # noqa: BLE001
        print("RawModule options", opts, "failed:", str(e)[:200])
