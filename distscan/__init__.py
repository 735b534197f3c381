"""distscan: distributed prefix scans over MPI ranks, on CPUs and GPUs.

Each rank passes its local part of an array distributed along axis 0 and gets
back its part of the global scan::

    from mpi4py import MPI
    import numpy as np, distscan

    comm = MPI.COMM_WORLD
    local = np.arange(5) + 5 * comm.rank
    part = distscan.cumsum(local, comm=comm)   # this rank's slice of cumsum(0..5p-1)
"""

from .gpus import bind_gpu
from .dist.agree import DistScanError
from .algorithms import ALGORITHMS
from .api import (cummax, cummin, cumprod, cumsum, cumulative_prod, cumulative_sum, exclusive_scan,
                  linear_recurrence, nancumprod, nancumsum, reduce, scan)
from .ops import OPS, Operator

__version__ = "0.1.0"

__all__ = ["scan", "cumsum", "cumprod", "cummax", "cummin", "nancumsum", "nancumprod", "cumulative_sum",
           "cumulative_prod", "linear_recurrence", "Operator", "exclusive_scan", "reduce", "bind_gpu",
           "DistScanError", "OPS", "ALGORITHMS", "__version__"]
