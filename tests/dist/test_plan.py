"""The distributed scan plan (distscan.dist.plan, distscan._call): how many collectives a call makes,
plan reuse, the lean path, wide carries, every algorithm at any rank count, and that a rank that
fails before it has a plan still meets the others' exchange.

Runs serially and under ``mpiexec -n K python -m pytest --with-mpi``.
"""

import numpy as np
import pytest

import distscan
from distscan._kinds import KINDS, PLANS
from distscan.backends import cpu

from tests.support.ranks import all_ranks_ok
from tests.support.reference import reference_scan
from tests.support.seeds import shared_rng

pytestmark = [pytest.mark.anyranks, pytest.mark.timeout(120)]


COLLECTIVES = {"Allgather", "Allreduce", "Exscan", "Scan", "Bcast", "Barrier", "Reduce", "Gather", "Alltoall",
               "allgather", "allreduce", "exscan", "bcast", "gather", "Split", "Split_type", "Allgatherv"}


class Counting:
    """A communicator that counts the collectives called through it."""

    def __init__(self, comm):
        self._comm, self.calls = comm, []

    def __getattr__(self, name):
        attr = getattr(self._comm, name)
        if name in COLLECTIVES and callable(attr):
            def counted(*args, **kwargs):
                self.calls.append(name)
                return attr(*args, **kwargs)
            return counted
        return attr


def _count(comm, fn):
    comm.calls.clear()
    fn()
    return list(comm.calls)


@pytest.mark.manyranks
@pytest.mark.mpi(min_size=2)
def test_a_small_call_makes_at_most_two_collectives(comm):
    c = Counting(comm)
    x = np.arange(1000, dtype=np.int64) + comm.rank
    distscan.cumsum(x, comm=c)  # first call of its kind: builds the plan (and the node split)
    lean = _count(c, lambda: distscan.cumsum(x, comm=c))
    assert lean == ["Allgather"], lean
    for call in (lambda: distscan.cumsum(x.reshape(-1, 4), comm=c),          # 2-D
                 lambda: distscan.cumsum(x, out=np.empty_like(x), comm=c),   # out=
                 lambda: distscan.cumsum(x, exclusive=True, comm=c),
                 lambda: distscan.cummax(x.astype(np.float32), comm=c),
                 lambda: distscan.cumprod(x.astype(np.float64) / 500, comm=c),
                 lambda: distscan.reduce(x, comm=c)):
        call()
        made = _count(c, call)
        assert len(made) <= 2, made


@pytest.mark.manyranks
@pytest.mark.mpi(min_size=2)
def test_lean_calls_give_the_general_answer(comm):
    rng = shared_rng(comm)
    for dtype in ("int64", "int32", "uint8", "float64", "bool"):
        for n in (0, 1, 7, 1000):
            g = rng.integers(0, 3, (comm.size * n,)).astype(dtype)
            part = np.ascontiguousarray(g[comm.rank * n:(comm.rank + 1) * n])
            for _ in range(2):  # the second call takes the lean path
                for opname in ("sum", "max", "bitwise_or" if dtype != "float64" else "min"):
                    got = distscan.scan(part, opname, comm=comm)
                    ref = distscan.scan(part, opname, comm=comm, out=np.empty(n, got.dtype))  # general path
                    all_ranks_ok(comm, lambda: np.testing.assert_array_equal(got, ref))


@pytest.mark.parametrize("op", ["sum", "max", "gcd", "logical_xor"])
@pytest.mark.parametrize("exclusive", [False, True])
def test_one_rank_calls_run_the_plans_lean_case(comm, op, exclusive, monkeypatch):
    """Calls on one rank of a remembered kind run the plan's lean case (``ScanPlan.one_rank``),
    made once and shared by the kind's calls with and without ``out=``; they give what the plan's
    ``run`` gives (with ``timings=``), NumPy's first items of gcd (signs kept) included, return
    the caller's ``out`` itself, and never write a result handed out before."""
    made = []
    real = cpu.lean_scanner
    monkeypatch.setattr(cpu, "lean_scanner", lambda *args: made.append(args) or real(*args))
    KINDS.clear()
    PLANS.clear()
    one = comm.Split(comm.rank)  # a communicator of one rank, on every rank
    rng = np.random.default_rng(11 + comm.rank)
    x = rng.integers(-60, 60, 1001)
    x[0] = -abs(x[0]) - 1
    kw = {"exclusive": exclusive, "comm": one}
    results = [distscan.scan(x, op, **kw) for _ in range(4)]  # the first the long way
    out = np.full(x.shape, 7, results[0].dtype)
    got = distscan.scan(x, op, out=out, **kw)
    timed = distscan.scan(x, op, timings={}, **kw)  # ScanPlan.run, not the kind's straight case
    assert len(made) == 1  # one plan, its lean case made once
    ref = reference_scan(x, op, exclusive=exclusive)
    for r in results + [got, timed]:
        np.testing.assert_array_equal(r, ref)
    assert got is out
    assert len({id(r) for r in results}) == 4  # every call its own result
    one.Free()


