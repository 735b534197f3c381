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


# What a signal before the command's own watcher interrupts: " while starting" until NumPy and
# MPI are up (run() sets "" then)
_phase = " while starting"
# (as distscan.cli.signals.SIGNALS, not imported from there for the same reason)
_START_SIGNALS = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n))


class _CutShort(Exception):
    """A second signal while a rank other than 0 waits before its line."""


def _cut_short(signum, frame):
    raise _CutShort


def _end_by(signum: int) -> int:
    """This rank's one line, then its death by ``signum`` itself: a launcher tears the job down when
    a rank dies of a signal, not when it exits with a status (the other ranks would wait in
    ``MPI_Init`` for it forever).  Nothing can have been published before the watcher is up."""
    rank = next((os.environ[v] for v in _RANK_VARS if os.environ.get(v, "").isdigit()), None)
    if rank not in (None, "0"):  # rank 0's line, or its death by the signal, ends this rank first
        for s in _START_SIGNALS:  # (a second signal, the launcher's TERM, cuts the wait short)
            signal.signal(s, _cut_short)
        try:
            time.sleep(_QUIET_S)
        except (_CutShort, KeyboardInterrupt):
            pass
    where = f"rank {rank}: " if rank is not None else ""
    line = f"distscan: error: {where}interrupted by {signal.Signals(signum).name}{_phase}; nothing was published\n"
    try:
        os.write(2, line.encode())
    except OSError:
        pass
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    return 128 + signum  # (where the signal does not end the process at once)


def _die_of(signum, frame):
    """SIGINT, SIGTERM and SIGHUP before the command's watcher: the line and the death from the handler
    itself.  Not an exception: Python runs a handler wherever the main thread is, and one raised
    inside the import system's callbacks is printed and ignored (the run went on and published),
    and NumPy's C import turns it into an ImportError traceback (an audit, 2026-11-27; SIGTERM
    after 0.05-0.075 s)."""
    _end_by(signum)


def _open_std_streams() -> None:
    """A standard stream closed when the command starts (``2>&-``, a daemon): /dev/null in its
    place.  Python leaves ``sys.stderr`` None then, and the command's last flush of it raised after
    the output was published (exit 1, the output in place; found 2026-11-27); and the first file
    the run opens would take the free descriptor 2, where a line meant for stderr would land."""
    for fd, name, mode in ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w")):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
        if getattr(sys, name) is None:
            setattr(sys, name, open(fd, mode, closefd=False))


def _hold(signum) -> set:
    """Block ``signum`` in this thread (where the platform can): the set to unblock after."""
    try:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signum})
    except (AttributeError, OSError, ValueError):
        return set()
    return {signum}


def run() -> int:
    """The command (``python -m distscan`` and the ``distscan`` script): :func:`distscan.cli.main`.

    An interrupt (^C to ``mpiexec``, or SIGTERM) while NumPy and MPI load, before the command's own
    signal watcher is up (:class:`distscan.cli.signals.Interrupts`), ends this rank with one line
    instead of a traceback per rank (or, for SIGTERM, no word at all), and by the signal itself
    (:func:`_end_by`).  The same holds after the watcher of a run that published nothing (a
    published run ignores the signals; the watcher gives the handlers set here back otherwise).
    Once :func:`main` returns, the signals get their actions from before."""
    global _phase
    _phase = " while starting"
    _open_std_streams()
    earlier = {}
    try:
        for s in _START_SIGNALS:
            earlier[s] = signal.signal(s, _die_of)
    except ValueError:  # not the main thread: Python's defaults stay
        pass
    try:
        # MPI_Init gives SIGHUP a handler of its own (UCX's debug signal, which logs and lets the rank
        # go on): held back while it runs, and delivered to ours once ours is set again (a SIGHUP in
        # MPI_Init published with exit 0 in 2 of 12 tries, 2026-11-27).  Held from before NumPy's
        # import: the threads it and MPI_Init start (OpenBLAS's pool, one a core) inherit the mask,
        # so none of them can take a process's SIGHUP under UCX's handler; the main thread takes it.
        held = _hold(signal.SIGHUP) if getattr(signal, "SIGHUP", None) in earlier else set()
        try:
            from .cli import main, signals
            try:
                from mpi4py import MPI  # noqa: F401 - MPI_Init here, where an interrupt is caught
            except ImportError:
                pass  # the command then runs as one process (distscan.cli.main says so)
        finally:
            for s in earlier:  # ours again, over the MPI library's
                if signal.getsignal(s) is _die_of:
                    signal.signal(s, _die_of)
            if held:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, held)  # a held SIGHUP reaches _die_of here
        signals.HOLD_AFTER_PUBLISH = True
        _phase = ""
        return main()  # its watcher is up only inside: a signal before or after it ends here too
    except KeyboardInterrupt:  # raised by other code than the handler above (its own ^C handling)
        return _end_by(signal.SIGINT)
    finally:
        # The handlers serve the start-up only: a signal after main() returns (in MPI's
        # finalisation at exit) takes the action it had before, not a line about starting.
        for s, action in earlier.items():
            if signal.getsignal(s) is _die_of:
                signal.signal(s, action if action is not None else signal.SIG_DFL)


if __name__ == "__main__":
    raise SystemExit(run())
