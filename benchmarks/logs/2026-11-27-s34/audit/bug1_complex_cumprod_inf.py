# Complex cumprod with an infinite item: the distributed result differs in value from NumPy's
# (not only in the sign of a zero, which is all docs/api.md "Complex products" allows).
import warnings; warnings.simplefilter("ignore")
import numpy as np, distscan
from mpi4py import MPI
comm = MPI.COMM_WORLD
g = np.array([np.inf + 1j, np.inf + 1j, 0.5 - 0.5j], np.complex128)
parts = {1: [g], 2: [g[:2], g[2:]], 3: [g[:1], g[1:2], g[2:]]}[comm.size]
got = distscan.cumprod(parts[comm.rank], comm=comm)
full = np.concatenate(comm.allgather(got))
if comm.rank == 0:
    print("np.cumprod          :", np.cumprod(g))
    print(f"distscan {comm.size} rank(s)  :", full)
# the teaching path on one rank: the first item alone
one = distscan.cumprod(np.array([np.inf + 1j]), comm=MPI.COMM_SELF, algorithm="blelloch")
if comm.rank == 0:
    print("np.cumprod([inf+1j])                     :", np.cumprod(np.array([np.inf + 1j])))
    print("distscan algorithm='blelloch' (COMM_SELF) :", one)
