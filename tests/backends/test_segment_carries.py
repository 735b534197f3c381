"""A segmented part's carry read from its last segment alone (distscan.ops.restarts.carry_rows): the
rows it picks, the CPU's search for the flag (cpu_states.find_flag), and the CPU loops' carry
(cpu_states.Loops.carry) against the state fold over every row of the part, field for field and
bit for bit, whatever the flags: none, row 0 only, the last row, all, dense, sparse.

Serial.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distscan.ops.options import call_op
from distscan._dtypes import scan_types
from distscan.backends import cpu, cpu_states
from distscan.ops.restarts import carry_rows

from tests.support.data import FLAG_PATTERNS, segment_flags

CASES = [("segments", "sum", "int64"), ("segments", "max", "float64"), ("segments", "nansum", "float32"),
         ("segments", "prod", "float64"), ("affine segments", "sum", "float64"),
         ("affine segments", "sum", "complex128")]


def _case(kind, base, dtype, ends):
    """The operator and types of a case; ``ends``: its state's flags end runs in scan order (the
    state of a reverse call's scan)."""
    op = call_op(base, segments=True, coefficients=1 if kind.startswith("affine") else None, reverse=ends)
    return op, scan_types(op, np.dtype(dtype), np.dtype(dtype) if kind.startswith("affine") else None)


def _whole_fold(op, types, x, aux, reverse):
    """The reference: the state fold (distscan.ops.state.State.fold) over the lifted states of every
    row, in scan order."""
    state = op.state
    lifted = state.lift(x, aux, types.acc)
    lifted = lifted[::-1] if reverse else lifted
    out = np.empty(x.shape[1], types.state)
    state.fold(np.ascontiguousarray(np.asarray(lifted, types.state)), out)
    return out


def _assert_same_state(got, want, what):
    """Field for field, bit for bit, but for the sign and payload of NaN: the two folds reach a NaN
    by different operations (inf - inf in one grouping, a NaN carried in the other), and x86 gives
    the first the sign bit set; NumPy promises neither (a CI run, seed 21171: a complex128
    recurrence's b, 0xfff8... against 0x7ff8...)."""
    for field in want.dtype.names:
        g, w = (np.ascontiguousarray(np.asarray(a[field]).reshape(-1)) for a in (got, want))
        if g.dtype.kind == "c":  # the real and imaginary parts apart
            g, w = g.view(g.real.dtype), w.view(w.real.dtype)
        if g.dtype.kind == "f":
            nan = np.isnan(g)
            assert np.array_equal(nan, np.isnan(w)), f"{what}: field {field}: NaN at other places: {g} != {w}"
            g, w = g[~nan], w[~nan]
        assert g.tobytes() == w.tobytes(), f"{what}: field {field}: {g} != {w}"


def _values(dtype, n, w, rng):
    dtype = np.dtype(dtype)
    if dtype.kind == "i":
        return rng.integers(-50, 50, (n, w)).astype(dtype)
    x = rng.standard_normal((n, w))
    if dtype.kind == "c":
        x = x + 1j * rng.standard_normal((n, w))
    x = x.astype(dtype)
    special = rng.random((n, w)) < 0.05  # zeros, infinities and NaN: the product's absorption fields
    x[special] = rng.choice(np.array([0.0, np.inf, np.nan], dtype), int(special.sum()))
    return x


@settings(max_examples=60, deadline=None)
@given(case=st.sampled_from(CASES), ends=st.booleans(), reverse=st.booleans(), n=st.integers(1, 300),
       w=st.sampled_from([1, 3]), pattern=st.sampled_from(FLAG_PATTERNS),
       seed=st.integers(0, 2**31))
def test_the_carry_of_the_last_segment_is_the_whole_part_s(case, ends, reverse, n, w, pattern, seed):
    """Either state (flags that start runs, or end them in scan order) scanned either way: a
    reverse call's state forwards is what the loops' tests and the file pipeline's chunks pass."""
    kind, base, dtype = case
    op, types = _case(kind, base, dtype, ends)
    rng = np.random.default_rng(seed)
    x = _values(types.acc, n, w, rng)
    flags = segment_flags(pattern, n, rng, rng.choice([0.01, 0.2, 0.7]))
    aux = (rng.uniform(-1.5, 1.5, (n, w)).astype(types.acc), flags) if kind.startswith("affine") else (flags,)
    loops = cpu.prepare(op, types, False, w)
    assert isinstance(loops, cpu_states.Loops)
    got = loops.carry(x, aux, reverse)
    _assert_same_state(got, _whole_fold(op, types, x, aux, reverse), f"{op.name} {pattern} n={n} w={w} {reverse=}")


# (flagged rows, state's flags end runs, scanned in reverse) -> the rows of the carry
PICKS = [([], False, False, (0, 10)), ([0], False, False, (0, 10)), ([3], False, False, (3, 10)),
         ([2, 7], False, False, (7, 10)), ([9], False, False, (9, 10)),
         ([], True, True, (0, 10)), ([0], True, True, (0, 10)), ([3], True, True, (0, 4)),
         ([2, 7], True, True, (0, 3)), ([9], True, True, (0, 10)), ([1], True, True, (0, 2)),
         ([9], True, False, (0, 10)), ([3, 9], True, False, (3, 10)),     # ends forwards: not the last row
         ([0], False, True, (0, 1)), ([9], False, True, (0, 10)), ([4, 6], False, True, (0, 5))]  # starts mirrored


@pytest.mark.parametrize("flagged,ends,reverse,want", PICKS)
def test_carry_rows_picks_the_last_segment_in_scan_order(flagged, ends, reverse, want):
    op, _ = _case("segments", "sum", "int64", ends)
    flags = np.zeros(10, bool)
    flags[flagged] = True
    assert carry_rows(op.state, 10, flags, reverse, cpu_states.find_flag) == want


def test_carry_rows_keeps_the_whole_part_without_segments_or_their_rows():
    op, _ = _case("segments", "sum", "int64", False)
    assert carry_rows(op.state, 1, np.ones(1, bool), False, cpu_states.find_flag) == (0, 1)
    assert carry_rows(op.state, 10, np.ones(3, bool), False, cpu_states.find_flag) == (0, 10)
    assert carry_rows(op.state, 10, None, True, cpu_states.find_flag) == (0, 10)
    compensated = call_op("sum", compensated=True)
    assert carry_rows(compensated.state, 10, np.ones(10, bool), False, cpu_states.find_flag) == (0, 10)


@settings(max_examples=200, deadline=None)
@given(n=st.integers(0, 400), lo=st.integers(0, 3), block=st.integers(1, 70), density=st.sampled_from([0, 0.01, 0.3]),
       columns=st.booleans(), seed=st.integers(0, 2**31))
def test_the_cpu_search_finds_the_nearest_flag_from_either_end(n, lo, block, density, columns, seed):
    flags = np.random.default_rng(seed).random(n) < density
    hits = np.flatnonzero(flags[lo:]) + lo
    for last in (True, False):
        want = -1 if hits.size == 0 else int(hits[-1] if last else hits[0])
        assert cpu_states.find_flag(flags.reshape(-1, 1) if columns else flags, lo, last, block) == want
