"""A 2^20-row segmented cumsum a rank (int64), fused call, flags of density 0, 1e-6 and 1e-2: best
of 15 calls, slowest rank.  Sixty-second session: the compiled flag search read every row of a part
without a flag.    mpiexec -n K python bigseg.py TREE"""
import sys, time, numpy as np
sys.path.insert(0, sys.argv[1])
from mpi4py import MPI
import distscan
comm = MPI.COMM_WORLD
n = 1 << 20
rng = np.random.default_rng(comm.rank)
x = rng.integers(-9, 9, n).astype(np.int64)
y = np.empty_like(x)
for dens in (0.0, 1e-6, 1e-2):
    f = rng.random(n) < dens
    for _ in range(5): distscan.cumsum(x, segments=f, out=y, comm=comm)
    best = 1e9
    for _ in range(15):
        comm.Barrier(); t0 = time.perf_counter()
        distscan.cumsum(x, segments=f, out=y, comm=comm)
        best = min(best, comm.allreduce(time.perf_counter() - t0, op=MPI.MAX))
    if comm.rank == 0: print(sys.argv[1], "density", dens, f"{best*1e3:.3f} ms")
