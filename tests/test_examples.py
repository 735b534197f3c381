"""The documented examples are files the tests run."""

import os
import sys

import pytest

from _mpi_run import REPO, run_mpi

EXAMPLES = os.path.join(str(REPO), "docs", "examples")

pytestmark = [
    pytest.mark.timeout(120),
    # These tests start mpiexec themselves: not from inside an MPI job.
    pytest.mark.skipif(bool(os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK")),
                       reason="launches mpiexec itself"),
]


@pytest.mark.parametrize("ranks", [1, 3])
def test_library_example_runs_under_mpiexec(ranks):
    done = run_mpi(ranks, [sys.executable, os.path.join(EXAMPLES, "mpi_cumsum.py")], timeout=90)
    assert done.returncode == 0, done.stderr
    lines = sorted(line for line in done.stdout.splitlines() if line.startswith("rank "))
    total = sum(range(sum(r + 2 for r in range(ranks))))
    assert len(lines) == ranks
    assert all(line.endswith(f"global total {total}") for line in lines), lines
