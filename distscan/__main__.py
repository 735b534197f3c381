"""``python -m distscan INPUT.npy ...``: see :mod:`distscan.cli` (``python -m distscan --help``)."""

import os
import sys

# the variables by which launchers tell a process its rank (distscan.cli.signals has the sizes)
_RANK_VARS = ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID")


def run() -> int:
    """The command (``python -m distscan`` and the ``distscan`` script): :func:`distscan.cli.main`.

    An interrupt (^C to ``mpiexec``) while NumPy and MPI load, before the command's own signal
    watcher is up, ends this rank with one line and status 130, as the watcher would, instead of
    a traceback per rank.  Nothing can have been published that early."""
    try:
        from .cli import main
        try:
            from mpi4py import MPI  # noqa: F401 - MPI_Init here, where an interrupt is caught
        except ImportError:
            pass  # the command then runs as one process (distscan.cli.main says so)
    except KeyboardInterrupt:
        rank = next((os.environ[v] for v in _RANK_VARS if os.environ.get(v, "").isdigit()), None)
        where = f"rank {rank}: " if rank is not None else ""
        sys.stderr.write(f"distscan: error: {where}interrupted by SIGINT while starting; nothing was published\n")
        return 130
    return main()


if __name__ == "__main__":
    raise SystemExit(run())
