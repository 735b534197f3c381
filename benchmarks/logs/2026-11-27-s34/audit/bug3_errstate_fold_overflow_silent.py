# Under np.errstate(all="raise") an overflow that happens while the ranks' totals are folded
# (reduce on >= 2 ranks, an exclusive scan on >= 3 ranks) gives inf silently on every rank;
# NumPy's own reduce/cumsum of the concatenation raises FloatingPointError.
import numpy as np, distscan
from mpi4py import MPI
comm = MPI.COMM_WORLD
big = np.finfo(np.float64).max
x = np.array([big])                      # every rank: one item; no rank's own part overflows
g = np.concatenate(comm.allgather(x))
def show(label, fn):
    try:
        with np.errstate(all="raise"):
            r = fn()
        r = comm.allgather(r)
        out = f"returned {r}"
    except Exception as e:
        out = f"raised {type(e).__name__}: {e}"
    if comm.rank == 0:
        print(f"{label:45s} {out}")
show("numpy np.sum(concatenation)", lambda: np.sum(g))
show("distscan.reduce(x)", lambda: distscan.reduce(x, comm=comm))
show("numpy cumsum(concat) (exclusive input)", lambda: np.cumsum(g[:-1]))
show("distscan.cumsum(x, exclusive=True)", lambda: distscan.cumsum(x, exclusive=True, comm=comm))
show("distscan.cumsum(x)  (inclusive, for contrast)", lambda: distscan.cumsum(x, comm=comm))
