from mpi4py import MPI
import numpy as np, distscan
comm = MPI.COMM_WORLD; R = comm.rank
a = [np.array([1.0]), np.array([1.0, np.inf]), np.array([1.0])][R]
b = [np.array([2.0]), np.array([-1.0, 0.0]), np.array([0.0])][R]
y = distscan.linear_recurrence(a, b, comm=comm)
g = comm.gather(y)
if R == 0: print("initial=0, 3 ranks:", np.concatenate(g), " loop: [2, 1, inf, inf]")
