"""Library example: each rank owns a piece of a distributed array and gets its piece of the scan.

    mpiexec -n 4 python docs/examples/mpi_cumsum.py

The tests run this file (tests/test_examples.py) and check what it prints.
"""

import numpy as np
from mpi4py import MPI

import distscan

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()

# Uneven pieces on purpose: rank r holds r + 2 values, the global array is 0, 1, 2, ...
counts = [r + 2 for r in range(size)]
start = sum(counts[:rank])
local = np.arange(start, start + counts[rank], dtype=np.int32)

running = distscan.cumsum(local, comm=comm)                   # int64, as numpy.cumsum gives
before = distscan.cumsum(local, comm=comm, exclusive=True)     # what came before each element
peak = distscan.cummax(np.sin(local.astype(np.float64)), comm=comm)
total = distscan.reduce(local, comm=comm)                      # the same on every rank

# Check against NumPy on the whole array, which every rank can build here.
whole = np.arange(sum(counts), dtype=np.int32)
assert np.array_equal(running, np.cumsum(whole)[start:start + counts[rank]])
assert np.array_equal(before, (np.cumsum(whole) - whole)[start:start + counts[rank]])
assert np.array_equal(peak, np.maximum.accumulate(np.sin(whole.astype(np.float64)))[start:start + counts[rank]])
assert total == whole.sum()

# Rank 0 prints for everyone (output of several ranks would interleave).
lines = comm.gather(f"rank {rank}: last running sum {running[-1]}, global total {total}", root=0)
if rank == 0:
    print("\n".join(lines))