@pytest.mark.mpi(min_size=2)
def test_plans_are_reused(comm):
    x = np.arange(10)
    distscan.cumsum(x, comm=comm)
    n = len(PLANS)
    for _ in range(5):
        distscan.cumsum(x, comm=comm)
        distscan.cumsum(x.reshape(5, 2), comm=comm)
    assert len(PLANS) <= n + 1


@pytest.mark.mpi(min_size=2)
def test_failures_and_mismatches_after_the_lean_path_is_warm(comm):
    x = np.arange(100, dtype=np.int64)
    distscan.cumsum(x, comm=comm)
    distscan.cumsum(x, comm=comm)
    # A rank with another dtype: every rank raises the same named error.
    part = x.astype(np.float64) if comm.rank == comm.size - 1 else x
    with pytest.raises(ValueError, match="dtype differs across ranks"):
        distscan.cumsum(part, comm=comm)
    # A rank that fails before it has a plan (a bad operator) meets the others' exchange.
    with pytest.raises(ValueError, match="unknown operator"):
        distscan.scan(x, "nope" if comm.rank == 0 else "sum", comm=comm)
    with pytest.raises(ValueError, match="unknown operator"):
        distscan.reduce(x, "nope" if comm.rank == 0 else "sum", comm=comm)
    # The lean path still works afterwards.
    np.testing.assert_array_equal(distscan.cumsum(x, comm=comm), np.cumsum(x) + comm.rank * x.sum())


@pytest.mark.manyranks
@pytest.mark.mpi(min_size=2)
def test_wide_carries_take_the_second_gather(comm):
    # 300 int64 columns do not fit a record inline: sizes agree first, then carries travel whole.
    x = np.ones((3, 300), np.int64) * (comm.rank + 1)
    got = distscan.cumsum(x, comm=comm)
    before = sum(3 * (r + 1) for r in range(comm.rank))
    all_ranks_ok(comm, lambda: np.testing.assert_array_equal(got[:, 0], before + np.arange(1, 4) * (comm.rank + 1)))
    with pytest.raises(ValueError, match="trailing shape differs"):
        distscan.cumsum(np.ones((2, 300 + comm.rank)), comm=comm)


@pytest.mark.manyranks
def test_every_algorithm_at_any_rank_count(comm):
    """`algorithm=` names through the distributed call, exact for integers, at any split."""
    rng = shared_rng(comm)
    g = rng.integers(-50, 50, 5000)
    cuts = np.sort(rng.integers(0, g.size + 1, comm.size - 1))
    bounds = np.concatenate([[0], cuts, [g.size]])
    part = g[bounds[comm.rank]:bounds[comm.rank + 1]]
    for name in distscan.ALGORITHMS:
        for opname, ufunc in (("sum", np.add), ("max", np.maximum), ("bitwise_xor", np.bitwise_xor)):
            for exclusive in (False, True):
                got = distscan.scan(part, opname, exclusive=exclusive, algorithm=name, comm=comm)
                ref = reference_scan(g, opname, exclusive=exclusive)
                all_ranks_ok(comm, lambda: np.testing.assert_array_equal(
                    got, ref[bounds[comm.rank]:bounds[comm.rank + 1]], err_msg=f"{name} {opname} {exclusive}"))
    with pytest.raises(ValueError, match="unknown algorithm 'nope'; choose one of auto, kogge_stone"):
        distscan.cumsum(part, algorithm="nope", comm=comm)
