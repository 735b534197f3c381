"""``python -m distscan INPUT.npy ...``: see :mod:`distscan.cli` (``python -m distscan --help``)."""

import os
import signal
import sys
import time

# the variables by which launchers tell a process its rank (distscan.cli.signals has the sizes)
_RANK_VARS = ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID")

# Seconds a rank other than 0 waits before its line, as distscan.cli.signals._QUIET_S (not imported
# from there: this runs where that module may not have loaded): one line for a ^C to mpiexec.
_QUIET_S = 1.0


class _Terminated(KeyboardInterrupt):
    """SIGTERM while the command starts, raised as a ^C is (Python's default action for SIGTERM
    ends the process without a word): the same one line, then death by the SIGTERM itself."""

    signum = signal.SIGTERM


def _terminated(signum, frame):
    raise _Terminated


def run() -> int:
    """The command (``python -m distscan`` and the ``distscan`` script): :func:`distscan.cli.main`.

    An interrupt (^C to ``mpiexec``, or SIGTERM) while NumPy and MPI load, before the command's own
    signal watcher is up (:class:`distscan.cli.signals.Interrupts`), ends this rank with one line
    instead of a traceback per rank (or, for SIGTERM, no word at all), and by the signal itself: a
    launcher tears the job down when a rank dies of a signal, not when it exits with a status (the
    other ranks would wait in ``MPI_Init`` for it forever).  Nothing can have been published that
    early.  The same holds after the watcher of a run that published nothing (a published run
    ignores the signals; the watcher gives the handlers set here back otherwise)."""
    phase = " while starting"
    try:
        earlier_sigterm = signal.signal(signal.SIGTERM, _terminated)
        handled = True
    except ValueError:  # not the main thread: Python's defaults stay
        handled = False
    try:
        from .cli import main, signals
        try:
            from mpi4py import MPI  # noqa: F401 - MPI_Init here, where an interrupt is caught
        except ImportError:
            pass  # the command then runs as one process (distscan.cli.main says so)
        signals.HOLD_AFTER_PUBLISH = True
        phase = ""
        return main()  # its watcher is up only inside: a ^C before or after it is caught here too
    except KeyboardInterrupt as interrupt:
        signum = getattr(interrupt, "signum", signal.SIGINT)
        rank = next((os.environ[v] for v in _RANK_VARS if os.environ.get(v, "").isdigit()), None)
        if rank not in (None, "0"):  # rank 0's line, or its death by the signal, ends this rank first
            try:
                time.sleep(_QUIET_S)
            except KeyboardInterrupt:
                pass
        where = f"rank {rank}: " if rank is not None else ""
        sys.stderr.write(f"distscan: error: {where}interrupted by {signal.Signals(signum).name}{phase}; "
                         "nothing was published\n")
        sys.stderr.flush()
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return 128 + signum  # (where the signal does not end the process at once)
    finally:
        # The handler serves the start-up only: a SIGTERM after main() returns (in MPI's finalisation
        # at exit) takes the action it had before, not a _Terminated raised in an atexit callback.
        if handled and signal.getsignal(signal.SIGTERM) is _terminated:
            signal.signal(signal.SIGTERM, earlier_sigterm if earlier_sigterm is not None else signal.SIG_DFL)


if __name__ == "__main__":
    raise SystemExit(run())
