"""Compensated sums across ranks (``compensated=True``, distscan.ops.state's Compensated: double-word
TwoSum carries): float32 prefix sums within 2 ulp of the correctly rounded ones, forwards and in
reverse; integers refused on every rank.

Written for any rank count (serially and under mpiexec, tests/run.sh).
"""

from __future__ import annotations

import numpy as np
import pytest

import distscan

from tests.support.data import random_counts, rank_part
from tests.support.ranks import all_ranks_ok
from tests.support.seeds import shared_rng

pytestmark = [pytest.mark.anyranks, pytest.mark.timeout(300)]


def _ulps(result, exact):
    """Distance in float32 ulps between ``result`` and the float64 ``exact`` rounded to float32."""
    r = np.asarray(result, np.float32)
    e = np.asarray(exact, np.float64).astype(np.float32)
    return np.abs(r.view(np.int32).astype(np.int64) - e.view(np.int32).astype(np.int64))


@pytest.mark.manyranks
def test_compensated_float32_sums_are_within_2_ulp(comm):
    """Inputs that are multiples of 2^-12 of wildly different sizes: their exact prefix sums are
    integers times 2^-12 (exact in int64), rounded once to float32 for the reference."""
    rng = shared_rng(comm)
    for reverse in (False, True):
        counts = random_counts(rng, comm.size, 500)
        n = int(counts.sum())
        k = rng.integers(-2**20, 2**20, n) * (2 ** rng.integers(0, 30, n))  # |x| up to 2^38 units
        small = rng.random(n) < 0.3  # small terms among the large ones: what a plain sum loses
        k[small] = rng.integers(-50, 50, int(small.sum()))
        g = (k * 2.0**-12).astype(np.float32)
        units = (g.astype(np.float64) * 2**12).astype(np.int64)  # exact: g holds these multiples
        order = slice(None, None, -1) if reverse else slice(None)
        exact = (np.cumsum(units[order])[order]).astype(np.float64) * 2.0**-12
        y = distscan.cumsum(rank_part(g, counts, comm), compensated=True, reverse=reverse, comm=comm)
        plain = distscan.cumsum(rank_part(g, counts, comm), reverse=reverse, comm=comm)
        mine = rank_part(exact, counts, comm)
        all_ranks_ok(comm, lambda: _assert_le(_ulps(y, mine), 2))
        assert y.dtype == np.float32 and plain.dtype == np.float32


def _assert_le(values, bound):
    assert values.size == 0 or values.max() <= bound, values.max()


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
