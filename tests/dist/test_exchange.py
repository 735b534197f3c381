"""Rank offsets (distscan.dist.exchange): the flat and the node-then-cluster methods give the offsets of
the ranks before, for every node size; carries fold in rank order, the same bits as the pairwise fold;
the recursive doubling (from DOUBLING_RANKS ranks) gives what the gather gives, for plain, segmented and
recurrence carries in both directions, and agrees a failure on one rank.

Runs serially and under ``mpiexec -n K python -m pytest --with-mpi``.
"""

import numpy as np
import pytest

import distscan
import distscan._carry
from distscan import OPS, _kinds
from distscan.dist import exchange as hierarchy

from tests.support.data import random_array, random_counts, rank_part
from tests.support.ranks import all_ranks_ok
from tests.support.reference import assert_scan_equal
from tests.support.seeds import shared_rng

pytestmark = [pytest.mark.anyranks, pytest.mark.timeout(120)]


@pytest.mark.manyranks
@pytest.mark.parametrize("method", ["flat", "node"])
@pytest.mark.parametrize("node_size", [1, 2, 3])
def test_hierarchy_methods_give_the_same_offsets(method, node_size, comm):
    rng = shared_rng(comm)
    for opname, dtype in [("sum", "int64"), ("max", "float64"), ("bitwise_xor", "uint8"), ("prod", "int32"),
                          ("logical_or", "bool"), ("sum", "float16"), ("min", "float16")]:
        op = OPS[opname]
        acc = distscan._dtypes.scan_types(op, np.dtype(dtype)).acc
        totals = random_array(rng, comm.size, acc, (3,))
        if acc.kind == "f":
            totals[rng.integers(0, comm.size)] = np.nan if opname == "max" else totals[0]
        combine = distscan._carry.Carries(op, acc).combine
        offset = hierarchy.exclusive_prefix(totals[comm.rank].copy(), combine, comm, method, node_size=node_size)

        def check():
            if comm.rank == 0:
                assert offset is None
            else:
                expected = op.ufunc.reduce(totals[:comm.rank], axis=0, dtype=acc)
                assert offset.dtype == acc
                assert_scan_equal(offset[None], np.asarray(expected, acc)[None])
        all_ranks_ok(comm, check)


def test_offsets_fold_carries_in_rank_order():
    # NumPy sums 8 or more floats pairwise; the carries of the ranks before are folded left to
    # right (Carries.fold, one accumulate), the same bits as the pairwise fold of two at a time
    # (hierarchy._fold, the node path's) at any rank count.
    from distscan._carry import Carries
    from distscan.dist.exchange import python_fold
    from distscan.ops import OPS

    carries = np.array([1.0, 1e16, -1e16, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]).reshape(-1, 1)
    fold = Carries(OPS["sum"], np.float64).fold
    by_two = python_fold(lambda a, b: np.add(a, b))
    assert np.add.reduce(carries)[0] != by_two(carries)[0]  # the case that tells them apart
    for k in range(1, len(carries) + 1):
        assert fold(carries[:k]) == by_two(carries[:k])
    assert fold(carries[:0]) is None
    assert Carries(OPS["max"], np.int64).fold(np.array([[3], [9], [2]], np.int64))[0] == 9


# -- the exchange at any scale: recursive doubling gives what the gather gives ---------------------

