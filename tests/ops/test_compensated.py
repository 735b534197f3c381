"""Compensated sums across ranks (``compensated=True``, distscan.ops.state's Compensated: double-word
TwoSum carries): float32 prefix sums correctly rounded where every sum of consecutive items is
below 2^40 units, within the general bound (docs/operators.md) where it does not, forwards,
reversed and exclusive; integers refused on every rank.

Written for any rank count (serially and under mpiexec, tests/run.sh).
"""

from __future__ import annotations

import numpy as np
import pytest

import distscan

from tests.support.data import random_counts, rank_part
from tests.support.reference import assert_compensated, compensated_case
from tests.support.ranks import all_ranks_ok
from tests.support.seeds import shared_rng

pytestmark = [pytest.mark.anyranks, pytest.mark.timeout(300)]


@pytest.mark.manyranks
@pytest.mark.parametrize("wide", [False, True], ids=["double_word", "wide"])
def test_compensated_float32_sums_are_correctly_rounded_or_within_the_bound(wide, comm):
    """Items that are multiples of 2^-12 of wildly different sizes (their exact prefix sums are
    integers in that unit, exact in int64): correctly rounded where every sum of consecutive
    items is below 2^40 units, within the general bound where the prefixes pass it
    (tests.support.reference's compensated_case and assert_compensated), forwards, reversed and
    exclusive."""
    rng = shared_rng(comm)
    for reverse, exclusive in ((False, False), (True, False), (False, True), (True, True)):
        counts = random_counts(rng, comm.size, 500)
        g, units = compensated_case(rng, int(counts.sum()), wide=wide)
        y = distscan.cumsum(rank_part(g, counts, comm), compensated=True, reverse=reverse, exclusive=exclusive,
                            comm=comm)
        mine = slice(int(counts[:comm.rank].sum()), int(counts[:comm.rank + 1].sum()))
        all_ranks_ok(comm, lambda: assert_compensated(y, g, units, reverse=reverse, exclusive=exclusive,
                                                      exact=not wide, rows=mine))


def test_compensated_refuses_integers_on_every_rank(comm):
    with pytest.raises((TypeError, distscan.DistScanError), match="compensated sum|not defined"):
        distscan.cumsum(np.arange(3), compensated=True, comm=comm)


@pytest.mark.parametrize("first", [[np.inf, 1.0], [1.0, -np.inf], [1e308, 1e308]])
def test_compensated_sum_of_infinities_is_infinite(first, comm):
    """docs/operators.md: a compensated prefix is "as exact as a double-length sum rounded once";
    the results equal NumPy's on the concatenated array, where an infinite sum is inf, never NaN
    (TwoSum's error of an infinite sum, inf - inf, once made it NaN; found by review)."""
    parts = [np.array(first)] + [np.array([1.0, 2.0])] * (comm.size - 1)
    g = np.concatenate(parts)
    with np.errstate(all="ignore"):
        expected = np.cumsum(g)[2 * comm.rank:2 * comm.rank + 2]
        got = distscan.cumsum(parts[comm.rank], compensated=True, comm=comm)
    all_ranks_ok(comm, lambda: np.testing.assert_array_equal(got, expected))
