"""Segmented scans across ranks (distscan.ops.state's Segmented, forwards and in reverse): each run
against NumPy's scan of that run alone, runs long enough to cross several ranks or short ones,
exclusive, with an initial value, with columns; the named scans on integers exactly.

Written for any rank count (serially and under mpiexec, tests/run.sh); bounds as
tests/ops/__init__.py states them.
"""

from __future__ import annotations

import numpy as np
import pytest

import distscan

from tests.support.data import random_array, random_counts, rank_part
from tests.support.ranks import all_ranks_ok
from tests.support.reference import assert_within_sum_bound, segmented_reference
from tests.support.seeds import shared_rng

pytestmark = [pytest.mark.anyranks, pytest.mark.timeout(300)]


@pytest.mark.manyranks
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("opname,dtype", [("sum", "int32"), ("sum", "float64"), ("prod", "int64"),
                                          ("max", "float32"), ("min", "int16"), ("bitwise_xor", "uint32"),
                                          ("sum", "complex128"), ("nansum", "float32"), ("logaddexp", "float64")])
def test_segmented_scans_match_each_segment_scanned_alone(opname, dtype, reverse, comm):
    rng = shared_rng(comm)
    for trial in range(3):
        counts = random_counts(rng, comm.size)
        n = int(counts.sum())
        trailing = (3,) if trial == 2 else ()
        g = random_array(rng, n, dtype, trailing)
        if opname == "prod":
            g = rng.choice(np.array([-1, 1, 2], dtype), (n,) + trailing)
        if opname == "nansum":
            g[rng.random(g.shape) < 0.2] = np.nan
        flags = rng.random(n) < [0.02, 0.2, 0.6][trial]  # long runs over several ranks, or short ones
        exclusive = bool(rng.integers(2))
        initial = None if trial == 0 or opname in ("max", "min", "logaddexp") else np.asarray(3, dtype)
        x, f = rank_part(g, counts, comm), rank_part(flags, counts, comm)
        y = distscan.scan(x, opname, segments=f, reverse=reverse, exclusive=exclusive, initial=initial, comm=comm)
        ref = rank_part(segmented_reference(g, flags, opname, exclusive=exclusive, initial=initial, reverse=reverse),
                        counts, comm)
        all_ranks_ok(comm, lambda: assert_within_sum_bound(y, ref, np.nansum(np.abs(g)) + 1, y.dtype, n=len(g)))


@pytest.mark.manyranks
def test_segmented_named_scans_and_integer_exactness(comm):
    rng = shared_rng(comm)
    counts = random_counts(rng, comm.size, 60)
    n = int(counts.sum())
    g = rng.integers(-2**40, 2**40, n)
    flags = rng.random(n) < 0.1
    x, f = rank_part(g, counts, comm), rank_part(flags, counts, comm)
    for fn, name in [(distscan.cumsum, "sum"), (distscan.cummax, "max"), (distscan.cummin, "min")]:
        y = fn(x, segments=f, comm=comm)
        ref = rank_part(segmented_reference(g, flags, name), counts, comm)
        all_ranks_ok(comm, lambda: np.testing.assert_array_equal(y, ref))
