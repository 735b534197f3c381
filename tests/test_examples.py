"""The documented examples are files the tests run: under mpiexec at 3 ranks, and in this
process at 1 rank (COMM_WORLD of the pytest process)."""

import os
import runpy
import sys

import pytest

from tests.support.launch import REPO, run_mpi

EXAMPLES = os.path.join(str(REPO), "docs", "examples")

pytestmark = [
    pytest.mark.timeout(120),
    # These tests start mpiexec themselves: not from inside an MPI job.
    pytest.mark.skipif(bool(os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK")),
                       reason="launches mpiexec itself"),
]


def _check(stdout, ranks):
    lines = sorted(line for line in stdout.splitlines() if line.startswith("rank "))
    total = sum(range(sum(r + 2 for r in range(ranks))))
    assert len(lines) == ranks
    assert all(line.endswith(f"global total {total}") for line in lines), lines


def test_library_example_runs_under_mpiexec():
    ranks = 3
    done = run_mpi(ranks, [sys.executable, os.path.join(EXAMPLES, "mpi_cumsum.py")], timeout=90)
    assert done.returncode == 0, done.stderr
    _check(done.stdout, ranks)


def test_library_example_runs_on_one_rank(capsys):
    runpy.run_path(os.path.join(EXAMPLES, "mpi_cumsum.py"), run_name="__main__")  # its asserts run too
    _check(capsys.readouterr().out, 1)
