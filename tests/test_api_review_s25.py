"""Mends of the twenty-fifth session (2026-11-25) for the API defects the review of 2026-11-25 left
open, each run at any rank count with random, uneven and empty parts and compared with NumPy's
sequential scan of the gathered array, the signs of zeros included (``==`` takes -0.0 for +0.0):

- a segmented float product keeps NumPy's zero absorption across ranks (distscan._carry: the
  products' carry of the rows since a part's last segment start);
- a NaN-aware sum's carry reads NaN as +0.0, as ``numpy.nancumsum`` does (``[-0.0, nan]`` sums to
  +0.0), and an exclusive ``scan_then_add`` gives its first row the offset itself (``-0.0 + 0.0``
  is +0.0);
- a linear recurrence refuses coefficients that ``dtype=`` cannot take by NumPy's same_kind rule,
  on every rank.
"""

from __future__ import annotations

import numpy as np
import pytest

import distscan

from tests.support.data import local_part, random_counts
from tests.support.reference import segmented_reference
from tests.support.ranks import all_ranks_ok, raises_everywhere

pytestmark = [pytest.mark.anyranks, pytest.mark.timeout(120)]


def _equal_with_signs(got, want):
    """``got == want`` bit for bit but for NaN's payload: NaN where NaN, zeros of the same sign."""
    got, want = np.asarray(got), np.asarray(want)
    np.testing.assert_array_equal(got, want)
    zeros = want == 0
    np.testing.assert_array_equal(np.signbit(got[zeros]), np.signbit(want[zeros]),
                                  err_msg=f"signs of zeros differ: got {got[zeros]}, expected {want[zeros]}")


def _split(rng, comm, n_max=12):
    """Row counts of the ranks (uneven, some empty, the same on every rank)."""
    return random_counts(rng, comm.size, max_rows=n_max, empty=0.25)


# -- segmented float products -----------------------------------------------------------------------------

def _powers_of_two(rng, shape, dtype):
    """Zeros of both signs, +-1, +-2, a large power of two whose products overflow after a few, inf
    and NaN.  Every magnitude but the zeros is >= 1, so a product overflows in any grouping exactly
    where it does in sequence, and the finite ones are exact: NumPy's sequential results are the
    only right ones, bit for bit (but where a zero absorbs)."""
    big = 2.0 ** (600 if np.dtype(dtype) == np.float64 else 60)
    values = np.array([0.0, -0.0, 1.0, -1.0, 2.0, -2.0, big, -big, np.inf, -np.inf, np.nan])
    p = np.array([8, 6, 20, 14, 8, 6, 20, 10, 2, 1, 2], float)
    return rng.choice(values, shape, p=p / p.sum()).astype(dtype)


@pytest.mark.manyranks
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("op", ["prod", "nanprod"])
@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
@pytest.mark.parametrize("exclusive", [False, True], ids=["inclusive", "exclusive"])
@pytest.mark.parametrize("trailing", [(), (3,)], ids=["1-D", "3 columns"])
def test_segmented_float_products_absorb_zeros_as_numpy(comm, rng, dtype, op, reverse, exclusive, trailing):
    for _ in range(12):
        counts = _split(rng, comm)
        n = int(sum(counts))
        whole = _powers_of_two(rng, (n,) + trailing, dtype)
        flags = rng.random(n) < 0.08
        x, f = local_part(whole, counts, comm.rank), local_part(flags, counts, comm.rank)
        got = distscan.scan(x, op, segments=f, reverse=reverse, exclusive=exclusive, comm=comm)
        with np.errstate(all="ignore"):
            want = segmented_reference(whole, flags, op, exclusive=exclusive, reverse=reverse)
        all_ranks_ok(comm, lambda: _equal_with_signs(got, local_part(want, counts, comm.rank)))


@pytest.mark.manyranks
@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
def test_a_zero_absorbs_a_later_part_s_overflow_in_a_segment(comm, reverse):
    # one element a rank: 0, then parts whose own product overflows (1e200 * 1e200), then more; a
    # segment starts before the zero (and, in reverse, ends after the last element): only the
    # rows since it count
    whole = np.array([5.0, 0.0, 1e200, 1e200, -1e200, 2.0, 3.0, 1e200])
    flags = np.array([False, True, False, False, False, False, False, False])
    if reverse:  # mirrored, its first run scanned right to left: the zero comes first in it
        whole, flags = whole[::-1].copy(), np.array([True, False, False, False, False, False, False, True])
    counts = [len(p) for p in np.array_split(np.arange(len(whole)), comm.size)]
    x, f = local_part(whole, counts, comm.rank), local_part(flags, counts, comm.rank)
    for exclusive in (False, True):
        got = distscan.cumprod(x, segments=f, reverse=reverse, exclusive=exclusive, comm=comm)
        with np.errstate(all="ignore"):
            want = segmented_reference(whole, flags, "prod", exclusive=exclusive, reverse=reverse)
        assert not np.isnan(want).any()  # NumPy's running product stays a signed zero
        all_ranks_ok(comm, lambda: _equal_with_signs(got, local_part(want, counts, comm.rank)))


