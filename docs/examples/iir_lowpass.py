"""Library example: a first-order IIR low-pass filter over a signal split across ranks.

    mpiexec -n 4 python docs/examples/iir_lowpass.py

The filter (an exponential moving average)

    y[i] = alpha * y[i-1] + (1 - alpha) * x[i],    y[-1] = 0

is a linear recurrence y[i] = a[i] * y[i-1] + b[i] with a = alpha and b = (1 - alpha) * x, which
distscan.linear_recurrence computes in parallel: each rank composes its part's maps
y -> a*y + b into one, the ranks exchange one map each, and every rank then runs the filter over
its own part starting from the exact y before it. The result is the sequential filter's, up to
rounding, at any number of ranks.

The tests run this file (tests/test_examples_operators.py) and check what it prints.
"""

import numpy as np
from mpi4py import MPI

import distscan

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()

alpha = 0.9          # the filter's pole: closer to 1 is smoother (and slower to follow)
rate = 1000.0        # samples per second

# This rank's piece of the signal: a 2 Hz sine with noise on top. Uneven pieces on purpose, and
# rank 1 holds none when there are 3 ranks or more.
n_local = 0 if (rank == 1 and size >= 3) else 300 + 170 * rank
first = distscan.exclusive_scan(n_local, comm=comm)          # samples on the ranks before this one
t = (first + np.arange(n_local)) / rate
clean = np.sin(2 * np.pi * 2 * t)
x = clean + 0.5 * np.random.default_rng(rank).standard_normal(n_local)

# The whole filter, one collective call. A scalar a is a constant coefficient.
y = distscan.linear_recurrence(alpha, (1 - alpha) * x, comm=comm)

# Check on rank 0 against the sequential filter over the gathered signal: a plain loop, and
# scipy.signal.lfilter (b = [1 - alpha], a = [1, -alpha]) when SciPy is installed.
signal, filtered = comm.gather(x, root=0), comm.gather(y, root=0)
if rank == 0:
    signal, filtered = np.concatenate(signal), np.concatenate(filtered)
    reference, prev = np.empty_like(signal), 0.0
    for i, v in enumerate(signal):
        prev = alpha * prev + (1 - alpha) * v
        reference[i] = prev
    # |alpha| < 1: rounding errors decay, so a few ulp of the signal's scale is the bound.
    np.testing.assert_allclose(filtered, reference, rtol=1e-12, atol=1e-12)
    checked = ["a Python loop"]
    try:
        from scipy.signal import lfilter
    except ImportError:
        pass
    else:
        np.testing.assert_allclose(filtered, lfilter([1 - alpha], [1, -alpha], signal), rtol=1e-12, atol=1e-12)
        checked.append("scipy.signal.lfilter")

if n_local:
    rms_in, rms_out = (np.sqrt(np.mean((v - clean) ** 2)) for v in (x, y))
    line = f"rank {rank}: {n_local} samples from sample {first}, rms error {rms_in:.2f} before the filter, " \
           f"{rms_out:.2f} after"
else:
    line = f"rank {rank}: no samples"
lines = comm.gather(line, root=0)
if rank == 0:
    print("\n".join(lines))
    print(f"all {len(signal)} filtered samples match {' and '.join(checked)}")
