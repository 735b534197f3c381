"""Seeded random data: a fresh seed per test, the same on every rank (rank 0's), or
``DISTSCAN_TEST_SEED`` when set.  Each seed drawn is recorded on the running test (tests/conftest.py's
hooks set it and print a failing test's seeds with the command that repeats it)."""

from __future__ import annotations

import os

import numpy as np
import pytest

try:
    from mpi4py import MPI
except ImportError:  # pragma: no cover - the test extra installs mpi4py
    MPI = None

SEED_ENV = "DISTSCAN_TEST_SEED"
SEEDS = pytest.StashKey[list]()  # on a test item: the seeds it drew, in order
_RUNNING = {"item": None, "comm": None}


def running(item):
    """The test now running (None between tests): the one that records the seeds drawn."""
    _RUNNING["item"] = item


def seed_comm():
    """A private duplicate of COMM_WORLD for seed broadcasts (None when serial or without mpi4py)."""
    if MPI is None or not MPI.Is_initialized() or MPI.COMM_WORLD.Get_size() == 1:
        return None
    if _RUNNING["comm"] is None:
        _RUNNING["comm"] = MPI.COMM_WORLD.Dup()
    return _RUNNING["comm"]


def draw_seed(comm=None):
    """``DISTSCAN_TEST_SEED`` or a fresh seed; rank 0's on every rank of ``comm``; recorded for the report."""
    env = os.environ.get(SEED_ENV, "").strip()
    seed = int(env) if env else int(np.random.SeedSequence().entropy % (1 << 63))
    if comm is not None and comm.Get_size() > 1:
        seed = comm.bcast(seed, root=0)
    item = _RUNNING["item"]
    if item is not None:
        item.stash.setdefault(SEEDS, []).append(seed)
    return seed


def shared_rng(comm):
    """A generator seeded alike on every rank of ``comm`` (rank 0's seed, or DISTSCAN_TEST_SEED)."""
    seed = draw_seed(comm)
    print(f"seed={seed}")
    return np.random.default_rng(seed)


def seeded_rng():
    """A generator from a fresh seed (or DISTSCAN_TEST_SEED) of this process, printed and recorded."""
    seed = draw_seed()
    print(f"seed={seed} (repeat with {SEED_ENV}={seed})")
    return np.random.default_rng(seed)
