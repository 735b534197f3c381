"""Float products across ranks: a zero absorbs what follows as in NumPy's sequential order, at any split
(balanced, all on the last rank, random with empty parts, a small first rank beside an empty one),
through the chunked carries of the CPU backend, with infinities and NaN, and after an initial zero.

Runs serially and under ``mpiexec -n K python -m pytest --with-mpi``.  Random data comes from a seed
that rank 0 draws and prints; every failure is made collective.
"""

import numpy as np
import pytest

import distscan

from tests.support.data import local_part
from tests.support.ranks import all_ranks_ok
from tests.support.reference import assert_same_floats, reference_scan
from tests.support.seeds import shared_rng

pytestmark = [pytest.mark.anyranks, pytest.mark.timeout(120)]


def splits(comm, n, rng):
    """Row counts for every rank: balanced, all on the last rank, random with empty parts, and
    the issue's [2, 0, 8] pattern (first rank small, an empty rank, the rest on the others)."""
    size = comm.size
    out = [np.diff(np.linspace(0, n, size + 1).astype(int))]
    last = np.zeros(size, int)
    last[-1] = n
    out.append(last)
    cuts = np.sort(rng.integers(0, n + 1, size - 1))
    out.append(np.diff(np.concatenate([[0], cuts, [n]])))
    if size >= 3:
        c = np.zeros(size, int)
        c[0] = min(2, n)
        rest = n - c[0]
        c[2:] = np.diff(np.linspace(0, rest, size - 1).astype(int))
        out.append(c)
    return out


# --- 2. products: a zero absorbs, as in sequential order --------------------------------------

@pytest.mark.manyranks
@pytest.mark.parametrize("strategy", ["reduce_then_scan", "scan_then_add"])
def test_cumprod_of_arange_is_all_zeros_at_any_split(strategy, comm):
    rng = shared_rng(comm)
    g = np.arange(1320.).reshape(10, 132)
    for counts in splits(comm, 10, rng):
        got = distscan.cumprod(local_part(g, counts, comm.rank), comm=comm, strategy=strategy)
        all_ranks_ok(comm, lambda: assert_same_floats(got, local_part(np.cumprod(g, axis=0), counts, comm.rank)))
    flat = np.arange(1320.)
    for counts in splits(comm, flat.size, rng):
        got = distscan.cumprod(local_part(flat, counts, comm.rank), comm=comm, strategy=strategy)
        all_ranks_ok(comm, lambda: assert_same_floats(got, local_part(np.cumprod(flat), counts, comm.rank)))
        total = distscan.reduce(local_part(flat, counts, comm.rank), "prod", comm=comm)
        all_ranks_ok(comm, lambda: assert_same_floats(np.array(total), np.array(np.prod(flat))))


def test_chunked_carries_absorb_zeros(comm):
    # dtype= and initial= take the chunked path of the CPU backend (carry folded per chunk).
    x = np.where(np.arange(300000) == 0, 0., 2.).astype(np.float32)
    got = distscan.cumprod(x, dtype=np.float64, comm=comm.Split(comm.rank, 0))
    assert_same_floats(got, np.cumprod(x, dtype=np.float64))
    assert not np.isnan(got).any()
    got = distscan.cumprod(np.full(300000, 2.0), initial=0.0, comm=comm.Split(comm.rank, 0))
    assert (got == 0).all()


@pytest.mark.manyranks
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("exclusive", [False, True])
def test_products_with_zeros_infs_and_nans_match_numpy(dtype, exclusive, comm):
    rng = shared_rng(comm)
    dt = np.dtype(dtype)
    big = float(np.finfo(dt).max) ** 0.5 * 4  # two of these overflow
    for _ in range(6):
        n = int(rng.integers(0, 200))
        # Magnitudes never below 1 (but zeros): overflow is then the same in any order.
        values = np.array([0.0, -0.0, big, -big, 2.0, -3.0, 1.0, np.inf, -np.inf, np.nan])
        p = np.array([4, 1, 20, 5, 20, 10, 20, 0.5, 0.3, 0.2])
        if dt.kind == "c":
            # Complex infinities give NaN parts that depend on the grouping, in NumPy too
            # ((inf+0j)*2 is inf+nanj): complex cases keep products finite, or start at 0.
            p[[2, 3, 7, 8, 9]] = 0
        g = rng.choice(values, n, p=p / p.sum()).astype(dt)
        if dt.kind == "c":
            g = g * np.where(rng.random(n) < 0.5, 1, 1j).astype(dt)
            if rng.random() < 0.5 and n:
                g[0] = 0
                g[1:] = np.where(rng.random(n - 1) < 0.5, big, g[1:])  # a zero, then overflow
        ref = reference_scan(g, "prod", exclusive=exclusive)  # float16 in float32, as distscan
        for counts in splits(comm, n, rng):
            with np.errstate(all="ignore"):
                got = distscan.cumprod(local_part(g, counts, comm.rank), exclusive=exclusive, comm=comm)
            all_ranks_ok(comm, lambda: assert_same_floats(got, local_part(ref, counts, comm.rank)))


@pytest.mark.manyranks
def test_an_initial_zero_absorbs_but_an_inf_after_it_does_not(comm):
    g = np.array([1e300, 1e300, np.inf, 5.0])
    counts = np.diff(np.linspace(0, g.size, comm.size + 1).astype(int))
    with np.errstate(all="ignore"):
        got = distscan.cumprod(local_part(g, counts, comm.rank), initial=0.0, comm=comm)
    expected = np.array([0.0, 0.0, np.nan, np.nan])
    all_ranks_ok(comm, lambda: assert_same_floats(got, local_part(expected, counts, comm.rank)))
