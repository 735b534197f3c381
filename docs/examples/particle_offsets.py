"""Library example: where each cell's and each species' particles start, from segmented scans.

    mpiexec -n 4 python docs/examples/particle_offsets.py

A particle code keeps its particles sorted by cell, and inside a cell by species. The table of
counts has one row per (cell, species), in that order: row k is cell k // SPECIES, species
k % SPECIES. Its rows are split across the ranks by row count, not by cell, so a cell's rows may
straddle ranks. From the counts:

    offset  = exclusive cumsum of counts              where bucket (cell, species) starts in the
                                                      global particle array
    within  = the same scan restarted at every cell   where the species starts inside its cell
              (segments=: True at a cell's first row)
    per_cell = reverse segmented cumsum               at a cell's first row: the cell's total

and offset - within is where the cell itself starts. Segments may span any number of ranks.

The tests run this file (tests/test_examples_operators.py) and check what it prints.
"""

import numpy as np
from mpi4py import MPI

import distscan

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()

SPECIES = 3   # electrons, ions, neutrals

# This rank's rows of the table: uneven pieces on purpose (not whole cells), and rank 1 holds
# none when there are 3 ranks or more.
n_local = 0 if (rank == 1 and size >= 3) else 10 + 7 * rank
row = distscan.exclusive_scan(n_local, comm=comm) + np.arange(n_local)   # global row numbers
cell, species = row // SPECIES, row % SPECIES
counts = np.random.default_rng(rank).integers(0, 6, n_local).astype(np.int32)

first_row_of_cell = species == 0
offset = distscan.cumsum(counts, exclusive=True, comm=comm)                        # int64, as numpy.cumsum
within = distscan.cumsum(counts, exclusive=True, segments=first_row_of_cell, comm=comm)
per_cell = distscan.cumsum(counts, reverse=True, segments=first_row_of_cell, comm=comm)
cell_start = offset - within

# Check on rank 0 against NumPy on the gathered table, one cell at a time.
gathered = [comm.gather(v, root=0) for v in (cell, counts, offset, within, per_cell, cell_start)]
if rank == 0:
    all_cell, all_counts, all_offset, all_within, all_per_cell, all_cell_start = map(np.concatenate, gathered)
    assert np.array_equal(all_offset, np.cumsum(all_counts) - all_counts)
    for c in np.unique(all_cell):
        rows = np.flatnonzero(all_cell == c)
        n = all_counts[rows]
        assert np.array_equal(all_within[rows], np.cumsum(n) - n)                # exclusive, inside the cell
        assert np.array_equal(all_per_cell[rows], np.cumsum(n[::-1])[::-1])      # reverse, inside the cell
        assert np.all(all_cell_start[rows] == all_offset[rows[0]])               # one start per cell
    assert all_cell_start[-1] + all_per_cell[all_cell == all_cell[-1]][0] == all_counts.sum()  # last cell

if n_local:
    line = (f"rank {rank}: {n_local} rows ({row[0]}..{row[-1]}, cells {cell[0]}..{cell[-1]}), "
            f"{int(counts.sum())} particles, the first row's bucket starts at {offset[0]}, its cell at {cell_start[0]}")
else:
    line = f"rank {rank}: no rows"
lines = comm.gather(line, root=0)
if rank == 0:
    print("\n".join(lines))
    print(f"all {len(all_counts)} rows match NumPy: {int(all_counts.sum())} particles in "
          f"{len(np.unique(all_cell))} cells")
