# The "empty part" hint names float64/np.array([]) even when the empty part is int32
from mpi4py import MPI
import numpy as np, distscan
comm = MPI.COMM_WORLD; R = comm.rank
x = np.empty(0, np.int32) if R == 1 else np.arange(3, dtype=np.int64)
try:
    distscan.cumsum(x, comm=comm)
except ValueError as e:
    if R == 0: print(e)
