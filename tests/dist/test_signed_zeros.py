"""The identity of float sums, bit for bit, at any rank count.

An empty prefix gives +0.0, as NumPy does (``np.add.identity``, ``np.sum([])``,
``np.cumulative_sum(x, include_initial=True)[0]``): the first element of an exclusive scan, and
of every rank whose earlier ranks hold nothing.  A prefix of negative zeros gives -0.0, as
NumPy's sequential sum does: carries start from -0.0, the exact neutral element, so an empty
rank between two others changes no sign.  The GPU backend gives the same bits
(tests/gpu/test_promises.py)."""

from __future__ import annotations

import numpy as np
import pytest

import distscan

from tests.support.data import block_counts, local_part
from tests.support.ranks import all_ranks_ok
from tests.support.reference import reference_scan

pytestmark = [pytest.mark.anyranks, pytest.mark.manyranks]


def _bits(a):
    return np.signbit(np.asarray(a, np.float64))


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "complex128"])
@pytest.mark.parametrize("split", ["even", "first_rank_empty", "middle_empty"])
def test_negative_zeros_keep_their_sign_and_empty_prefixes_give_plus_zero(comm, dtype, split):
    g = np.array([-0.0, -0.0, -0.0, 1.0, -1.0, -0.0], dtype)
    if split == "even":
        counts = block_counts(len(g), comm.size)
    else:
        counts = [0] * comm.size
        if split == "first_rank_empty" and comm.size > 1:
            counts[1:] = block_counts(len(g), comm.size - 1)
        else:
            counts[0] = 2
            counts[-1] += len(g) - 2
    part = local_part(g, counts, comm.rank).copy()
    for exclusive in (False, True):
        got = distscan.cumsum(part, exclusive=exclusive, comm=comm)
        want = local_part(reference_scan(g, "sum", exclusive=exclusive), counts, comm.rank)
        all_ranks_ok(comm, lambda: np.testing.assert_array_equal(_bits(np.real(got)), _bits(np.real(want)),
                                                                 err_msg=f"exclusive={exclusive}"))
        all_ranks_ok(comm, lambda: np.testing.assert_array_equal(got, want))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_reductions_start_from_plus_zero_as_numpy(comm, dtype):
    empty = np.empty(0, dtype)
    total = distscan.reduce(empty, comm=comm)
    assert total == 0 and not np.signbit(total)
    zeros = np.array([-0.0] if comm.rank == 0 else [], dtype)
    total = distscan.reduce(zeros, comm=comm)
    assert not np.signbit(total) and not np.signbit(np.sum(np.array([-0.0], dtype)))
    # an exclusive scan of empty parts, with an initial value: the initial value, sign and all
    part = np.array([1.0], dtype) if comm.rank == comm.size - 1 else np.empty(0, dtype)
    got = distscan.cumsum(part, exclusive=True, initial=-0.0, comm=comm)
    if comm.rank == comm.size - 1:
        assert np.signbit(got[0])


@pytest.mark.parametrize("dtype", ["float64", "float32", "complex128", "complex64"])
@pytest.mark.parametrize("columns", [None, 3])
@pytest.mark.parametrize("split", ["even", "first_rank_empty"])
def test_compensated_sums_of_negative_zeros_keep_their_sign(comm, dtype, columns, split):
    """``compensated=True`` on the CPU: a prefix of -0.0 items sums to -0.0, as NumPy's cumsum, where
    TwoSum's error +0.0 was added to it (+0.0; the loops, the carries' fold and the state's combine:
    2026-11-25 review, mended 2026-11-26).  A complex sum per component: the real parts stay -0.0
    beside imaginary parts whose sum rounds (an error that is not zero)."""
    if np.dtype(dtype).kind == "c":
        g = np.array([complex(-0.0, -0.0)] * 3 + [complex(-0.0, 2.0 ** 53), complex(-0.0, 1.0),
                                                  complex(-0.0, 1.0)], dtype)
    else:
        g = np.array([-0.0, -0.0, -0.0, -0.0, 1.0, -1.0, -0.0], dtype)
    if columns:
        g = np.stack([g, np.full(len(g), -0.0, dtype), g[::-1]], axis=1)[:, :columns]
    if split == "even" or comm.size == 1:
        counts = block_counts(len(g), comm.size)
    else:
        counts = [0] + block_counts(len(g), comm.size - 1)
    part = local_part(g, counts, comm.rank).copy()
    for exclusive in (False, True):
        got = distscan.cumsum(part, exclusive=exclusive, compensated=True, comm=comm)
        # the sign of a zero: -0.0 where every item so far is -0.0 (an exclusive scan's first, +0.0)
        neg = np.signbit(g.real) & (g.real == 0)
        if np.dtype(dtype).kind == "c":
            neg = np.stack([neg, np.signbit(g.imag) & (g.imag == 0)])
        else:
            neg = neg[None]
        want = np.minimum.accumulate(neg, axis=1)
        if exclusive:
            want = np.concatenate([np.zeros_like(want[:, :1]), want[:, :-1]], axis=1)
        want = [local_part(w, counts, comm.rank) for w in want]
        parts = [np.real(got), np.imag(got)] if np.dtype(dtype).kind == "c" else [got]
        for name, p, w in zip(["real", "imag"], parts, want):
            zero_sign = np.where(p == 0, np.signbit(p), False)
            all_ranks_ok(comm, lambda: np.testing.assert_array_equal(
                zero_sign, w, err_msg=f"{name} part, exclusive={exclusive}: {p!r}"))
