"""Segmented float products absorb zeros as NumPy's sequential product does, through the state
itself (distscan.ops.state.Segmented over prod/nanprod: the fields pre, zero, after, nonfinite,
sign beside value and the segment fields): the state's NumPy combine, its compiled fold and the CPU
loops' carry agree bit for bit and compose in any grouping to the sequential result; across 1, 2
and 3 ranks (parts of different sizes, empty ones too), forwards and in reverse, inclusive and
exclusive, the results are NumPy's on the concatenated array bit for bit, signs of zeros included,
on the general route and on the fused lean call (distscan.dist.lean).

Every magnitude but the zeros' is 1, 2 or a power of two whose products overflow after a few
(2^600 for float64, 2^60 for float32), beside inf and NaN: every product is exact or overflows in
any grouping exactly where it does in sequence, so NumPy's sequential results are the only right
ones (where a zero absorbs, a grouping that multiplied 0 by an overflowed product gave NaN).

Hypothesis draws the cases (derandomized: the same on every rank).  Runs serially and under
``mpiexec -n K python -m pytest --with-mpi -m anyranks``.
"""

from __future__ import annotations

import numpy as np
import pytest

import distscan
from distscan import _kinds
from distscan._dtypes import scan_types
from distscan.backends import cpu
from distscan.ops import get_op, segmented

from tests.dist.test_lean_call import _fused
from tests.support.data import local_part
from tests.support.ranks import all_ranks_ok
from tests.support.reference import segmented_reference

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

VALUES = {np.dtype(np.float64): [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 2.0 ** 600, -2.0 ** 600, np.inf, -np.inf, np.nan],
          np.dtype(np.float32): [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 2.0 ** 60, -2.0 ** 60, np.inf, -np.inf, np.nan]}
# mostly ones and the large power (overflow), some zeros, few infinities and NaN
WEIGHTS = [2, 1, 5, 3, 2, 1, 4, 2, 1, 1, 1]


def _values(dtype, n):
    """A strategy of n values of ``dtype`` from VALUES, weighted."""
    pool = [v for v, k in zip(VALUES[np.dtype(dtype)], WEIGHTS) for _ in range(k)]
    return st.lists(st.sampled_from(pool), min_size=n, max_size=n).map(lambda v: np.array(v, dtype))


def _bits(a):
    """``a``'s bytes, every NaN as one NaN (its sign and payload are no part of a result)."""
    a = np.array(a)
    if a.dtype.kind in "fc":
        a[np.isnan(a)] = np.nan
    return a.tobytes()


def _equal_with_signs(got, want, what=""):
    """NumPy's bits: NaN where NaN, zeros of the same sign (``==`` takes -0.0 for +0.0)."""
    got, want = np.asarray(got), np.asarray(want)
    np.testing.assert_array_equal(got, want, err_msg=what)
    if want.dtype.kind == "c":  # complex zeros: 0j (the kernels' and the loops' as NumPy's)
        return
    zeros = want == 0
    np.testing.assert_array_equal(np.signbit(got[zeros]), np.signbit(want[zeros]),
                                  err_msg=f"{what}: signs of zeros differ: got {got[zeros]}, expected {want[zeros]}")


def _reference(whole, flags, name, reverse, exclusive, initial=None):
    with np.errstate(all="ignore"):
        return segmented_reference(whole, flags, name, exclusive=exclusive, reverse=reverse, initial=initial)


# -- the state: its combine, its fold and the CPU loops' carry ------------------------------------------

def _meaningful(states):
    """The state rows with ``sign`` unset once the value is NaN (where it has no meaning: it is the
    parity of sign bits that a NaN's own holds)."""
    states = np.array(states, copy=True)
    states["sign"] &= ~np.isnan(states["value"])
    return states


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(data=st.data(), dtype=st.sampled_from(["float64", "float32"]), name=st.sampled_from(["prod", "nanprod"]),
       ends=st.booleans(), n=st.integers(1, 24))
def test_the_state_composes_in_any_grouping_to_the_loops_carry(data, dtype, name, ends, n):
    """Split a part's rows at random cuts: each piece's state by the CPU loops' carry; folded by the
    compiled fold and by the NumPy combine, they are the loops' carry of the whole part, and its
    value is NumPy's sequential product of the rows since the last segment start."""
    op = segmented(get_op(name), ends)
    types = scan_types(op, np.dtype(dtype))
    x = data.draw(_values(dtype, n))
    flags = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), bool) & \
        (np.arange(n) % data.draw(st.integers(1, 8)) == 0)
    cuts = sorted(set(data.draw(st.lists(st.integers(0, n), max_size=4))) | {0, n})
    loops = cpu.prepare(op, types, False, 1)
    whole = loops.carry(x, (flags,))
    pieces = [loops.carry(x[a:b], (flags[a:b],)) for a, b in zip(cuts, cuts[1:])]
    folded = np.empty(1, types.state)
    op.state.fold(np.stack(pieces).reshape(len(pieces), 1), folded)
    combined = pieces[0]
    for p in pieces[1:]:
        combined = op.state.combine(combined, p)
    for field in types.state.names:
        assert _bits(_meaningful(folded)[field]) == _bits(_meaningful(whole)[field]), (field, folded, whole)
        assert _bits(_meaningful(combined)[field]) == _bits(_meaningful(whole)[field]), (field, combined, whole)
    # the carry's value: NumPy's sequential product of the rows since the last start in scan order
    # (forwards the last flagged row; in reverse, where a flag ends a run, the row after the last
    # flagged one but the last row)
    starts = np.flatnonzero(flags[:-1]) + 1 if ends else np.flatnonzero(flags)
    rows = x[starts[-1] if len(starts) else 0:]
    if name == "nanprod":
        rows = np.where(np.isnan(rows), np.ones((), rows.dtype), rows)
    with np.errstate(all="ignore"):
        assert _bits(whole["value"]) == _bits(np.multiply.accumulate(rows)[-1:])


@settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(data=st.data(), dtype=st.sampled_from(["float64", "float32"]), ends=st.booleans(), n=st.integers(1, 30))
def test_lift_and_the_numpy_combine_are_the_sequential_state(data, dtype, ends, n):
    """The states of single rows (``lift``) combined one by one in scan order, seeded by a state of
    earlier rows, are the CPU loops' state after scanning those rows from that seed."""
    op = segmented(get_op("prod"), ends)
    types = scan_types(op, np.dtype(dtype))
    x = data.draw(_values(dtype, n))
    flags = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), bool)
    head = data.draw(st.integers(0, n - 1))
    loops = cpu.prepare(op, types, False, 1)
    seed = loops.carry(x[:head], (flags[:head],)) if head else None
    want = loops.scan(loops.rows(x[head:]), (flags[head:],), seed=seed, out=np.empty((n - head, 1), types.acc),
                      want_total=True)
    lifted = op.state.lift(x[head:].reshape(-1, 1), (flags[head:],), types.acc)
    state = seed if seed is not None else lifted[0]
    for row in lifted[1:] if seed is None else lifted:
        state = op.state.combine(state, row)
    for field in types.state.names:
        assert _bits(_meaningful(state)[field]) == _bits(_meaningful(want)[field]), (field, state, want)


def test_the_state_s_fields_and_the_kernels_struct():
    """Zero absorption's fields in the state of float and complex products only; the GPU kernels'
    struct is the plain (value, flag) / (value, inner, end) one."""
    for ends in (False, True):
        st_ = segmented(get_op("prod"), ends).state
        for value in ("float64", "float32", "complex64"):
            assert {"pre", "zero", "after", "nonfinite", "sign"} <= set(st_.dtype(np.dtype(value)).names)
            assert st_.kernel_dtype(np.dtype(value)).names == (("value", "inner", "end") if ends else ("value", "flag"))
        assert st_.dtype(np.dtype(np.int64)) == st_.kernel_dtype(np.dtype(np.int64))
        assert segmented(get_op("sum"), ends).state.dtype(np.dtype(np.float64)).names == \
            (("value", "inner", "end") if ends else ("value", "flag"))
    # the state of float64 forwards travels inline in the exchange's record (40 bytes)
    assert segmented(get_op("prod")).state.dtype(np.dtype(np.float64)).itemsize == 24


# -- across ranks -----------------------------------------------------------------------------------------

def _few_flags(data, n):
    """Segment flags on a few drawn rows (none, often): long segments across the ranks."""
    flags = np.zeros(n, bool)
    if n:
        flags[data.draw(st.lists(st.integers(0, n - 1), max_size=2))] = True
    return flags


@pytest.mark.anyranks
@pytest.mark.timeout(600)
@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(data=st.data(), dtype=st.sampled_from(["float64", "float32"]), name=st.sampled_from(["prod", "nanprod"]),
       reverse=st.booleans(), exclusive=st.booleans(), columns=st.sampled_from([(), (2,)]))
def test_segmented_float_products_across_ranks_are_numpys(comm, data, dtype, name, reverse, exclusive, columns):
    """Parts of drawn sizes (empty ones too) on every rank, drawn values and flags, an ``initial``
    (of the same values: zeros, overflowing powers, inf, NaN) or none: each rank's part of the
    result is NumPy's sequential segmented product of the concatenation, bit for bit, every
    segment's running product starting from ``initial``."""
    counts = data.draw(st.lists(st.integers(0, 9), min_size=comm.size, max_size=comm.size))
    n = sum(counts)
    whole = data.draw(_values(dtype, n * int(np.prod(columns)))).reshape((n,) + columns)
    flags = _few_flags(data, n)
    initial = data.draw(st.none() | st.sampled_from(VALUES[np.dtype(dtype)]))
    x, f = local_part(whole, counts, comm.rank), local_part(flags, counts, comm.rank)
    got = distscan.scan(x, name, segments=f, reverse=reverse, exclusive=exclusive, initial=initial, comm=comm)
    want = local_part(_reference(whole, flags, name, reverse, exclusive, initial), counts, comm.rank)
    all_ranks_ok(comm, lambda: _equal_with_signs(got, want, f"counts {counts}, initial {initial}"))


