"""Library example: logcumsumexp of log-weights split across ranks, with op=np.logaddexp.

    mpiexec -n 4 python docs/examples/logcumsumexp.py

Particle filters and samplers keep weights as logarithms: the weights themselves would overflow
or underflow. The log of their running sum, log(w[0] + ... + w[i]), is a scan of
np.logaddexp(a, b) = log(exp(a) + exp(b)), an associative operator with identity -inf; dividing
by the total (subtracting its log, a reduce with the same operator) gives the log of the
normalised CDF, which resampling searches. The naive np.log(np.cumsum(np.exp(logw))) overflows
here: the log-weights reach several hundred (exp(710) is inf in float64).

The tests run this file (tests/test_examples_operators.py) and check what it prints.
"""

import numpy as np
from mpi4py import MPI

import distscan

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()

# This rank's log-weights, between -1500 and 900: uneven pieces on purpose, and rank 1 holds none
# when there are 3 ranks or more.
n_local = 0 if (rank == 1 and size >= 3) else 400 + 150 * rank
logw = np.random.default_rng(rank).uniform(-1500.0, 900.0, n_local)

log_running = distscan.scan(logw, np.logaddexp, comm=comm)    # also op="logaddexp" or "logcumsumexp"
log_total = distscan.reduce(logw, np.logaddexp, comm=comm)    # the same on every rank
log_cdf = log_running - log_total                             # <= 0; 0 at the global end
cdf = np.exp(log_cdf)                                         # safe now: between 0 and 1

# Check on rank 0 against NumPy's sequential np.logaddexp.accumulate on the gathered weights.
# Each logaddexp is within an ulp or two of the larger of its inputs' scale, and a split across
# ranks only regroups the same additions: the difference is bounded by n * eps * max|result|.
all_logw, all_running = comm.gather(logw, root=0), comm.gather(log_running, root=0)
if rank == 0:
    all_logw, all_running = np.concatenate(all_logw), np.concatenate(all_running)
    reference = np.logaddexp.accumulate(all_logw)
    tolerance = len(reference) * np.finfo(np.float64).eps * np.max(np.abs(reference))
    error = np.max(np.abs(all_running - reference))
    assert error <= tolerance, (error, tolerance)
    assert abs(log_total - reference[-1]) <= tolerance
    with np.errstate(over="ignore"):
        naive = np.log(np.cumsum(np.exp(all_logw)))
    assert not np.all(np.isfinite(naive))                     # the naive way overflowed

if n_local:
    last = np.round(log_cdf[-1], 1) + 0.0                    # + 0.0: no "-0.0"
    line = f"rank {rank}: {n_local} log-weights, log-CDF from {log_cdf[0]:.1f} to {last:.1f}"
else:
    line = f"rank {rank}: no log-weights"
lines = comm.gather(line, root=0)
if rank == 0:
    print("\n".join(lines))
    print(f"all {len(reference)} values match numpy.logaddexp.accumulate within {tolerance:.1e} "
          f"(largest difference {error:.1e}); log of the total {log_total:.6f}")
