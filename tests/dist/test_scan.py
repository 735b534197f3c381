"""Distributed scans against NumPy on the concatenated array: every operator and dtype with random row
counts (plenty of empty parts), more ranks than elements, trailing dimensions and flattening,
integers wrapping across ranks, floats identical run to run, ``reduce``, and a property test over
any split.

Written for any number of ranks: run serially (one rank) and under
``mpiexec -n K python -m pytest --with-mpi -m anyranks tests``.  Every rank builds the same global
array from a seed broadcast by rank 0 (fresh each run) and checks its own part; failures are made
collective so that all ranks fail (and hypothesis shrinks) together.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import distscan
from distscan import OPS

from tests.support.data import block_counts, local_part, random_array, random_counts
from tests.support.ranks import all_ranks_ok
from tests.support.reference import assert_scan_equal, reference_scan
from tests.support.seeds import shared_rng

pytestmark = [pytest.mark.anyranks, pytest.mark.manyranks, pytest.mark.timeout(120)]


ALL_DTYPES = ["bool", "int8", "uint8", "int16", "int32", "uint32", "int64", "uint64",
              "float16", "float32", "float64", "complex64", "complex128"]
STRATEGIES = ["reduce_then_scan", "scan_then_add"]


def _values_for(opname, rng, n, dtype, trailing=()):
    x = random_array(rng, n, dtype, trailing)
    if opname == "prod" and np.dtype(dtype).kind in "fc":
        # Keep products finite so the float comparison means something.
        x = (1 + 0.01 * x.real).astype(dtype) if np.dtype(dtype).kind == "f" else (1 + 0.01 * x).astype(dtype)
    return x


def _cases():
    for op in OPS.values():
        for dt in ALL_DTYPES:
            if np.dtype(dt).kind in op.kinds:
                yield op.name, dt


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("opname,dtype", list(_cases()))
def test_matches_numpy_on_the_concatenation(opname, dtype, strategy, comm):
    rng = shared_rng(comm)
    for exclusive in (False, True):
        counts = random_counts(rng, comm.size, 40, empty=0.3)
        g = _values_for(opname, rng, int(counts.sum()), dtype)
        initial = None if rng.random() < 0.5 else g[:1].sum() if opname != "prod" else 1
        expected = local_part(reference_scan(g, opname, exclusive=exclusive, initial=initial), counts, comm.rank)
        got = distscan.scan(local_part(g, counts, comm.rank).copy(), opname, exclusive=exclusive,
                            initial=initial, comm=comm, strategy=strategy)
        all_ranks_ok(comm, lambda: assert_scan_equal(got, expected))


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_more_ranks_than_elements(strategy, comm):
    rng = shared_rng(comm)
    for n in range(0, comm.size + 2):
        g = random_array(rng, n, "int32")
        counts = block_counts(n, comm.size)
        for exclusive in (False, True):
            got = distscan.cumsum(local_part(g, counts, comm.rank), exclusive=exclusive, comm=comm,
                                  strategy=strategy, hierarchy="node", node_size=2)
            expected = local_part(reference_scan(g, "sum", exclusive=exclusive), counts, comm.rank)
            all_ranks_ok(comm, lambda: assert_scan_equal(got, expected))


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_trailing_dimensions_and_flattening(strategy, comm):
    rng = shared_rng(comm)
    counts = random_counts(rng, comm.size, 9, empty=0.3)
    g = random_array(rng, int(counts.sum()), "int16", (3, 2))
    part = local_part(g, counts, comm.rank)
    got = distscan.cumsum(part, comm=comm, strategy=strategy)
    all_ranks_ok(comm, lambda: assert_scan_equal(got, np.cumsum(g, axis=0)[counts[:comm.rank].sum():][:len(part)]))
    flat = distscan.cummax(part, axis=None, comm=comm, strategy=strategy)
    lo = int(counts[:comm.rank].sum()) * 6
    all_ranks_ok(comm, lambda: assert_scan_equal(flat, np.maximum.accumulate(g.ravel())[lo:lo + part.size]))
    local_axis = distscan.cumsum(part, axis=2, comm=comm, strategy=strategy)
    all_ranks_ok(comm, lambda: assert_scan_equal(local_axis, np.cumsum(part, axis=2)))


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("method", ["flat", "node"])
def test_integer_overflow_wraps_across_ranks_like_numpy(strategy, method, comm):
    """Carries that overflow wrap exactly as NumPy's do (they travel as unsigned bits)."""
    rng = shared_rng(comm)
    for dtype, opname in [("int64", "sum"), ("int64", "prod"), ("int32", "prod"), ("uint64", "sum")]:
        info = np.iinfo(dtype)
        counts = block_counts(5 * comm.size + 3, comm.size)
        g = rng.integers(info.max // 4, info.max, int(sum(counts)), dtype=dtype, endpoint=True)
        kwargs = {"dtype": dtype} if dtype == "int32" else {}
        with np.errstate(over="ignore"):
            expected = local_part(reference_scan(g, opname, **kwargs), counts, comm.rank)
            got = distscan.scan(local_part(g, counts, comm.rank), opname, comm=comm, strategy=strategy,
                                hierarchy=method, node_size=2, **kwargs)
            total = distscan.reduce(local_part(g, counts, comm.rank), opname, comm=comm, **kwargs)
        all_ranks_ok(comm, lambda: assert_scan_equal(got, expected))
        with np.errstate(over="ignore"):
            assert total == getattr(np, opname)(g, dtype=expected.dtype)


def test_floats_are_run_to_run_identical(comm):
    rng = shared_rng(comm)
    counts = block_counts(10_007, comm.size)
    g = rng.standard_normal(10_007).astype(np.float32)
    part = local_part(g, counts, comm.rank)
    first = distscan.cumsum(part, comm=comm)
    for strategy in STRATEGIES:
        for _ in range(3):
            again = distscan.cumsum(part, comm=comm)
            all_ranks_ok(comm, lambda: np.testing.assert_array_equal(first.view(np.int32), again.view(np.int32)))
        assert_scan_equal(distscan.cumsum(part, comm=comm, strategy=strategy),
                          local_part(np.cumsum(g.astype(np.float64)).astype(np.float32), counts, comm.rank),
                          float_rtol=1e-4)


def test_reduce_returns_the_global_total_everywhere(comm):
    rng = shared_rng(comm)
    counts = random_counts(rng, comm.size, 50, empty=0.3)
    g = random_array(rng, int(counts.sum()), "int32", (2,))
    part = local_part(g, counts, comm.rank)
    np.testing.assert_array_equal(distscan.reduce(part, comm=comm), g.sum(axis=0))
    if g.shape[0]:
        np.testing.assert_array_equal(distscan.reduce(part, "max", comm=comm), g.max(axis=0))
    assert distscan.reduce(part, comm=comm, axis=None) == g.sum()


# -- property tests -------------------------------------------------------------------------

_op_dtype = st.sampled_from(list(_cases()))


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(case=_op_dtype, exclusive=st.booleans(), strategy=st.sampled_from(STRATEGIES),
       sizes=st.lists(st.integers(0, 12), min_size=1, max_size=16), seed=st.integers(0, 2**32 - 1),
       with_initial=st.booleans())
def test_property_any_split_any_operator(case, exclusive, strategy, sizes, seed, with_initial):
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    opname, dtype = case
    rng = np.random.default_rng(seed)  # same draw on every rank (derandomized hypothesis)
    counts = np.resize(np.array(sizes), comm.size)
    g = _values_for(opname, rng, int(counts.sum()), dtype)
    initial = (np.ones((), g.dtype)[()] if opname != "max" else None) if with_initial else None
    expected = local_part(reference_scan(g, opname, exclusive=exclusive, initial=initial), counts, comm.rank)
    got = distscan.scan(local_part(g, counts, comm.rank), opname, exclusive=exclusive, initial=initial,
                        comm=comm, strategy=strategy)
    all_ranks_ok(comm, lambda: assert_scan_equal(got, expected))
