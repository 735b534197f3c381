"""distscan: distributed prefix scans over MPI ranks, on CPUs and GPUs.

Each rank passes its local part of an array distributed along axis 0 and gets
back its part of the global scan::

    from mpi4py import MPI
    import numpy as np, distscan

    comm = MPI.COMM_WORLD
    local = np.arange(5) + 5 * comm.rank
    part = distscan.cumsum(local, comm=comm)   # this rank's slice of cumsum(0..5p-1)
"""

import importlib

__version__ = "0.1.0"

# The public names, imported on first use (PEP 562): ``import distscan`` itself imports nothing
# heavy, so that the command (``python -m distscan``, the ``distscan`` script) can set up its
# process (distscan.cli: one BLAS thread per rank) before NumPy loads.
_PUBLIC = {
    "scan": ".api", "cumsum": ".api", "cumprod": ".api", "cummax": ".api", "cummin": ".api",
    "nancumsum": ".api", "nancumprod": ".api", "cumulative_sum": ".api", "cumulative_prod": ".api",
    "linear_recurrence": ".api", "exclusive_scan": ".api", "reduce": ".api", "Operator": ".ops", "OPS": ".ops",
    "bind_gpu": ".gpus", "DistScanError": ".dist.agree", "ALGORITHMS": ".algorithms",
}

__all__ = ["scan", "cumsum", "cumprod", "cummax", "cummin", "nancumsum", "nancumprod", "cumulative_sum",
           "cumulative_prod", "linear_recurrence", "Operator", "exclusive_scan", "reduce", "bind_gpu",
           "DistScanError", "OPS", "ALGORITHMS", "__version__"]


def __getattr__(name):
    module = _PUBLIC.get(name)
    if module is None:
        try:  # a subpackage or module (distscan.api, distscan.pipeline, ...), as an eager import gave
            value = importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    else:
        value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_PUBLIC))
