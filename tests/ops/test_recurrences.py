"""Linear recurrences across ranks (``distscan.linear_recurrence``, distscan.ops.state's Affine):
``y[i] = a[i] y[i-1] + b[i]`` against a sequential loop in float64 (complex128), forwards and in
reverse, with an initial value, segments and columns; a constant ``a`` (an exponential moving
average) and ``|a|`` near 1 over many steps.

Written for any rank count (serially and under mpiexec, tests/run.sh); bounds as
tests/ops/__init__.py states them.
"""

from __future__ import annotations

import numpy as np
import pytest

import distscan

from tests.support.data import (COMPLEX_NONFINITE, complex_zero_rule_case, random_array, random_counts, rank_part,
                                zero_rule_case)
from tests.support.ranks import all_ranks_ok
from tests.support.reference import assert_within_sum_bound, nonfinite_at_zero_states, recurrence_reference
from tests.support.seeds import shared_rng

pytestmark = [pytest.mark.anyranks, pytest.mark.timeout(300)]


@pytest.mark.manyranks
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128", "int64"])
def test_linear_recurrence_matches_a_sequential_loop(dtype, reverse, comm):
    rng = shared_rng(comm)
    for trial in range(3):
        counts = random_counts(rng, comm.size, 40)
        n = int(counts.sum())
        trailing = (2,) if trial == 1 else ()
        b = random_array(rng, n, dtype, trailing)
        if np.dtype(dtype).kind in "iu":
            a = rng.integers(-3, 4, (n,) + trailing).astype(dtype)
        elif np.dtype(dtype).kind == "c":
            a = (rng.uniform(0.5, 1, (n,) + trailing) * np.exp(1j * rng.uniform(0, 6.3, (n,) + trailing))).astype(dtype)
        else:
            a = rng.uniform(-1, 1, (n,) + trailing).astype(dtype)
        segments = rng.random(n) < 0.15 if trial == 2 else None
        initial = 0 if trial == 0 else np.asarray(2, dtype)
        x_a, x_b = rank_part(a, counts, comm), rank_part(b, counts, comm)
        f = None if segments is None else rank_part(segments, counts, comm)
        y = distscan.linear_recurrence(x_a, x_b, initial=initial, reverse=reverse, segments=f, comm=comm)
        ref = recurrence_reference(a, b, initial=initial, reverse=reverse, segments=segments)
        mine = rank_part(ref, counts, comm)
        scale = np.abs(ref).max() + 2 if n else 1
        all_ranks_ok(comm, lambda: assert_within_sum_bound(y, mine.astype(dtype), np.full(len(mine), scale), dtype,
                                                           n=n))
        assert y.dtype == np.dtype(dtype)


@pytest.mark.manyranks
def test_linear_recurrence_with_a_scalar_decay_and_near_one(comm):
    """An exponential moving average (a constant a) and |a| near 1 over many steps."""
    rng = shared_rng(comm)
    counts = random_counts(rng, comm.size, 3000)
    n = int(counts.sum())
    b = rng.standard_normal(n)
    for a in (0.9, 1 - 2.0**-20):
        y = distscan.linear_recurrence(a, rank_part(b, counts, comm), comm=comm)
        ref = rank_part(recurrence_reference(np.full(n, a), b), counts, comm)
        all_ranks_ok(comm, lambda: np.testing.assert_allclose(y, ref, rtol=0, atol=1e-9 * (np.abs(ref).max(initial=0) + 1)))


