# linear_recurrence with initial != 0 and an infinite coefficient gives NaN where the loop gives inf
from mpi4py import MPI
import numpy as np, distscan
comm = MPI.COMM_WORLD; R = comm.rank; P = comm.size
a = np.array([2.0, np.inf]); b = np.array([-1.0, 0.0]); ini = 1.0
# the loop: y0 = 2*1 - 1 = 1, y1 = inf*1 + 0 = inf
part = slice(0, 2) if R == 0 else slice(2, 2)   # everything on rank 0 (others empty)
y = distscan.linear_recurrence(a[part], b[part], initial=ini, comm=comm)
yr = distscan.linear_recurrence(a[::-1][part], b[::-1][part], initial=ini, reverse=True, comm=comm)
if R == 0:
    print("forward:", y, " expected [1. inf]")
    print("reverse:", yr, " expected [inf 1.]")
