"""Defects of the API found by the review of 2026-11-25 (twenty-fourth session), each run at any
rank count with the parts written out per rank and compared with NumPy on the gathered array.
Mended on the branch s24-review-mends (on main they were strict xfails until then), but for the
segmented float product's zero absorption across ranks, mended on s25-api (2026-11-25: more cases in
tests/test_api_review_s25.py).
"""

from __future__ import annotations

import array

import numpy as np
import pytest

import distscan

from tests.support.data import local_part
from tests.support.ranks import all_ranks_ok

pytestmark = [pytest.mark.anyranks, pytest.mark.timeout(60)]

def _parts(parts, comm):
    """This rank's part of ``parts`` (one a rank; the last one again on every rank past them), the
    global array they make, and where this part starts in it."""
    held = [parts[min(r, len(parts) - 1)] for r in range(comm.size)]
    counts = [len(p) for p in held]
    whole = np.concatenate(held)
    return local_part(whole, counts, comm.rank), whole, sum(counts[:comm.rank])


def test_a_segmented_float_product_absorbs_zeros_across_ranks(comm):
    # the middle part's product is infinite: the part after it gets the zero times it (at 3 ranks
    # and more; at 2, the second part is scanned from the zero itself)
    x, whole, start = _parts([np.array([0.0]), np.array([1e200, 1e200]), np.array([2.0])], comm)
    got = distscan.cumprod(x, segments=np.zeros(len(x), bool), comm=comm)
    # rank 0's part holds the zero and is right: every rank fails with the ranks after it
    all_ranks_ok(comm, lambda: np.testing.assert_array_equal(got, np.cumprod(whole)[start:start + len(x)]))


@pytest.mark.parametrize("name,ufunc", [("nanmax", np.fmax), ("nanmin", np.fmin)])
def test_reduce_of_all_nan_data_is_nan(comm, name, ufunc):
    x = np.full(comm.rank + 1, np.nan)
    assert np.isnan(distscan.reduce(x, name, comm=comm))


@pytest.mark.parametrize("call", ["segments", "compensated", "recurrence"])
def test_state_scans_of_rows_of_no_columns_are_empty(comm, call):
    x = np.ones((2, 0))
    if call == "segments":
        got = distscan.cumsum(x, segments=np.ones(2, bool), comm=comm)
    elif call == "compensated":
        got = distscan.cumsum(x, compensated=True, comm=comm)
    else:
        got = distscan.linear_recurrence(0.5, x, comm=comm)
    assert got.shape == (2, 0)


@pytest.mark.parametrize("dtype,initial", [("int8", 300), ("uint64", -1), ("int64", 2**63)])
def test_an_integer_initial_out_of_the_dtype_s_range_is_refused(comm, dtype, initial):
    with pytest.raises(OverflowError):
        distscan.cummax(np.ones(2, dtype), initial=initial, comm=comm)  # max accumulates in the dtype itself


@pytest.mark.parametrize("dtype,initial,fits", [
    ("int8", 127, True), ("int8", 128, False), ("int8", -128, True), ("int8", -129, False),
    ("int8", 127.9, True), ("int8", 128.0, False), ("int8", -128.0, True), ("int8", -128.5, False),
    ("int64", 2**63 - 1, True), ("int64", np.uint64(2**63), False), ("int64", 2.0**63, False),
    ("uint64", 2**64 - 1, True), ("uint64", np.int64(-1), False), ("uint64", 2.0**64, False),
    ("uint64", -0.5, False)])
def test_an_initial_at_the_integer_range_s_edges(comm, dtype, initial, fits):
    """One check for integer and float initials (_call.initial_row): a float's fraction is truncated,
    so it fits below max + 1; an integer up to max; both from min."""
    x = np.zeros(2, dtype)
    if not fits:
        with pytest.raises(OverflowError, match="out of the range"):
            distscan.cummax(x, initial=initial, comm=comm)
        return
    got = distscan.cummax(x, initial=initial, comm=comm)
    want = max(int(initial), 0) if initial >= 0 else 0
    np.testing.assert_array_equal(got, np.full(len(x), want, dtype))


def test_an_empty_buffer_protocol_out_is_written_in_place(comm):
    out = array.array("q")
    got = distscan.cumsum(np.zeros(0, np.int64), out=out, comm=comm)
    assert len(got) == 0
