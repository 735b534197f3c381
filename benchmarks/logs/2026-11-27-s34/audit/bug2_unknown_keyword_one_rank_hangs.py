# One rank passes an unknown keyword (or reduce(initial=)); that rank raises TypeError locally, the others
# wait in the collective forever. Run: timeout 20 mpiexec -n 2 python bug2_unknown_keyword_one_rank_hangs.py CASE
# with CASE in reduce_initial_all (control, all ranks), reduce_initial, cumsum_kw, linrec_kw.
import sys, numpy as np, distscan
from mpi4py import MPI
R = MPI.COMM_WORLD.rank
case = sys.argv[1]
x = np.arange(4.0)
try:
    if case == "reduce_initial":
        r = distscan.reduce(x, initial=1.0) if R == 1 else distscan.reduce(x)
    elif case == "cumsum_kw":
        r = distscan.cumsum(x, bogus=1) if R == 1 else distscan.cumsum(x)
    elif case == "linrec_kw":
        r = distscan.linear_recurrence(0.5, x, bogus=1) if R == 1 else distscan.linear_recurrence(0.5, x)
    elif case == "reduce_initial_all":
        r = distscan.reduce(x, initial=1.0)
    print(R, "ok", r, flush=True)
except Exception as e:
    print(R, "raised", repr(e), flush=True)