@pytest.mark.manyranks
@pytest.mark.parametrize("reverse", [False, True])
def test_an_infinite_or_nan_coefficient_times_a_zero_is_zero_however_the_ranks_split_it(reverse, comm):
    """A zero y, or a product of coefficients that a zero coefficient ended, contributes nothing,
    even times an infinite or NaN ``a`` (IEEE gives NaN): the sequential loop with that rule, bit for
    bit (NaN where it gives NaN), however the ranks split the array, with an initial value and
    segments; an infinite ``a[0]`` without an initial gives ``b[0]``."""
    rng = shared_rng(comm)
    for trial in range(8):
        counts = random_counts(rng, comm.size, 30)
        n = int(counts.sum())
        a, b = zero_rule_case(rng, n)
        if n:
            a[n - 1 if reverse else 0] = np.inf
        segments = rng.random(n) < 0.1 if trial % 3 else None
        initial = 2.0 if trial % 4 == 3 else 0
        f = None if segments is None else rank_part(segments, counts, comm)
        y = distscan.linear_recurrence(rank_part(a, counts, comm), rank_part(b, counts, comm), initial=initial,
                                       reverse=reverse, segments=f, comm=comm)
        ref = rank_part(recurrence_reference(a, b, initial=initial, reverse=reverse, segments=segments), counts, comm)
        all_ranks_ok(comm, lambda: np.testing.assert_array_equal(y, ref))


@pytest.mark.manyranks
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("reverse", [False, True])
def test_a_complex_coefficient_with_an_infinite_or_nan_part_times_a_zero_state_is_zero(dtype, reverse, comm):
    """The zero rule for complex maps: a coefficient with an infinite or NaN real or imaginary
    part, where the state before it is exactly 0, leaves the sequential loop's result as a finite
    coefficient there would, bit for bit (Gaussian integers), however the ranks split the array,
    with an initial value and segments."""
    rng = shared_rng(comm)
    for trial in range(8):
        counts = random_counts(rng, comm.size, 30)
        n = int(counts.sum())
        a, b = complex_zero_rule_case(rng, n, dtype)
        segments = rng.random(n) < 0.1 if trial % 3 else None
        initial = 2 + 1j if trial % 4 == 3 else 0
        x, want = nonfinite_at_zero_states(rng, a, b, COMPLEX_NONFINITE, initial=initial, reverse=reverse,
                                           segments=segments, edges=[0, n - 1])
        f = None if segments is None else rank_part(segments, counts, comm)
        y = distscan.linear_recurrence(rank_part(x, counts, comm), rank_part(b, counts, comm), initial=initial,
                                       reverse=reverse, segments=f, comm=comm)
        all_ranks_ok(comm, lambda: np.testing.assert_array_equal(y, rank_part(want, counts, comm).astype(dtype)))


@pytest.mark.manyranks
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_flushed_subnormal_product_is_not_a_zero_the_rule_drops(dtype, comm):
    """The CPU loop flushes a subnormal product of coefficients to zero (a speed measure); an
    infinite or NaN coefficient after it still meets a nonzero product: ±inf or NaN as the
    sequential loop gives, never the zero rule's 0 (a review found [1, 0, 0] for a = [1, 1e-310,
    inf], b = 0, initial=1).  Results below the smallest normal may be flushed; the others equal
    the sequential loop's, however the ranks split the array."""
    rng = shared_rng(comm)
    tiny = np.finfo(dtype).tiny
    for trial in range(6):
        counts = random_counts(rng, comm.size, 6, empty=0.2)
        counts[rng.integers(comm.size)] += 6
        n = int(counts.sum())
        a = np.ones(n, dtype)
        k = rng.integers(1, n - 2)
        a[k] = tiny * 2.0**-3  # the product turns subnormal here...
        a[k + 1 + rng.integers(0, n - k - 1)] = [np.inf, -np.inf, np.nan][trial % 3]  # ...and meets this
        b = np.zeros(n, dtype)
        y = distscan.linear_recurrence(rank_part(a, counts, comm), rank_part(b, counts, comm), initial=1.0,
                                       comm=comm)
        ref = rank_part(recurrence_reference(a, b, initial=1.0).astype(dtype), counts, comm)
        small = np.abs(ref) < tiny  # flushed or not: both are within the flush's promise
        all_ranks_ok(comm, lambda: (np.testing.assert_array_equal(y[~small], ref[~small]),
                                    np.testing.assert_array_equal(np.abs(y[small]) < tiny, True)))
