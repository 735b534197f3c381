"""Defects of the API found by the review of 2026-11-25 (twenty-fourth session), kept as strict
xfails until they are mended (a mend changes ``distscan/``, which needs the GPU suite after it,
and that session had no device time left; benchmarks/NOTES-gpu.md).  Each runs at any rank count
with the parts written out per rank, and compares every rank's result with NumPy's on the
gathered array.  A mend turns a test into a pass, and its strict xfail then fails the suite until
the marker is removed.
"""

from __future__ import annotations

import array

import numpy as np
import pytest

import distscan

pytestmark = [pytest.mark.anyranks, pytest.mark.timeout(60)]

try:
    from mpi4py import MPI

    WORLD = MPI.COMM_WORLD
except ImportError:  # pragma: no cover
    WORLD = None
RANKS = 1 if WORLD is None else WORLD.Get_size()
RANK = 0 if WORLD is None else WORLD.Get_rank()


def _mine(parts):
    """This rank's part of ``parts`` (one a rank; the last one on every rank past them) and the
    global array the ranks hold together."""
    held = [parts[min(r, len(parts) - 1)] for r in range(RANKS)]
    return held[RANK], np.concatenate(held), sum(len(p) for p in held[:RANK])


@pytest.mark.xfail(RANKS > 2, strict=True, reason="the segmented carry multiplies a part's product: "
                   "0 times a later part's infinite product is NaN (distscan/_carry.py's zero position "
                   "covers plain products only)")
def test_a_segmented_float_product_absorbs_zeros_across_ranks():
    # the middle part's product is infinite: the part after it gets the zero times it (at 3 ranks
    # and more; at 2, the second part is scanned from the zero itself)
    x, whole, start = _mine([np.array([0.0]), np.array([1e200, 1e200]), np.array([2.0])])
    got = distscan.cumprod(x, segments=np.zeros(len(x), bool), comm=WORLD)
    mine = np.array_equal(got, np.cumprod(whole)[start:start + len(x)])  # rank 0's part has the zero: right
    assert all([mine] if WORLD is None else WORLD.allgather(mine)), (RANK, got)


@pytest.mark.xfail(strict=True, reason="api.reduce applies the total to the identity: fmax(-inf, nan) "
                   "is -inf (fmin(inf, nan) inf) where numpy.fmax.reduce of all-NaN data is nan")
@pytest.mark.parametrize("name,ufunc", [("nanmax", np.fmax), ("nanmin", np.fmin)])
def test_reduce_of_all_nan_data_is_nan(name, ufunc):
    x = np.full(RANK + 1, np.nan)
    assert np.isnan(distscan.reduce(x, name, comm=WORLD))


@pytest.mark.xfail(strict=True, raises=ZeroDivisionError, reason="backends/cpu_states.Loops._run guards "
                   "n == 0 but not a row of no columns")
@pytest.mark.parametrize("call", ["segments", "compensated", "recurrence"])
def test_state_scans_of_rows_of_no_columns_are_empty(call):
    x = np.ones((2, 0))
    if call == "segments":
        got = distscan.cumsum(x, segments=np.ones(2, bool), comm=WORLD)
    elif call == "compensated":
        got = distscan.cumsum(x, compensated=True, comm=WORLD)
    else:
        got = distscan.linear_recurrence(0.5, x, comm=WORLD)
    assert got.shape == (2, 0)


@pytest.mark.xfail(strict=True, reason="_call.initial_row range-checks float initials only: an int "
                   "past the dtype's range wraps (cummax(int8, initial=300) gives 44), where NumPy 2 raises "
                   "OverflowError")
@pytest.mark.parametrize("dtype,initial", [("int8", 300), ("uint64", -1), ("int64", 2**63)])
def test_an_integer_initial_out_of_the_dtype_s_range_is_refused(dtype, initial):
    with pytest.raises(OverflowError):
        distscan.cummax(np.ones(2, dtype), initial=initial, comm=WORLD)  # max accumulates in the dtype itself


@pytest.mark.xfail(strict=True, reason="_call's check that out= is written in place takes two empty "
                   "arrays for a copy (np.may_share_memory is False for them)")
def test_an_empty_buffer_protocol_out_is_written_in_place():
    out = array.array("q")
    got = distscan.cumsum(np.zeros(0, np.int64), out=out, comm=WORLD)
    assert len(got) == 0