@pytest.mark.manyranks
@pytest.mark.parametrize("reverse", [False, True])
def test_recursive_doubling_exchange_gives_the_same_results(reverse, comm, monkeypatch):
    rng = shared_rng(comm)
    counts = random_counts(rng, comm.size)
    n = int(counts.sum())
    g = rng.integers(-9, 9, (n, 6))  # 48-byte carries: the second pass of the doubling
    flags = rng.random(n) < 0.2
    a = rng.choice([-1, 1], n)  # an integer recurrence: exact whatever the association
    expected = [distscan.cumsum(rank_part(g, counts, comm), reverse=reverse, comm=comm),
                distscan.cumsum(rank_part(g[:, 0], counts, comm), segments=rank_part(flags, counts, comm),
                                reverse=reverse, comm=comm),
                distscan.linear_recurrence(rank_part(a, counts, comm), rank_part(g[:, 0], counts, comm),
                                           reverse=reverse, comm=comm),
                distscan.linear_recurrence(0.5, rank_part(g[:, 0] * 1.0, counts, comm), reverse=reverse, comm=comm)]
    monkeypatch.setattr(hierarchy, "DOUBLING_RANKS", 1)  # on every rank alike
    _kinds.PLANS.clear()
    _kinds.KINDS.clear()
    try:
        got = [distscan.cumsum(rank_part(g, counts, comm), reverse=reverse, comm=comm),
               distscan.cumsum(rank_part(g[:, 0], counts, comm), segments=rank_part(flags, counts, comm),
                               reverse=reverse, comm=comm),
               distscan.linear_recurrence(rank_part(a, counts, comm), rank_part(g[:, 0], counts, comm),
                                          reverse=reverse, comm=comm),
               distscan.linear_recurrence(0.5, rank_part(g[:, 0] * 1.0, counts, comm), reverse=reverse, comm=comm)]
        for e, r in zip(expected[:3], got[:3]):  # integers: bit for bit
            all_ranks_ok(comm, lambda: np.testing.assert_array_equal(r, e))
        # floats: the doubling associates the ranks' maps as a tree, the gather folds them in order
        all_ranks_ok(comm, lambda: np.testing.assert_allclose(got[3], expected[3], rtol=1e-14, atol=1e-13))
        # a failure on one rank is agreed through the doubling too: the first rank, and the last
        # (at 3 ranks the middle one's partner in the second round does not exist: it hears of the
        # last rank's failure only through the broadcast that completes the totals)
        for failing in (0, comm.size - 1):
            bad = np.arange(3.0) if comm.rank != failing else "not a number"
            with pytest.raises((TypeError, ValueError, distscan.DistScanError)):
                distscan.cumsum(bad, comm=comm)
    finally:
        _kinds.PLANS.clear()
        _kinds.KINDS.clear()


# One rank's mistake in a reverse scan (or a direction that differs): (the call, a text of the error)
REVERSE_MISTAKES = {
    "out of another shape": (lambda x, bad, comm: distscan.cumsum(x, reverse=True, comm=comm,
                                                                  out=np.empty(5, x.dtype) if bad else None),
                             "out"),
    "flags of another length": (lambda x, bad, comm: distscan.cumsum(
        x, reverse=True, segments=np.zeros(len(x) + bad, bool), comm=comm), "segments"),
    "a misspelt keyword": (lambda x, bad, comm: distscan.cumsum(x, reverse=True, comm=comm,
                                                                **({"revers": True} if bad else {})), "revers"),
    "coefficients of another shape": (lambda x, bad, comm: distscan.linear_recurrence(
        np.ones(len(x) + bad), x, reverse=True, comm=comm), ""),
    "reverse= differs": (lambda x, bad, comm: distscan.cumsum(x, reverse=not bad, comm=comm), "reverse"),
}


