"""Parts given as objects of the buffer protocol (``memoryview``, ``array.array``), on every rank or on
some ranks only: the scan of the concatenation, as NumPy's (``numpy.cumsum(memoryview(a))`` is
``numpy.cumsum(a)``).

Found 2026-11-27 (s40): a ``memoryview`` part was taken for a scalar (``numpy.isscalar`` says True for
it: ``numpy.ScalarType`` lists ``memoryview``), and every rank raised "cannot reshape array of size 4
into shape (1,)" for a part NumPy scans.

Runs serially and under ``mpiexec -n K python -m pytest --with-mpi``.
"""

from __future__ import annotations

import array

import numpy as np
import pytest

import distscan

from tests.support.ranks import all_ranks_ok

pytestmark = [pytest.mark.anyranks, pytest.mark.timeout(60)]


def _as(kind, part):
    if kind == "memoryview":
        return memoryview(part)
    if kind == "array.array":
        return array.array("q", part.reshape(-1).tolist())
    return part


@pytest.mark.mpi(min_size=1)
@pytest.mark.parametrize("who", ["every rank", "rank 0", "the last rank"])
@pytest.mark.parametrize("kind", ["memoryview", "array.array"])
def test_a_part_of_the_buffer_protocol_is_scanned_as_numpy_scans_it(kind, who, comm):
    size, rank = comm.Get_size(), comm.Get_rank()
    parts = [np.arange(4, dtype=np.int64) + 10 * r for r in range(size)]
    expected = np.cumsum(np.concatenate(parts))[4 * rank:4 * rank + 4]
    mine = who == "every rank" or rank == (0 if who == "rank 0" else size - 1)
    x = _as(kind, parts[rank]) if mine else parts[rank]
    for _ in range(2):  # the second call as the first (a call kind made by the first takes no part of it)
        got = distscan.cumsum(x, comm=comm)
        all_ranks_ok(comm, lambda: np.testing.assert_array_equal(got, expected))
        assert np.asarray(got).dtype == np.int64


@pytest.mark.mpi(min_size=1)
def test_a_memoryview_of_a_two_dimensional_part(comm):
    rank = comm.Get_rank()
    part = np.arange(6, dtype=np.float64).reshape(3, 2) + rank
    whole = np.concatenate([np.arange(6, dtype=np.float64).reshape(3, 2) + r for r in range(comm.Get_size())])
    got = distscan.cumsum(memoryview(part), comm=comm)
    all_ranks_ok(comm, lambda: np.testing.assert_array_equal(got, np.cumsum(whole, axis=0)[3 * rank:3 * rank + 3]))
    got = distscan.cumsum(memoryview(part), comm=comm, axis=1)
    all_ranks_ok(comm, lambda: np.testing.assert_array_equal(got, np.cumsum(part, axis=1)))
