"""Declared operators across ranks (``distscan.Operator``, distscan.ops.declared): a ufunc, a
combine of arrays, an integer operator and a structured state with lift and project (a running
mean), forwards and in reverse, against the sequential scan; ``check=True`` refuses a combine
that is not associative on every rank.

Written for any rank count (serially and under mpiexec, tests/run.sh).
"""

from __future__ import annotations

import numpy as np
import pytest

import distscan

from tests.support.data import random_counts, rank_part
from tests.support.declared import MEAN as _MEAN_STATE, mean_combine as _mean_combine, mean_lift as _mean_lift
from tests.support.ranks import all_ranks_ok
from tests.support.seeds import shared_rng

pytestmark = [pytest.mark.anyranks, pytest.mark.timeout(300)]


DECLARED = {
    "hypot": distscan.Operator("hypot", np.hypot, identity=0.0, cuda="hypot(a, b)", commutative=True),
    "absmax": distscan.Operator("absmax", lambda a, b: np.maximum(np.abs(a), np.abs(b)), identity=0.0,
                                cuda="fmax(fabs(a), fabs(b))"),
    "affine2": distscan.Operator("saturating add", lambda a, b: np.minimum(a + b, 1000), identity=0, kinds="i",
                                 cuda="(a + b < 1000) ? a + b : 1000", commutative=True),
    "mean": distscan.Operator("running mean", _mean_combine, identity=lambda dt: np.zeros((), _MEAN_STATE),
                              state=_MEAN_STATE, lift=_mean_lift, project=lambda s: s["m"]),
}


def _declared_reference(name, g):
    """The sequential scan: y[0] = x[0] (as ufunc.accumulate), y[i] = y[i-1] op x[i]."""
    if name == "mean":
        return np.cumsum(g) / np.arange(1, len(g) + 1)
    combine = {"hypot": np.hypot, "absmax": lambda a, b: max(abs(a), abs(b)),
               "affine2": lambda a, b: min(a + b, 1000)}[name]
    out = np.empty(len(g), np.result_type(g, float) if name != "affine2" else g.dtype)
    for i, v in enumerate(g):
        out[i] = v if i == 0 else combine(out[i - 1], v)
    return out


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("name", sorted(DECLARED))
def test_declared_operators_across_ranks(name, reverse, comm):
    rng = shared_rng(comm)
    counts = random_counts(rng, comm.size, 50)
    n = int(counts.sum())
    g = rng.integers(0, 30, n) if name == "affine2" else rng.standard_normal(n)
    h = g[::-1] if reverse else g
    ref = _declared_reference(name, h) if n else np.empty(0)
    ref = ref[::-1] if reverse else ref
    y = distscan.scan(rank_part(g, counts, comm), DECLARED[name], reverse=reverse, comm=comm)
    mine = rank_part(ref, counts, comm)
    all_ranks_ok(comm, lambda: np.testing.assert_allclose(y, mine, rtol=1e-12, atol=1e-12))


@pytest.mark.parametrize("name", sorted(DECLARED))
def test_declared_reduce_is_the_last_item_of_the_scan(name, comm):
    """reduce() of a declared operator: its total, projected (the identity's projection when the
    whole array is empty), the same on every rank. A declared ufunc reduces as NumPy's
    ``ufunc.reduce``, from the identity: np.hypot.reduce([-1.5]) is 1.5, where the scan's first
    item is -1.5 as it is (ufunc.accumulate)."""
    rng = shared_rng(comm)
    counts = random_counts(rng, comm.size, 50)
    n = int(counts.sum())
    g = rng.integers(0, 30, n) if name == "affine2" else rng.standard_normal(n)
    total = distscan.reduce(rank_part(g, counts, comm), DECLARED[name], comm=comm)
    if n:
        want = np.hypot.reduce(g) if name == "hypot" else _declared_reference(name, g)[-1]
        all_ranks_ok(comm, lambda: np.testing.assert_allclose(total, want, rtol=1e-12))
    if name == "hypot":  # one negative item, on the last rank: the case a random draw seldom makes
        one = np.array([-1.5]) if comm.rank == comm.size - 1 else np.empty(0)
        single = distscan.reduce(one, DECLARED[name], comm=comm)
        all_ranks_ok(comm, lambda: np.testing.assert_array_equal(single, np.hypot.reduce([-1.5])))
    ffill = distscan.Operator("ffill", lambda a, b: np.where(np.isnan(b), a, b), identity=np.nan, kinds="f")
    gaps = np.where(rng.random(n) < 0.7, np.nan, g.astype(float))
    last = gaps[~np.isnan(gaps)][-1] if np.any(~np.isnan(gaps)) else np.nan
    got = distscan.reduce(rank_part(gaps, counts, comm), ffill, comm=comm)
    all_ranks_ok(comm, lambda: np.testing.assert_array_equal(got, last))


def test_declared_check_refuses_a_non_associative_combine_on_every_rank(comm):
    avg = distscan.Operator("average", lambda a, b: (a + b) / 2, identity=0.0, check=True)
    x = np.random.default_rng(comm.rank).random(50)
    with pytest.raises((ValueError, distscan.DistScanError), match="not associative"):
        distscan.scan(x, avg, comm=comm)
    assert distscan.cumsum(x, comm=comm).shape == x.shape  # and the next call works
