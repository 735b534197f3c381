"""Library example: a custom operator declared with distscan.Operator, forward fill of gaps.

    mpiexec -n 4 python docs/examples/custom_operator.py          # CPU
    mpiexec -n 4 python docs/examples/custom_operator.py --gpu    # also on GPUs (CuPy), one rank per GPU

A sensor's readings, split across ranks, have gaps (NaN). Forward fill replaces each gap with the
last reading before it. "The last valid value so far" is a scan of

    combine(a, b) = a if b is NaN else b         (a: the earlier side, b: the later one)

which is associative, not commutative, with identity NaN (an empty prefix has seen no reading).
A rank whose part starts with gaps takes the last reading of the ranks before it, across empty
ranks and ranks of nothing but gaps. Scanned in reverse, the same operator is backward fill.
docs/operators.md walks through this declaration.

The tests run this file (tests/test_examples_operators.py) and check what it prints.
"""

import sys

import numpy as np
from mpi4py import MPI

import distscan

ffill = distscan.Operator(
    "forward fill",
    lambda a, b: np.where(np.isnan(b), a, b),   # the CPU's combine, element by element on arrays
    identity=np.nan,                            # combine(identity, x) == x for every x
    cuda="isnan(b) ? a : b",                    # the same combine in C++, for the GPU kernels
    kinds="f",                                  # float dtypes only
    check=True,                                 # test associativity on samples of each call (debugging)
)

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()

# This rank's readings, about 40% missing: uneven pieces on purpose; with 3 ranks or more rank 1
# holds none and rank 2 nothing but gaps. Rank 0's first readings are missing: nothing before
# them to fill from, so they stay NaN.
n_local = 0 if (rank == 1 and size >= 3) else 20 + 9 * rank
readings = np.round(np.random.default_rng(rank).normal(20.0, 2.0, n_local), 1)
readings[np.random.default_rng(100 + rank).random(n_local) < 0.4] = np.nan
if rank == 0:
    readings[:3] = np.nan
if rank == 2:
    readings[:] = np.nan

filled = distscan.scan(readings, ffill, comm=comm)                       # forward fill
backfilled = distscan.scan(readings, ffill, reverse=True, comm=comm)     # backward fill

if "--gpu" in sys.argv:  # the same operator on GPUs: its cuda= expression runs in the scan kernels
    import cupy

    distscan.bind_gpu(comm)
    on_gpu = distscan.scan(cupy.asarray(readings), ffill, comm=comm)
    assert np.array_equal(cupy.asnumpy(on_gpu), filled, equal_nan=True)


def ffill_reference(v):
    """NumPy's forward fill: the index of the last valid value at or before each element."""
    last = np.where(np.isnan(v), 0, np.arange(len(v)))
    return v[np.maximum.accumulate(last)] if len(v) else v


# Check on rank 0 against NumPy on the gathered readings.
gathered = [comm.gather(v, root=0) for v in (readings, filled, backfilled)]
if rank == 0:
    all_readings, all_filled, all_backfilled = map(np.concatenate, gathered)
    assert np.array_equal(all_filled, ffill_reference(all_readings), equal_nan=True)
    assert np.array_equal(all_backfilled, ffill_reference(all_readings[::-1])[::-1], equal_nan=True)

gaps = int(np.isnan(readings).sum())
line = f"rank {rank}: no readings" if not n_local else \
    f"rank {rank}: {n_local} readings, {gaps} gaps, first filled value {filled[0]}, last {filled[-1]}"
lines = comm.gather(line, root=0)
if rank == 0:
    print("\n".join(lines))
    print(f"all {len(all_readings)} readings forward and backward filled as NumPy fills them "
          f"({int(np.isnan(all_filled).sum())} leading gaps stay NaN)")
