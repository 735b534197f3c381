"""Helpers of the command-line tests (tests/cli): the command in this process or as a process of its
own, the one error line a failure must end with, the files a run leaves, and the registry of command
lines that tests/cli/conftest.py runs in one mpiexec job per rank count (``job``; see
``tests.support.launch.CliBatches``)."""

from __future__ import annotations

import glob
import os
import subprocess
import sys

import numpy as np

from distscan import cli

T = 60  # seconds per launch: generous on a loaded 2-core CI machine; a hang still fails


def distscan_args(*args):
    return [sys.executable, "-m", "distscan", *map(str, args)]


def assert_one_error_line(proc, *words, code=1):
    assert proc.returncode == code, f"exit {proc.returncode}\nstdout:{proc.stdout}\nstderr:{proc.stderr}"
    # a batched run knows every rank's status: the same on every rank
    assert getattr(proc, "codes", [code]) == [code] * len(getattr(proc, "codes", [code])), proc.codes
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, f"expected one line on stderr, got:\n{proc.stderr}"
    assert lines[0].startswith("distscan: error: "), lines[0]
    assert "Traceback" not in proc.stderr
    for w in words:
        assert w.lower() in lines[0].lower(), f"{w!r} not in {lines[0]!r}"
    return lines[0]


def one_error_line(err, *words):
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("distscan: error: "), err
    for w in words:
        assert w.lower() in lines[0].lower(), (w, lines[0])
    return lines[0]


def cli_in_process(capsys, *args):
    """``distscan ARGS`` in this process (one rank: COMM_WORLD of this pytest process)."""
    capsys.readouterr()
    code = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(["distscan", *map(str, args)], code, out, err)


def files_in(folder):
    return sorted(os.path.relpath(p, folder) for p in glob.glob(os.path.join(str(folder), "**"), recursive=True)
                  if os.path.isfile(p) or os.path.islink(p))


def input_npy(tmp_path, a=None):
    p = tmp_path / "in.npy"
    np.save(p, np.arange(100, dtype=np.int64) if a is None else a)
    return str(p)


# Every command line of tests/cli at 2, 3 and 8 ranks, registered next to its test and run in one
# mpiexec job per rank count when a test first asks for one of them (the ``batches`` fixture).
JOBS = {}  # (ranks, key) -> prepare


def job(ranks, key):
    """Register ``prepare(folder) -> (argv, options)`` as the command line ``key`` at ``ranks`` ranks."""
    def register(prepare):
        assert (ranks, key) not in JOBS, f"two command lines registered as {key!r} at {ranks} ranks"
        JOBS[ranks, key] = prepare
        return prepare
    return register
