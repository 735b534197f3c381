"""``include_initial=`` and the Array API functions (``cumulative_sum``, ``cumulative_prod``) across
ranks: the initial value is one more element on the first rank (the last one in reverse), and
the dtypes and ``axis`` rule are the Array API's.

Written for any rank count (serially and under mpiexec, tests/run.sh).
"""

from __future__ import annotations

import numpy as np
import pytest

import distscan

from tests.support.data import random_counts, rank_part
from tests.support.ranks import SELF, all_ranks_ok
from tests.support.seeds import shared_rng


pytestmark = [pytest.mark.anyranks, pytest.mark.timeout(300)]


@pytest.mark.parametrize("reverse", [False, True])
def test_include_initial_puts_one_element_on_the_first_rank(reverse, comm):
    rng = shared_rng(comm)
    counts = random_counts(rng, comm.size)
    g = rng.integers(-9, 9, int(counts.sum()))
    y = distscan.scan(rank_part(g, counts, comm), "sum", include_initial=True, initial=5, reverse=reverse, comm=comm)
    whole = distscan.scan(g, "sum", initial=5, reverse=reverse, comm=SELF)
    ref = np.concatenate([[5], whole]) if not reverse else np.concatenate([whole, [5]])
    first = comm.size - 1 if reverse else 0
    lengths = np.array(counts) + (np.arange(comm.size) == first)
    all_ranks_ok(comm, lambda: np.testing.assert_array_equal(y, rank_part(ref, lengths, comm)))


def test_cumulative_sum_and_prod_follow_the_array_api(comm):
    rng = shared_rng(comm)
    counts = random_counts(rng, comm.size)
    g = rng.integers(1, 4, int(counts.sum())).astype(np.int32)
    lengths = np.array(counts) + (np.arange(comm.size) == 0)
    for fn, ufunc, zero in [(distscan.cumulative_sum, np.add, 0), (distscan.cumulative_prod, np.multiply, 1)]:
        y = fn(rank_part(g, counts, comm), include_initial=True, comm=comm)
        ref = np.concatenate([[zero], ufunc.accumulate(g, dtype=np.int64)])
        all_ranks_ok(comm, lambda: np.testing.assert_array_equal(y, rank_part(ref, lengths, comm)))
        assert y.dtype == np.int64
        y = fn(rank_part(g, counts, comm), comm=comm)
        all_ranks_ok(comm, lambda: np.testing.assert_array_equal(y, rank_part(ref[1:], counts, comm)))
    with pytest.raises(ValueError, match="axis is required"):
        distscan.cumulative_sum(np.ones((2, 2)), comm=comm)