def test_a_segment_start_drops_an_earlier_zero(comm):
    # [0] | [flag 3, 1e200] | [1e200, 2]: the zero is in another segment, the overflow is NumPy's
    whole = np.array([0.0, 3.0, 1e200, 1e200, 2.0])
    flags = np.array([False, True, False, False, False])
    counts = [1, 2, 2] + [0] * (comm.size - 3) if comm.size >= 3 else [len(whole)] + [0] * (comm.size - 1)
    x, f = local_part(whole, counts, comm.rank), local_part(flags, counts, comm.rank)
    got = distscan.cumprod(x, segments=f, comm=comm)
    with np.errstate(all="ignore"):
        want = segmented_reference(whole, flags, "prod")
    all_ranks_ok(comm, lambda: _equal_with_signs(got, local_part(want, counts, comm.rank)))


# -- signed zeros of sums ---------------------------------------------------------------------------------

def _sum_reference(whole, nan_aware, exclusive, reverse, initial=None):
    """NumPy's sequential (nan)cumsum of the whole array: NaN read as +0.0 (nancumsum's), ``initial``
    folded in before the first element in scan order, an exclusive scan the inclusive one shifted
    (its first element ``initial`` or the identity +0.0)."""
    x = np.where(np.isnan(whole), np.zeros((), whole.dtype), whole) if nan_aware else whole
    x = x[::-1] if reverse else x
    start = np.zeros((1,) + x.shape[1:], x.dtype) if initial is None else np.full((1,) + x.shape[1:], initial, x.dtype)
    scanned = np.add.accumulate(np.concatenate([start, x]) if initial is not None else x, axis=0)
    if initial is not None:
        scanned = scanned[:-1] if exclusive else scanned[1:]
    elif exclusive:
        scanned = np.concatenate([start, scanned[:-1]])
    return scanned[::-1] if reverse else scanned


@pytest.mark.parametrize("exclusive", [True, False], ids=["exclusive", "inclusive"])
@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
def test_the_review_s_nancumsum_case(comm, exclusive, reverse):
    # [-0.0, nan] | [nan]: the first part's carry was -0.0 (its NaN left out), where NumPy's
    # sequential sum -0.0 + 0.0 is +0.0
    parts = [np.array([-0.0, np.nan]), np.array([np.nan])]
    if reverse:
        parts = [p[::-1].copy() for p in parts[::-1]]
    held = [parts[min(r, len(parts) - 1)] for r in range(comm.size)]
    counts = [len(p) for p in held]
    whole = np.concatenate(held)
    got = distscan.nancumsum(local_part(whole, counts, comm.rank), exclusive=exclusive, reverse=reverse, comm=comm)
    want = _sum_reference(whole, True, exclusive, reverse)
    all_ranks_ok(comm, lambda: _equal_with_signs(got, local_part(want, counts, comm.rank)))


@pytest.mark.manyranks
@pytest.mark.parametrize("dtype", ["float64", "float32", "complex128"])
@pytest.mark.parametrize("fn", ["cumsum", "nancumsum"])
@pytest.mark.parametrize("strategy", ["reduce_then_scan", "scan_then_add"])
@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
@pytest.mark.parametrize("exclusive", [False, True], ids=["inclusive", "exclusive"])
def test_sums_keep_numpy_s_signed_zeros(comm, rng, dtype, fn, strategy, reverse, exclusive):
    # mostly -0.0, some NaN and +0.0, a few +-1: every sum is exact, and -0.0 exactly where every
    # item so far (NaN read as +0.0 by nancumsum) is -0.0, in any association
    for trailing in ((), (2,)):
        for initial in (None, -0.0):
            counts = _split(rng, comm, n_max=6)
            n = int(sum(counts))
            values = np.array([-0.0, np.nan, 0.0, 1.0, -1.0])
            whole = rng.choice(values, (n,) + trailing, p=[0.7, 0.12, 0.06, 0.06, 0.06]).astype(dtype)
            if np.dtype(dtype).kind == "c":
                whole = whole + 1j * rng.choice(values, (n,) + trailing, p=[0.7, 0.12, 0.06, 0.06, 0.06])
                whole = whole.astype(dtype)
            got = getattr(distscan, fn)(local_part(whole, counts, comm.rank), exclusive=exclusive, reverse=reverse,
                                        initial=initial, strategy=strategy, comm=comm)
            with np.errstate(all="ignore"):
                want = _sum_reference(whole, fn == "nancumsum", exclusive, reverse, initial)

            def check():
                mine = local_part(want, counts, comm.rank)
                for part in ((np.real, np.imag) if np.dtype(dtype).kind == "c" else (np.real,)):
                    _equal_with_signs(part(got), part(mine))
            all_ranks_ok(comm, check)


# -- a linear recurrence's coefficients and dtype= -------------------------------------------------------

