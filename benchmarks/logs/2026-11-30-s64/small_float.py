# 2-rank small float64 cumsum calls: mpiexec -n 2 python small_float.py TREE N (TREE: the repository root to import distscan from)
import sys, time, statistics
sys.path.insert(0, sys.argv[1])
import numpy as np, distscan
from mpi4py import MPI
comm = MPI.COMM_WORLD
x = np.random.default_rng(comm.rank).standard_normal(int(sys.argv[2]))
out = np.empty_like(x)
for _ in range(50): distscan.cumsum(x, comm=comm, out=out)
res = []
for r in range(7):
    comm.Barrier(); t = time.perf_counter()
    for _ in range(1000): distscan.cumsum(x, comm=comm, out=out)
    dt = comm.allreduce(time.perf_counter() - t, op=MPI.MAX)
    res.append(dt / 1000 * 1e6)
if comm.rank == 0:
    print(sys.argv[1].split('/')[-1] or "P", sys.argv[2], f"median {statistics.median(res):.2f} us min {min(res):.2f}", distscan.__file__)
