"""Signals and the end of a run: an interrupted rank removes its temporary files and tells the
others (an abort after a grace period), and every rank agrees on the exit status with a
timeout, so that a rank that failed alone cannot leave the job hanging."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

import numpy as np

from ..dist.agree import abort_job
from .. import io as _io

# Launcher variables that say this process is one of several ranks.
_LAUNCHER_SIZE_VARS = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE")

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_VERIFY = 0, 1, 2, 3

# The signals that end a run on every rank (Interrupts), each the same way.  SIGHUP (a closed
# terminal, a scheduler's hang-up) is one: MPI_Init gives it a handler of the MPI library's (UCX's
# debug signal), under which a rank signalled alone ran on and published (2026-11-27).
SIGNALS = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n))


def final_agreement(comm, code: int, timeout: float) -> tuple:
    """Non-blocking MAX/MIN of the exit codes with a timeout: ``(max, min)``; aborts if ranks cannot join."""
    from mpi4py import MPI
    send = np.array([code, -code], dtype=np.int64)
    recv = np.empty_like(send)
    req = comm.Iallreduce(send, recv, op=MPI.MAX)
    deadline = time.monotonic() + timeout
    while not req.Test():
        if time.monotonic() > deadline:
            sys.stderr.write(f"distscan: error: rank {comm.Get_rank()}: the other ranks did not finish "
                             f"within {timeout:g} s of this one; aborting the job\n")
            abort_job(code or EXIT_ERROR)
        time.sleep(0.002)
    return int(recv[0]), int(-recv[1])


# Set by the command's entry point (distscan.__main__.run): ignore SIGNALS after a published run,
# to the end of the process.
HOLD_AFTER_PUBLISH = False

# Seconds a signalled rank that holds no temporary file waits before it aborts the job.
_ABORT_GRACE_S = 2.0

# Seconds a signalled rank other than 0 waits before it prints its line: when every rank was
# signalled, rank 0's abort ends it first (in 0.3 s from the ^C to mpiexec's exit at 3 ranks on a
# 2-core VM, 2026-11-26), and rank 0's line is the job's one.
_QUIET_S = 1.0

# Set while the watcher ends the process: the main thread's work may fail meanwhile because the
# watcher removed its files (a rename of the removed output), and its own error line would follow
# the watcher's (distscan.cli._main waits instead: one line per interrupted run).
ENDING = threading.Event()

def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def signalled_status():
    """The exit status (128 + the signal's number) of a signal this process's watcher reported in
    this run, or None: derived from distscan.io's record of it (:func:`distscan.io.interrupted_by`),
    which the watcher makes before it removes any file.  The run may then fail on every rank
    because of the removal (rank 0 renaming the temporary file that rank 1 removed, 2026-11-25),
    and distscan.cli._main gives that failure this status in the final agreement, so that no rank
    prints a second line."""
    name = _io.interrupted_by()
    if name is None:
        return None
    try:
        return 128 + signal.Signals[name]
    except KeyError:  # "signal N" (_signal_name)
        return 128 + int(name.split()[-1])


class Interrupts:
    """SIGINT, SIGTERM and SIGHUP (:data:`SIGNALS`) end the run on every rank within moments,
    leaving no temporary file.

    The block is the run's scope: its record of a signal (:func:`distscan.io.interrupted_by`) is
    cleared as it starts and as it ends.

    A Python signal handler runs only when the main thread returns to the
    interpreter, which a rank blocked inside an MPI call (waiting for a rank
    that will never come) does not.  So the handler itself does nothing; the
    C-level handler also writes the signal number to a pipe (``set_wakeup_fd``),
    and a watcher thread blocked on that pipe wakes at once, whatever the main
    thread is doing.  It removes this process's temporary files
    (:func:`distscan.io.emergency_cleanup`), prints one line, and ends the job:
    ``MPI_Abort`` (the launcher then stops every rank) or ``os._exit`` without
    MPI.  A signal that arrives once the output is already published (renamed
    into place) is ignored: the run is finishing and its result is complete.
    """

    def __init__(self, rank: int, size: int, abort):
        self.rank, self.size, self.abort = rank, size, abort
        self.active = False

    def __enter__(self):
        _io.forget_temps()  # the temporary files' registry and the interruption's record
        ENDING.clear()
        if threading.current_thread() is not threading.main_thread():
            return self
        self._r, self._w = os.pipe()
        os.set_blocking(self._w, False)
        try:
            self._old_fd = signal.set_wakeup_fd(self._w, warn_on_full_buffer=False)
            self._old = {s: signal.signal(s, self._noop) for s in SIGNALS}
        except (ValueError, OSError):  # pragma: no cover - not the main thread of the main interpreter
            os.close(self._r)
            os.close(self._w)
            return self
        self.active = True
        self._thread = threading.Thread(target=self._watch, name="distscan-signals", daemon=True)
        self._thread.start()
        return self

    @staticmethod
    def _noop(signum, frame):
        pass

    def _watch(self):
        while True:
            try:
                data = os.read(self._r, 1)
            except OSError:
                return
            if not data or data == b"\0":
                return
            self._handle(data[0])

    def _handle(self, signum: int):
        ENDING.set()
        name = _signal_name(signum)
        # Recorded before any file is removed (signalled_status): the run fails at its next
        # agreement on every rank, also where this rank removed the temporary file (which the
        # ranks share): else the others could agree and rank 0 rename the removed file before the
        # abort comes.
        _io.mark_interrupted(name)
        removed, published = _io.emergency_cleanup()
        if published:
            ENDING.clear()
            _io.clear_interrupted()
            return
        if self.rank != 0 and self.size > 1:
            # One line for the job: when every rank was signalled (^C to mpiexec, which forwards
            # it to every rank) rank 0's is the line, at once, and its abort ends this rank within
            # this quiet moment; a rank signalled alone (a TERM to its process) says it after it.
            # (A watcher cannot tell which: nothing reaches the other ranks but the abort.)
            time.sleep(_QUIET_S)
        where = f"rank {self.rank}: " if self.size > 1 else ""
        what = "the temporary output was removed and " if removed else ""
        try:
            os.write(2, f"distscan: error: {where}interrupted by {name}; {what}nothing was published\n".encode())
        except OSError:
            pass
        if not removed and self.rank != 0:
            ENDING.clear()  # the run fails at its next agreement, quietly (this line is its one line)
            # This rank holds no temporary file yet (the signal came while rank 0 was creating
            # it): an abort now could stop rank 0 before it removes the file.  Mark the run
            # instead (above): it fails at its next agreement on every rank, which removes the
            # file; abort only if the run is stuck past a grace period.  Rank 0 aborts at once:
            # every file of the run is its own, and none is created once the run is marked
            # (distscan.io.create_temp), so its cleanup above left none.
            time.sleep(_ABORT_GRACE_S)
            if _io.emergency_cleanup()[1]:
                return  # the agreement was already past: the output is complete and in place
        self.abort(128 + signum)

    def __exit__(self, *exc):
        try:
            return self._leave()
        finally:
            # The marks are this run's (its watcher, ended above, made them): a later run in this
            # process, the command's or the pipeline's own, finds none (a pipeline call after a
            # command run in-process failed "interrupted by SIGTERM", CI 2026-11-25).
            _io.clear_interrupted()
            ENDING.clear()

    def _leave(self):
        if not self.active:
            return False
        # Once the output is published, the process still finalises MPI and exits; a signal then
        # (mpiexec forwarding ^C, a scheduler's TERM) would end a complete run with a failing
        # status.  The command (HOLD_AFTER_PUBLISH) ignores them to the end; a caller of main()
        # in its own process gets its handlers back.
        hold = HOLD_AFTER_PUBLISH and _io.is_published()
        for s, h in self._old.items():
            signal.signal(s, signal.SIG_IGN if hold else h)
        signal.set_wakeup_fd(self._old_fd)
        try:
            os.write(self._w, b"\0")
        except OSError:
            pass
        self._thread.join(timeout=5)
        os.close(self._r)
        os.close(self._w)
        return False


def launched_ranks(env=None) -> int:
    env = os.environ if env is None else env
    for name in _LAUNCHER_SIZE_VARS:
        try:
            return int(env.get(name, ""))
        except ValueError:
            continue
    return 1
