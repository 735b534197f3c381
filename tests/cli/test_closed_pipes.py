"""A pipe whose reader is gone (``distscan ... | true``, ``| head -1``): a rank ignores SIGPIPE (Python's
default, which MPI_Init leaves) and a failed print (``cli._say``), so a published run exits 0 and an
unpublished one with its own status.  Under ``mpiexec`` the ranks' output goes to the launcher, and
MPICH's ``mpiexec`` itself dies of SIGPIPE as it passes rank 0's summary line on (``| true`` exits
141, after the output was published: docs/command.md says so); the output is then complete.  The
pipes are closed before the command starts, so every case is the same each time."""

import os
import signal
import subprocess
import sys

import numpy as np
import pytest

from tests.support.command import T, distscan_args
from tests.support.files import leftover_temps
from tests.support.launch import mpi_command, python_env

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.skipif(bool(os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK")),
                       reason="starts processes itself; run it from a serial pytest"),
]

N = 100_000


def _closed_pipe():
    """The write end of a pipe whose read end is closed (a reader that is gone)."""
    r, w = os.pipe()
    os.close(r)
    return w


def _run(cmd, streams):
    w = _closed_pipe()
    try:
        kw = {"stdout": w if "stdout" in streams else subprocess.DEVNULL,
              "stderr": w if "stderr" in streams else subprocess.PIPE}
        return subprocess.run([str(c) for c in cmd], env=python_env(), timeout=T, **kw)
    finally:
        os.close(w)


@pytest.mark.parametrize("streams", [("stdout",), ("stdout", "stderr")], ids=["stdout", "stdout-stderr"])
@pytest.mark.parametrize("extra", [[], ["--progress", "--verify", "--report", "r.json"]], ids=["plain", "chatty"])
def test_a_rank_printing_into_a_closed_pipe_exits_0_after_publishing(tmp_path, streams, extra):
    np.save(tmp_path / "in.npy", np.arange(N, dtype=np.int64))
    extra = [str(tmp_path / x) if x.endswith(".json") else x for x in extra]
    proc = _run(distscan_args(tmp_path / "in.npy", "-o", tmp_path / "o.npy", "--backend", "cpu", *extra), streams)
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "o.npy"), np.cumsum(np.arange(N)))
    assert leftover_temps(tmp_path) == []


def test_a_rank_printing_into_a_closed_pipe_still_fails_a_bad_run(tmp_path):
    """The error line is lost, not the status: nothing published, exit 1."""
    np.save(tmp_path / "in.npy", np.arange(N, dtype=np.int64))
    proc = _run(distscan_args(tmp_path / "in.npy", "-o", tmp_path / "no" / "o.npy", "--backend", "cpu"),
                ("stdout", "stderr"))
    assert proc.returncode == 1
    assert not (tmp_path / "no").exists() and leftover_temps(tmp_path) == []


def test_mpiexec_into_a_closed_pipe_dies_of_it_after_publishing(tmp_path):
    """The status is the launcher's (MPICH: killed by SIGPIPE; a launcher that ignores it: 0); the ranks
    had published a complete output before rank 0's line, and left no temporary file."""
    np.save(tmp_path / "in.npy", np.arange(N, dtype=np.int64))
    cmd = mpi_command(2, [sys.executable, "-m", "distscan", tmp_path / "in.npy", "-o", tmp_path / "o.npy",
                          "--backend", "cpu"])
    proc = _run(cmd, ("stdout",))
    assert proc.returncode in (0, -signal.SIGPIPE, 128 + signal.SIGPIPE), (proc.returncode, proc.stderr)
    np.testing.assert_array_equal(np.load(tmp_path / "o.npy"), np.cumsum(np.arange(N)))
    assert leftover_temps(tmp_path) == []
