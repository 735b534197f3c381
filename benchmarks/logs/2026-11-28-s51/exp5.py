"""Which kernels one EMA call launches, by how a is given (exp4: a NumPy scalar or a 0-d CuPy
array took 1.07 ms of GPU time at 2^28 where a Python float took 0.88): run under
ncu --metrics gpu__time_duration.sum; markers are cupy fills of a size that names the way."""
import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
import cupy as cp, numpy as np
import distscan
from mpi4py import MPI
n = 1 << 27
x = cp.random.RandomState(3).standard_normal(n, dtype=cp.float32)
y = cp.empty_like(x)
ways = {"python float": 0.75, "np.float32": np.float32(0.75), "cupy 0-d": cp.asarray(np.float32(0.75))}
for name, a in ways.items():
    for _ in range(2):
        distscan.linear_recurrence(a, x, out=y, comm=MPI.COMM_SELF)
cp.cuda.Device().synchronize()
for k, (name, a) in enumerate(ways.items()):
    cp.full(1000 + k, 1.0, cp.float32)  # marker: a fill of 1000 + k items
    distscan.linear_recurrence(a, x, out=y, comm=MPI.COMM_SELF)
    cp.cuda.Device().synchronize()
    print("done", name, flush=True)