@pytest.mark.anyranks
@pytest.mark.parametrize("dtype", ["float64", "float32", "complex128"])
def test_segments_that_never_start_fold_initial_in_as_no_segments_do(comm, dtype):
    """The review's cases: a running product from ``initial`` (0, or one whose product with the
    first rows overflows) meets a zero.  All-False ``segments=`` give what no ``segments=`` give,
    NumPy's ``cumprod`` of ``[initial, *x]`` (0 where the part's own product overflowed; NaN where
    ``initial`` times it did), on one rank and split over the ranks."""
    big = VALUES[np.dtype("float32" if dtype == "float32" else "float64")][6]
    cases = [(np.array([big, big, 0.0, 2.0]), 0.0), (np.array([2.0, big, 0.0, 3.0]), big),
             (np.array([2.0, -big, -0.0, 3.0, -1.0]), -0.0), (np.array([big, np.inf, 0.0, 1.0]), 0.0)]
    for whole, initial in cases:
        whole = whole.astype(dtype)
        n = len(whole)
        counts = [len(p) for p in np.array_split(np.arange(n), comm.size)]
        x = local_part(whole, counts, comm.rank)
        for reverse in (False, True):
            for exclusive in (False, True):
                with np.errstate(all="ignore"):
                    ordered = whole[::-1] if reverse else whole
                    full = np.cumprod(np.r_[np.asarray(initial, dtype), ordered])
                    want = full[:-1] if exclusive else full[1:]
                    want = local_part(want[::-1] if reverse else want, counts, comm.rank)
                kw = dict(initial=initial, reverse=reverse, exclusive=exclusive, comm=comm)
                plain = distscan.cumprod(x, **kw)
                segmented_ = distscan.cumprod(x, segments=np.zeros(len(x), bool), **kw)
                what = f"{whole} initial {initial} reverse {reverse} exclusive {exclusive}"
                all_ranks_ok(comm, lambda: (_equal_with_signs(plain, want, what),
                                            _equal_with_signs(segmented_, want, what)))


@pytest.mark.anyranks
@pytest.mark.timeout(600)
@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(data=st.data(), dtype=st.sampled_from(["float64", "float32"]), reverse=st.booleans(),
       exclusive=st.booleans())
def test_the_fused_lean_call_keeps_numpys_zeros(comm, data, dtype, reverse, exclusive):
    """The same on the lean call (a contiguous 1-D part with ``out=``, from a kind's second call on:
    distscan.dist.lean fuses the part's scan, its carry into the exchange's record and the seeded
    finish), part sizes drawn per call, a part of one row and empty parts among them."""
    _kinds.KINDS.clear()
    for _ in range(3):
        counts = data.draw(st.lists(st.integers(0, 7), min_size=comm.size, max_size=comm.size))
        n = sum(counts)
        whole = data.draw(_values(dtype, n))
        flags = _few_flags(data, n)
        x, f = local_part(whole, counts, comm.rank), local_part(flags, counts, comm.rank)
        want = local_part(_reference(whole, flags, "prod", reverse, exclusive), counts, comm.rank)
        for _ in range(2):  # the kind's first call resolves the exchange; the second is the lean call
            out = np.full(len(x), 7.0, dtype)
            got = distscan.cumprod(x, segments=f, reverse=reverse, exclusive=exclusive, out=out, comm=comm)
            all_ranks_ok(comm, lambda: _equal_with_signs(got, want, f"counts {counts}"))
    if comm.size > 1:
        assert _fused(comm) == 1  # the kind's lean call is the fused state scan


@pytest.mark.anyranks
@pytest.mark.timeout(120)
@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_zero_absorbs_every_later_rank_s_overflow(comm, reverse, dtype):
    """[0] then one large power a row over many rows, one segment: every later rank's own product
    overflows, and NumPy's result stays 0 from the zero on (the review's case, across ranks)."""
    big = VALUES[np.dtype(dtype)][6]
    n = 4 * comm.size + 3
    whole = np.full(n, big, dtype)
    whole[-1 if reverse else 0] = 0.0
    flags = np.zeros(n, bool)
    counts = [len(p) for p in np.array_split(np.arange(n), comm.size)]
    x, f = local_part(whole, counts, comm.rank), local_part(flags, counts, comm.rank)
    for exclusive in (False, True):
        for out in (None, np.empty(len(x), dtype)):  # the general route, then the lean call
            got = distscan.cumprod(x, segments=f, reverse=reverse, exclusive=exclusive, out=out, comm=comm)
            want = local_part(_reference(whole, flags, "prod", reverse, exclusive), counts, comm.rank)
            all_ranks_ok(comm, lambda: _equal_with_signs(got, want))