@pytest.mark.parametrize("a,dtype", [(np.array([1.5, 2.5]), np.int64), (1.5, np.int64), (2.0, np.int32),
                                     (np.array([1 + 1j, 2]), np.float64), (1j, np.float32)],
                         ids=["float array, int64", "float, int64", "integral float, int32", "complex array, float64",
                              "complex, float32"])
def test_coefficients_that_dtype_cannot_take_are_refused(comm, a, dtype):
    b = np.arange(2, dtype=np.int64)
    with pytest.raises(TypeError, match="same_kind"):  # NumPy's own a*y in that dtype
        np.multiply(a, b, dtype=dtype)
    raises_everywhere(comm, TypeError, r"Cannot cast the coefficients a from dtype\(.*\) to dtype\(.*\) with "
                                       r"casting rule 'same_kind'",
                      lambda: distscan.linear_recurrence(a, b, dtype=dtype, comm=comm))


@pytest.mark.mpi(min_size=2)
def test_coefficients_refused_on_one_rank_are_refused_on_every_rank(comm):
    a = np.array([0.5, 1.5]) if comm.rank == 1 else np.array([1, 2])
    message = raises_everywhere(comm, TypeError, "same_kind", lambda: distscan.linear_recurrence(
        a, np.arange(2), dtype=np.int64, comm=comm))
    assert message.startswith("rank 1: ")
    # the next call is right
    got = distscan.linear_recurrence(np.array([1, 2]), np.arange(2), dtype=np.int64, comm=comm)
    assert got.dtype == np.int64


@pytest.mark.parametrize("a,b_dtype,dtype", [(300, np.int8, None), (-1, np.uint8, None), (2**40, np.int32, None),
                                             (300, np.int64, np.int8)], ids=["300 int8", "-1 uint8", "2**40 int32",
                                                                            "300 dtype=int8"])
def test_a_python_int_coefficient_out_of_range_is_refused_as_numpy_does(comm, a, b_dtype, dtype):
    """A Python int ``a`` takes ``b``'s (or ``dtype=``'s) integer dtype, as in NumPy 2's ``a*y``,
    which refuses one out of its range (OverflowError); it was wrapped (300 with int8 ``b`` computed
    with 44).  On one rank only, after the call's kind is warm, it is refused on every rank, and the
    next call is right."""
    b = np.arange(1, 4, dtype=b_dtype)
    try:
        np.multiply(a, b, dtype=dtype)  # NumPy's own refusal (NumPy 2)
    except OverflowError:
        pass
    else:  # (every rank has the same NumPy: all skip alike)
        pytest.skip(f"NumPy {np.__version__} does not refuse {a} * {np.dtype(dtype or b_dtype)} (value-based casting)")
    for _ in range(2):  # the kind of the call warm on every rank
        distscan.linear_recurrence(2, b, dtype=dtype, comm=comm)
    raises_everywhere(comm, OverflowError, "out of bounds", lambda: distscan.linear_recurrence(
        a if comm.rank == comm.size - 1 else 2, b, dtype=dtype, comm=comm))
    raises_everywhere(comm, OverflowError, "out of bounds", lambda: distscan.linear_recurrence(
        a, b, dtype=dtype, segments=np.zeros(3, bool), comm=comm))
    got = distscan.linear_recurrence(2, b, dtype=dtype, comm=comm)
    whole = np.tile(b, comm.size).astype(got.dtype)
    y, want = got.dtype.type(0), np.empty(len(whole), got.dtype)
    with np.errstate(over="ignore"):
        for i in range(len(whole)):
            y = want[i] = got.dtype.type(2) * y + whole[i]
    all_ranks_ok(comm, lambda: np.testing.assert_array_equal(got, local_part(want, [3] * comm.size, comm.rank)))


@pytest.mark.parametrize("a,dtype", [(np.array([2, -1]), np.float64), (np.array([0.5, 2.0]), np.float32),
                                     (np.array([2, 3], np.int8), np.int64), (3, np.int16)],
                         ids=["int array, float64", "float64 array, float32", "int8, int64", "int, int16"])
def test_coefficients_the_same_kind_takes_are_scanned(comm, a, dtype):
    counts = [2] * comm.size
    b = np.arange(2 * comm.size, dtype=np.int64)
    whole_a = np.broadcast_to(np.asarray(a), (comm.size, 2)).reshape(-1) if np.ndim(a) else np.full(2 * comm.size, a)
    got = distscan.linear_recurrence(a, local_part(b, counts, comm.rank), dtype=dtype, comm=comm)
    y, want = np.zeros((), dtype), np.empty(len(b), dtype)
    for i in range(len(b)):  # NumPy's sequential loop in dtype (its same_kind casts)
        y = np.add(np.multiply(np.asarray(whole_a[i]).astype(np.asarray(a).dtype), y, dtype=dtype), b[i], dtype=dtype)
        want[i] = y
    assert got.dtype == np.dtype(dtype)
    all_ranks_ok(comm, lambda: np.testing.assert_array_equal(got, local_part(want, counts, comm.rank)))
