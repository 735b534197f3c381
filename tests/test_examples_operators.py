"""The examples of docs/operators.md are files the tests run: under mpiexec at 3 ranks (rank 1
then holds an empty part), and in this process at 1 rank (COMM_WORLD of the pytest process).

Each example checks its own result against NumPy (or SciPy) on the gathered data and fails if it
differs; rank 0 prints one line per rank, then one line saying what it checked. These tests check
those lines: one per rank, with that rank's part size, and the summary with the global size."""

import importlib.util
import os
import re
import runpy
import sys

import pytest

from tests.support.launch import REPO, run_mpi

EXAMPLES = os.path.join(str(REPO), "docs", "examples")

pytestmark = [
    pytest.mark.timeout(240),
    # These tests start mpiexec themselves: not from inside an MPI job.
    pytest.mark.skipif(bool(os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK")),
                       reason="launches mpiexec itself"),
]

HAVE_SCIPY = importlib.util.find_spec("scipy") is not None

# file -> (rank 0's part size, how much more each rank holds, the summary line for a global size n)
CASES = {
    "iir_lowpass.py": (300, 170, lambda n: f"all {n} filtered samples match a Python loop"
                       + (" and scipy.signal.lfilter" if HAVE_SCIPY else "")),
    "discounted_returns.py": (200, 90, lambda n: f"all {n} returns match the sequential loop ("),
    "particle_offsets.py": (10, 7, lambda n: f"all {n} rows match NumPy: "),
    "logcumsumexp.py": (400, 150, lambda n: f"all {n} values match numpy.logaddexp.accumulate within "),
    "custom_operator.py": (20, 9, lambda n: f"all {n} readings forward and backward filled as NumPy fills them"),
}


def _sizes(name, ranks):
    """Each rank's part size, as the example makes it: rank 1 holds nothing from 3 ranks on."""
    base, step, _ = CASES[name]
    return [0 if (r == 1 and ranks >= 3) else base + step * r for r in range(ranks)]


def _check(name, stdout, ranks):
    sizes = _sizes(name, ranks)
    lines = [line for line in stdout.splitlines() if line.startswith("rank ")]
    assert [int(re.match(r"rank (\d+):", line).group(1)) for line in lines] == list(range(ranks)), stdout
    for r, (line, n) in enumerate(zip(lines, sizes)):
        assert line.startswith(f"rank {r}: no ") if n == 0 else line.startswith(f"rank {r}: {n} "), line
    others = [line for line in stdout.splitlines() if line.strip() and not line.startswith("rank ")]
    assert len(others) == 1, stdout
    summary = CASES[name][2](sum(sizes))
    if name == "iir_lowpass.py":
        assert others[0] == summary, (others[0], summary)
    else:
        assert others[0].startswith(summary), (others[0], summary)


@pytest.mark.parametrize("ranks", [3])  # uneven parts and an empty rank; 1 rank runs in-process below
@pytest.mark.parametrize("name", sorted(CASES))
def test_operator_example_runs_under_mpiexec(name, ranks):
    done = run_mpi(ranks, [sys.executable, os.path.join(EXAMPLES, name)], timeout=180)
    assert done.returncode == 0, done.stderr
    _check(name, done.stdout, ranks)


@pytest.mark.parametrize("name", sorted(CASES))
def test_operator_example_runs_on_one_rank(name, capsys):
    runpy.run_path(os.path.join(EXAMPLES, name), run_name="__main__")  # its asserts run too
    _check(name, capsys.readouterr().out, 1)


def test_operators_page_shows_the_tested_declaration():
    """The Operator declaration in docs/operators.md is the one custom_operator.py runs, and every
    example the page links is one of the files run above."""
    with open(os.path.join(str(REPO), "docs", "operators.md")) as f:
        page = f.read()
    with open(os.path.join(EXAMPLES, "custom_operator.py")) as f:
        example = f.read()
    declaration = re.search(r"^ffill = distscan\.Operator\(\n.*?^\)\n", page, re.M | re.S)
    assert declaration, "docs/operators.md declares ffill = distscan.Operator(...)"
    assert declaration.group(0) in example
    linked = set(re.findall(r"\(examples/(\w+\.py)\)", page))
    assert linked == set(CASES)
