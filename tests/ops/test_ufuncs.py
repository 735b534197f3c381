"""The plain operators of issue 30 across ranks (distscan.ops.table): the NumPy ufuncs beyond the
classic ten (NaN-aware, logaddexp, gcd, lcm) against NumPy's own scans, reverse scans against the
mirrored scan, and nancumprod's zeros and infinities in other ranks' parts.

Written for any rank count (serially and under mpiexec, tests/run.sh); bounds as
tests/ops/__init__.py states them (``assert_within_sum_bound``).
"""

from __future__ import annotations

import numpy as np
import pytest

import distscan
from distscan.ops import get_op

from tests.support.data import random_array, random_counts, rank_part
from tests.support.ranks import SELF, all_ranks_ok
from tests.support.reference import assert_within_sum_bound
from tests.support.seeds import shared_rng


pytestmark = [pytest.mark.anyranks, pytest.mark.timeout(300)]


_NEW_OPS = {
    "nansum": (np.nancumsum, "float64"), "nanprod": (np.nancumprod, "float32"),
    "nanmax": (np.fmax.accumulate, "float64"), "nanmin": (np.fmin.accumulate, "float32"),
    "logaddexp": (np.logaddexp.accumulate, "float64"), "logaddexp2": (np.logaddexp2.accumulate, "float32"),
    "gcd": (np.gcd.accumulate, "int64"), "lcm": (np.lcm.accumulate, "int32"),
}


def _plain_reference(name, g, reverse):
    fn, _ = _NEW_OPS[name]
    h = g[::-1] if reverse else g
    ref = fn(h) if name not in ("lcm", "gcd") else fn(h, dtype=g.dtype)
    return ref[::-1] if reverse else ref


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("name", sorted(_NEW_OPS))
def test_new_ufunc_operators_match_numpy(name, reverse, comm):
    rng = shared_rng(comm)
    dtype = _NEW_OPS[name][1]
    counts = random_counts(rng, comm.size)
    n = int(counts.sum())
    if name in ("gcd", "lcm"):
        g = rng.integers(1, 13, n).astype(dtype) * rng.choice([1, -1], n).astype(dtype)
    elif name == "nanprod":
        g = (1 + 0.05 * rng.standard_normal(n)).astype(dtype)
    else:
        g = random_array(rng, n, dtype)
    if dtype.startswith("float"):
        g[rng.random(n) < 0.2] = np.nan
    x = rank_part(g, counts, comm)
    spelled = [name, getattr(np, {"nanmax": "fmax", "nanmin": "fmin"}.get(name, name), None)]
    for op in [s for s in spelled if isinstance(s, (str, np.ufunc))]:
        y = distscan.scan(x, op, comm=comm, reverse=reverse)
        ref = rank_part(_plain_reference(name, g, reverse), counts, comm)
        all_ranks_ok(comm, lambda: assert_within_sum_bound(y, ref, np.nansum(np.abs(g)) + 1, dtype, n=len(g)))


@pytest.mark.manyranks
@pytest.mark.parametrize("opname", ["sum", "prod", "max", "min", "bitwise_xor", "logical_or"])
@pytest.mark.parametrize("dtype", ["int32", "uint8", "float32", "float64", "complex64"])
def test_reverse_is_the_mirrored_scan(opname, dtype, comm):
    op = get_op(opname)
    if np.dtype(dtype).kind not in op.kinds:
        pytest.skip("operator not defined on the dtype")
    rng = shared_rng(comm)
    for exclusive in (False, True):
        counts = random_counts(rng, comm.size)
        g = random_array(rng, int(counts.sum()), dtype, trailing=(2,) if rng.random() < 0.3 else ())
        if opname == "prod" and np.dtype(dtype).kind in "fc":
            g = (1 + 0.01 * g).astype(dtype)
        initial = None if rng.random() < 0.5 else np.asarray(1, dtype)
        x = rank_part(g, counts, comm)
        y = distscan.scan(x, opname, exclusive=exclusive, initial=initial, reverse=True, comm=comm)
        mirrored = distscan.scan(g[::-1], opname, exclusive=exclusive, initial=initial, comm=SELF)[::-1]
        ref = rank_part(mirrored, counts, comm)
        all_ranks_ok(comm, lambda: assert_within_sum_bound(y, ref, np.abs(g).sum() + 1, y.dtype, n=len(g)))
        assert y.dtype == mirrored.dtype


@pytest.mark.manyranks
def test_nancumprod_zeros_and_infinities_across_ranks(comm):
    """A zero that meets an overflow, or an infinity after a zero, in another rank's part: the
    sequential product NumPy gives (NaN read as 1), not the 0 * inf of a product of parts."""
    rng = shared_rng(comm)
    for reverse in (False, True):
        counts = random_counts(rng, comm.size, 12)
        n = int(counts.sum())
        g = rng.choice(np.array([0.0, np.inf, -np.inf, np.nan, 1e200, -2.0, 0.5, -0.0]), n)
        h = g[::-1] if reverse else g
        ref = np.nancumprod(h)
        ref = ref[::-1] if reverse else ref
        with np.errstate(all="ignore"):
            y = distscan.nancumprod(rank_part(g, counts, comm), reverse=reverse, comm=comm)
        mine = rank_part(ref, counts, comm)
        all_ranks_ok(comm, lambda: np.testing.assert_array_equal(y, mine))


def test_nan_is_replaced_first_only_where_nan_aware_floats_become_integers():
    """Op.nan_replacement, the one rule of the API's calls and the command's: NumPy's nancumsum and
    nancumprod of floats with an integer dtype replace NaN with the identity before the
    conversion; floats scanned as floats keep NaN for the lift, and other operators keep it."""
    for name, identity in (("nansum", 0), ("nanprod", 1)):
        for inputs in ("float16", "float32", "float64", "complex64"):
            for compute in ("int8", "int64", "uint32", "bool"):
                got = get_op(name).nan_replacement(np.dtype(inputs), np.dtype(compute))
                assert got is not None and got == identity and got.dtype == np.dtype(inputs), (name, inputs, compute)
            assert get_op(name).nan_replacement(np.dtype(inputs), np.dtype("float64")) is None
        assert get_op(name).nan_replacement(np.dtype("int32"), np.dtype("int64")) is None
    assert get_op("sum").nan_replacement(np.dtype("float64"), np.dtype("int64")) is None
    assert get_op("nanmax").nan_replacement(np.dtype("float64"), np.dtype("int64")) is None
    with np.errstate(invalid="ignore"):
        x = np.array([np.nan, 3.7, np.nan, -2.5, 9.1])
        for name, reference in (("nansum", np.nancumsum), ("nanprod", np.nancumprod)):
            np.testing.assert_array_equal(distscan.scan(x, name, dtype=np.int32, comm=SELF),
                                          reference(x, dtype=np.int32))
