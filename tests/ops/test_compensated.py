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


@pytest.mark.parametrize("dtype", ["float64", "float32", "complex128", "complex64"])
def test_the_state_s_combine_and_fold_keep_a_sum_of_negative_zeros(comm, dtype):
    """Compensated's two joins of states (its NumPy ``combine`` and its numba ``fold``, the carries'):
    (-0.0, +0.0) joined with (-0.0, +0.0) is (-0.0, +0.0), as NumPy's -0.0 + -0.0; the error's +0.0
    was added to the sum (+0.0), per component of a complex sum."""
    from distscan.ops import derive, get_op

    st = derive.compensated(get_op("sum")).state
    value = np.dtype(dtype)
    zero = st.neutral(value)  # (-0.0, +0.0)
    stack = np.array([zero] * 3, st.dtype(value)).reshape(3, 1)
    if value.kind == "c":  # the real parts -0.0 beside imaginary parts whose sum rounds
        stack["s"][:, 0] = [complex(-0.0, 2.0 ** 53), complex(-0.0, 1.0), complex(-0.0, 1.0)]
    out = np.empty(1, st.dtype(value))
    st.fold(stack, out)
    joined = st.combine(st.combine(stack[0], stack[1]), stack[2])
    for got in (out[0]["s"], joined[0]["s"]):
        assert np.signbit(np.real(got)), got
        if value.kind != "c":
            assert got == 0


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_negated_step_is_the_plain_step_with_the_zero_s_sign_kept(dtype):
    """The compensated step as distscan writes it (its error negated: distscan.ops.folds) against
    TwoSum's plain form with ``hi if lo == 0 else hi + lo``, on random pairs of states with zeros of
    both signs, subnormals, infinities, NaN and the largest values among them: the same sums bit for
    bit and the same errors by value (the plain form's sum differs only where it gave +0.0 for -0.0),
    in the NumPy join and in the numba fold."""
    from distscan.ops import derive, get_op
    from distscan.ops.state import _compensated_join

    dt = np.dtype(dtype).type
    fi = np.finfo(dt)
    rng = np.random.default_rng(7)
    specials = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, fi.tiny, -fi.tiny, fi.smallest_subnormal,
                         -fi.smallest_subnormal, fi.max, -fi.max, 3.0, 2.0 ** 24, -(2.0 ** 24)], dt)
    n = 50_000

    def draw(scale=1.0):
        with np.errstate(over="ignore"):
            r = (rng.standard_normal(n) * 10.0 ** rng.integers(-30, 30, n) * scale).astype(dt)
        pick = rng.random(n) < 0.4
        r[pick] = rng.choice(specials, int(pick.sum()))
        return r

    s, ts, e, te = draw(), draw(), draw(2.0 ** -40), draw(2.0 ** -40)
    s[:4], ts[:4], e[:4], te[:4] = -0.0, -0.0, [0.0, -0.0, 0.0, -0.0], [0.0, 0.0, -0.0, -0.0]  # the case mended
    with np.errstate(all="ignore"):
        hi = s + ts
        bb = hi - s
        lo = (s - (hi - bb)) + (ts - bb) + (e + te)
        plain = hi + lo
        want_s = np.where(np.isfinite(hi), np.where(lo == 0, hi, plain), hi)
        want_e = np.where(np.isfinite(hi), lo - (plain - hi), 0)
        got_s, got_e = _compensated_join(s, e, ts, te)
    st = derive.compensated(get_op("sum")).state
    stack = np.empty((2, n), st.dtype(np.dtype(dtype)))
    stack["s"], stack["e"], out = [s, ts], [e, te], np.empty(n, stack.dtype)
    st.fold(stack, out)
    bits = np.dtype(f"u{np.dtype(dtype).itemsize}")
    for name, gs, ge in (("join", got_s, got_e), ("fold", out["s"], out["e"])):
        same_s = (gs.view(bits) == want_s.view(bits)) | (np.isnan(gs) & np.isnan(want_s))
        same_e = (ge == want_e) | (np.isnan(ge) & np.isnan(want_e))
        assert same_s.all(), (name, s[~same_s][:4], ts[~same_s][:4], gs[~same_s][:4], want_s[~same_s][:4])
        assert same_e.all(), (name, ge[~same_e][:4], want_e[~same_e][:4])
    assert np.signbit(want_s[:4]).all() and not np.signbit(plain[:4]).any()