@pytest.mark.manyranks
@pytest.mark.parametrize("mistake", sorted(REVERSE_MISTAKES))
def test_recursive_doubling_agrees_one_ranks_mistake_in_a_reverse_scan(mistake, comm, monkeypatch):
    """A reverse scan that fails on one rank (a rank that failed before it read ``reverse=`` joins
    the exchange as a forward one: exchange.fail_exchange), or whose ``reverse=`` differs by rank,
    raises on every rank through the doubling.  At a rank count that is not a power of two the
    mirrored pairs of a reverse scan are other pairs than the forward ones, and every rank waited
    forever (2026-11-27, 3 ranks, DISTSCAN_DOUBLING_RANKS=2); now the first pass pairs in rank
    order.  The calls after it, reversed and forwards, are right."""
    if mistake == "reverse= differs" and comm.size == 1:
        pytest.skip("one rank: its direction differs from no other")
    call, text = REVERSE_MISTAKES[mistake]
    x = np.arange(1, 5, dtype=np.int64) + 10 * comm.rank
    whole = np.concatenate([np.arange(1, 5, dtype=np.int64) + 10 * r for r in range(comm.size)])
    mine = slice(4 * comm.rank, 4 * comm.rank + 4)
    monkeypatch.setattr(hierarchy, "DOUBLING_RANKS", 1)  # on every rank alike
    _kinds.PLANS.clear()
    _kinds.KINDS.clear()
    try:
        for bad_rank in sorted({0, comm.size // 2, comm.size - 1}):
            distscan.cumsum(x, reverse=True, comm=comm)  # a warm reverse plan on every rank
            with pytest.raises((TypeError, ValueError, distscan.DistScanError)) as info:
                call(x, int(comm.rank == bad_rank), comm)
            messages = comm.allgather(f"{type(info.value).__name__}: {info.value}")
            all_ranks_ok(comm, lambda: (len(set(messages)) == 1 and text in messages[0]) or
                         pytest.fail(f"{mistake}, rank {bad_rank}: {messages}"))
            again = [distscan.cumsum(x, reverse=True, comm=comm), distscan.cumsum(x, comm=comm),
                     distscan.cumsum(x, reverse=True, segments=x % 3 == 0, comm=comm)]
            flags = whole % 3 == 0
            starts = np.cumsum(flags)  # each element's segment (a flag starts one, in array order)
            segmented = np.array([whole[i:][starts[i:] == starts[i]].sum() for i in range(len(whole))])
            want = [np.cumsum(whole[::-1])[::-1][mine], np.cumsum(whole)[mine], segmented[mine]]
            all_ranks_ok(comm, lambda: [np.testing.assert_array_equal(g, w) for g, w in zip(again, want)])
    finally:
        _kinds.PLANS.clear()
        _kinds.KINDS.clear()


def test_the_status_heads_view_is_every_records_first_bytes(comm):
    """``Exchange.heads`` (one 16-byte item a rank, what the common call compares with
    ``agreed_heads``) holds exactly the first STATUS_HEAD bytes of every gathered record, in rank
    order, whatever the records hold after them; and it stays a view: the next gather's records
    show through it."""
    from distscan.dist.exchange import STATUS_HEAD, Exchange

    like = np.zeros(2, np.int64)
    ex = Exchange(comm, "flat", 1, like, lambda stack: stack.sum(axis=0), np.add)
    rng = np.random.default_rng(7)
    for _ in range(3):
        ex.recs[...] = rng.integers(0, 256, ex.recs.shape, dtype=np.uint8)
        assert ex.heads.shape == (comm.size,)
        assert ex.heads.tobytes() == ex.recs[:, :STATUS_HEAD].tobytes()
    ex.recs[:, :STATUS_HEAD] = np.frombuffer(ex.agreed_heads(12345), np.uint8).reshape(comm.size, STATUS_HEAD)
    assert ex.heads.tobytes() == ex.agreed_heads(12345)
    ex.sts[comm.size - 1, 0] = 4  # a flag on the last rank's record only
    assert ex.heads.tobytes() != ex.agreed_heads(12345)


@pytest.mark.manyranks
@pytest.mark.parametrize("reverse", [False, True])
def test_agree_after_on_every_rank_or_some_gives_the_same_exchange(reverse, comm):
    """The common call's shortcut (every rank's flags and fingerprint alike) also takes calls where
    every rank asks to agree after its finish (AGREE_AFTER: each GPU call): the Status then says
    ``agree_after`` on every rank, with the offsets of the full read.  Flags that differ between
    ranks (AGREE_AFTER on one rank only, an EMPTY rank beside them) take the full read, and a call
    of each kind follows each other kind on the same exchange."""
    from distscan.dist.exchange import AGREE_AFTER, EMPTY, Exchange

    like = np.zeros(1, np.int64)
    ex = Exchange(comm, "flat", 1, like, lambda stack: np.add.accumulate(stack, axis=0)[-1], np.add,
                  reverse=reverse)
    size, rank = comm.size, comm.rank
    order = list(range(size))[::-1] if reverse else list(range(size))
    place = order.index(rank)
    patterns = [[0] * size, [AGREE_AFTER] * size, [AGREE_AFTER if r == size - 1 else 0 for r in range(size)],
                [EMPTY | AGREE_AFTER if r == 0 else AGREE_AFTER for r in range(size)], [AGREE_AFTER] * size,
                [0] * size]
    for flags in patterns + patterns[::-1]:
        carry = None if flags[rank] & EMPTY else np.array([10 * rank + 1], np.int64)
        status, offset, total = ex(flags[rank], 777, 5, carry, want_total=True)
        held = [r for r in order if not flags[r] & EMPTY]
        before = [10 * r + 1 for r in order[:place] if r in held]
        assert not status.failed and status.agreed
        assert status.agree_after == any(f & AGREE_AFTER for f in flags)
        assert (offset is None) if not before else int(offset[0]) == sum(before)
        assert (total is None) if not held else int(total[0]) == sum(10 * r + 1 for r in held)
