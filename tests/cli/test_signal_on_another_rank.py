"""A SIGTERM to a rank other than 0 while the command runs: one line in the whole job, the signal's
status on every rank, nothing published, no temporary file (review of 2026-11-25: at 4 ranks rank 0
also printed ``[Errno 2] No such file or directory: '...part' -> '...'``, 6 of 6 trials).

The signal is handled in the main thread at a chosen point of rank 1's run (the watcher's
``Interrupts._handle``, called as the watcher thread calls it), so the race is the same every time:
rank 1 removes the temporary file it shares with rank 0 before rank 0 renames it.  The job's abort
is left out (it would end pytest): the test records its status instead.

Runs under ``mpiexec -n K python -m pytest --with-mpi`` (K >= 2) only.
"""

from __future__ import annotations

import os
import signal

import numpy as np
import pytest

from distscan import cli
from distscan.cli import signals
from distscan.io import names
from distscan.io import writer

from tests.support.files import leftover_temps

pytestmark = [pytest.mark.anyranks, pytest.mark.mpi(min_size=2), pytest.mark.timeout(120)]


@pytest.mark.parametrize("when", ["before the temporary file", "before the agreement", "after the agreement"])
def test_sigterm_to_rank_1_prints_one_line(shared_tmp_path, comm, capfd, monkeypatch, when):
    rank = comm.Get_rank()
    if rank == 0:
        np.save(shared_tmp_path / "in.npy", np.arange(1000, dtype=np.int64))
    comm.Barrier()
    aborts = []

    def abort(code):  # the real one (MPI_Abort) ends the process; the main thread's wait for it goes too
        aborts.append(code)
        signals.ENDING.clear()

    def sigterm():
        signals.Interrupts(rank, comm.Get_size(), abort)._handle(signal.SIGTERM)

    monkeypatch.setattr(signals, "_ABORT_GRACE_S", 0.0)
    enter, leave, decide = writer.NpyWriter.__enter__, writer.NpyWriter.__exit__, writer.decide_on_root
    if when == "before the temporary file":  # rank 1 holds no temporary file yet: it marks the run
        def entering(self):
            if rank == 1:
                sigterm()
            return enter(self)
        monkeypatch.setattr(writer.NpyWriter, "__enter__", entering)
    elif when == "before the agreement":  # rank 1 removes the file while the others have written theirs
        def leaving(self, *exc):
            if rank == 1:
                sigterm()
            return leave(self, *exc)
        monkeypatch.setattr(writer.NpyWriter, "__exit__", leaving)
    else:  # every rank agreed to publish; rank 1 removes the file before rank 0 renames it
        def deciding(c, fn, *args, **kw):
            if getattr(fn, "__name__", "") == "_commit":
                if rank == 1:
                    sigterm()
                comm.Barrier()
            return decide(c, fn, *args, **kw)
        monkeypatch.setattr(writer, "decide_on_root", deciding)

    capfd.readouterr()
    code = cli.main([str(shared_tmp_path / "in.npy"), "-o", str(shared_tmp_path / "o.npy"), "--backend", "cpu",
                     "--quiet"])
    err = capfd.readouterr().err
    lines = [ln for e in comm.allgather(err) for ln in e.splitlines() if ln.strip()]
    assert lines == ["distscan: error: rank 1: interrupted by SIGTERM; "
                     f"{'' if when == 'before the temporary file' else 'the temporary output was removed and '}"
                     "nothing was published"], lines
    assert comm.allgather(code) == [128 + signal.SIGTERM] * comm.Get_size()
    assert aborts == ([128 + signal.SIGTERM] if rank == 1 else [])
    assert names.interrupted_by() is None  # the record ends with the run: later tests find none
    assert not os.path.exists(shared_tmp_path / "o.npy")
    assert leftover_temps(shared_tmp_path) == []
