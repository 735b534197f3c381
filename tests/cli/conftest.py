"""Fixtures of the command-line tests: the command lines that the modules of tests/cli register
(``tests.support.command.job``) run in one mpiexec job per rank count, on first use, for the whole
session (``tests.support.launch.CliBatches``: each rank calls ``cli.main`` for each command line in
turn, its output captured per rank), so a launch is paid once per rank count, not per case."""

import pytest

from tests.support.command import JOBS
from tests.support.launch import CliBatches


@pytest.fixture(scope="session")
def batches(tmp_path_factory):
    """``batches.get(ranks, key)`` -> ``(folder, result, options)`` of a registered command line."""
    b = CliBatches(tmp_path_factory)
    for (ranks, key), prepare in JOBS.items():
        b.add(ranks, key, prepare)
    return b


@pytest.fixture
def batch3(batches):
    """``batch3(key)``: ``batches.get(3, key)``."""
    return lambda key: batches.get(3, key)
