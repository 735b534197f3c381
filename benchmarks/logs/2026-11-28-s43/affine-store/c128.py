import sys, traceback, numpy as np, cupy as cp
import distscan
from mpi4py import MPI
n = 257
for dt in ("complex128", "complex64", "float64"):
    for alg in ("lookback", "lookahead"):
        for seg in (None, cp.asarray(np.arange(n) % 50 == 0)):
            for rev in (False, True):
                for init in (0, 1 + 1j if dt[0] == "c" else 2.0):
                    try:
                        a = cp.full(n, 0.5, dt); b = cp.ones(n, dt)
                        y = distscan.linear_recurrence(a, b, initial=init, algorithm=alg, segments=seg, reverse=rev, comm=MPI.COMM_SELF)
                        cp.cuda.Device().synchronize()
                    except Exception as e:
                        print(sys.argv[1], dt, alg, seg is not None, rev, init, "FAIL", type(e).__name__, str(e)[:80])
print(sys.argv[1], "done")
