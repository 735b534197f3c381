"""The agreement after the finish (distscan.dist.plan): made exactly when some rank's finish may
fail, on every rank, and never skipped where a rank's finish can fail.

The finishes that cannot fail take one collective (the exchange): the lean integer call
(``ScanPlan._scan_then_add``), a CPU state scan by its prepared loops
(distscan.backends.cpu_states.Loops), NumPy's accumulate of a float part when nothing turns a
floating-point flag into an exception.  What a rank alone knows and that could make its finish
fail travels in the exchange (``np.errstate``, a warnings filter, an ``out=`` of another dtype, a
read-only ``out=``), and every rank then agrees after the finish (or refuses before it).  A failure
before the exchange (the loops' compile, the carry) is agreed in the exchange.

Runs serially and under ``mpiexec -n K python -m pytest --with-mpi``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import distscan
from distscan import _kinds
from distscan.backends import cpu, cpu_states

from tests.dist.test_plan import Counting, _count
from tests.support.data import random_counts, rank_part
from tests.support.ranks import all_ranks_ok, raises_everywhere
from tests.support.reference import reference_scan, segmented_reference
from tests.support.seeds import shared_rng

pytestmark = [pytest.mark.anyranks, pytest.mark.timeout(120)]


def _state_calls(comm, n=50):
    rng = np.random.default_rng(comm.rank)
    x, b = rng.integers(-9, 9, n), rng.standard_normal(n)
    f, a = rng.random(n) < 0.1, rng.uniform(0.5, 1, n)
    y, yf = np.empty_like(x), np.empty_like(b)
    return {"segmented": lambda: distscan.cumsum(x, segments=f, out=y, comm=comm),
            "segmented reverse max": lambda: distscan.cummax(x, segments=f, reverse=True, comm=comm),
            "recurrence": lambda: distscan.linear_recurrence(a, b, out=yf, comm=comm),
            "recurrence, segments, scalar a": lambda: distscan.linear_recurrence(0.5, b, segments=f, comm=comm),
            "compensated": lambda: distscan.cumsum(b, compensated=True, comm=comm),
            "segmented, Part's route (strided)": lambda: distscan.cumsum(x[::2], segments=f[::2], comm=comm)}


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("raising", ["no", "errstate", "warnings"])
def test_state_scans_make_one_collective(raising, comm):
    """A warm CPU state scan makes the exchange alone, even where NumPy is told to raise (its loops
    set no flag and warn of nothing)."""
    c = Counting(comm)
    for name, call in _state_calls(c).items():
        call()
        with np.errstate(all="raise" if raising == "errstate" else "warn"), warnings.catch_warnings():
            if raising == "warnings":
                warnings.simplefilter("error")
            made = _count(c, call)
        assert made == ["Allgather"], (name, made)


@pytest.mark.mpi(min_size=2)
def test_integer_sums_make_one_collective_whatever_numpy_is_told(comm):
    c = Counting(comm)
    x = np.arange(100, dtype=np.int64) + comm.rank
    for strategy in ("auto", "reduce_then_scan", "scan_then_add"):
        distscan.cumsum(x, comm=c, strategy=strategy)
        with np.errstate(all="raise"), warnings.catch_warnings():
            warnings.simplefilter("error")
            made = _count(c, lambda: distscan.cumsum(x, comm=c, strategy=strategy))
        assert made == ["Allgather"], (strategy, made)


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("dtype", ["int64", "uint8", "float64", "float32"])
def test_plain_reverse_scans_make_one_collective_unless_numpy_may_raise(dtype, comm):
    """A warm plain reverse scan on the CPU is NumPy's accumulate over mirrored views (the forward
    scan's code), so it makes the exchange alone; where NumPy is told to raise, a float one's record
    asks every rank to agree after the finish (integers set no flag).  The results stay NumPy's on
    the reversed concatenation, calls in a row."""
    c = Counting(comm)
    rng = shared_rng(comm)
    counts = rng.integers(1, 41, comm.size)  # no empty part (an empty part takes the general route)
    g = rng.integers(0, 50, int(counts.sum())).astype(dtype)
    x = rank_part(g, counts, comm)
    floats = np.dtype(dtype).kind == "f"
    for op, exclusive in (("sum", False), ("max", False), ("sum", True)):
        ref = reference_scan(g[::-1], op, exclusive=exclusive)[::-1]
        lo = int(counts[:comm.rank].sum())
        want = ref[lo:lo + counts[comm.rank]]
        call = lambda: distscan.scan(x, op, reverse=True, exclusive=exclusive, comm=c)  # noqa: E731
        call()  # the kind is warm
        for _ in range(2):
            y = []
            made = _count(c, lambda: y.append(call()))
            assert made == ["Allgather"], (op, exclusive, made)
            all_ranks_ok(comm, lambda: np.testing.assert_array_equal(y[0], want, err_msg=f"{op} {exclusive}"))
            with np.errstate(all="raise"):
                made = _count(c, call)
            assert made == (["Allgather", "Allreduce"] if floats else ["Allgather"]), (op, exclusive, made)


@pytest.mark.mpi(min_size=2)
def test_a_narrower_out_on_one_rank_makes_every_rank_agree(comm):
    """One rank's ``out=`` of a narrower dtype (a cast after the exchange, which may fail): its record
    asks for the agreement, and every rank makes it, whichever route its own call took."""
    c = Counting(comm)
    rng = np.random.default_rng(comm.rank)
    b, a = rng.standard_normal(40), rng.uniform(0.5, 1, 40)
    out = np.empty(40, np.float32) if comm.rank == comm.size - 1 else None
    distscan.linear_recurrence(a, b, out=out, comm=c)  # the plans' first calls (they resolve the method)
    for _ in range(2):
        made = _count(c, lambda: distscan.linear_recurrence(a, b, out=out, comm=c))
        assert made == ["Allgather", "Allreduce"], made


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("how", ["warnings", "errstate call"])
@pytest.mark.parametrize("reverse", [False, True])
def test_a_float_overflow_that_raises_on_one_rank_is_agreed(how, reverse, comm):
    """The lean float sum, forwards and reverse: only the last rank makes a RuntimeWarning an error
    (or calls a handler that raises), and only its finish overflows; every rank raises, in every
    call of a row."""
    last = comm.rank == comm.size - 1
    x = np.array([1e308, 1e308]) if last else np.array([1.0e308 if comm.rank == 0 else 0.0])

    def handler(kind, flag):
        raise FloatingPointError(f"handler: {kind}")

    def state():
        if not last:
            return np.errstate(all="ignore")
        if how == "warnings":
            return np.errstate(all="ignore", over="warn")
        return np.errstate(all="ignore", over="call", call=handler)

    distscan.cumsum(np.ones(3), comm=comm, reverse=reverse)  # the kind is warm
    exc = RuntimeWarning if how == "warnings" else FloatingPointError
    for _ in range(3):
        with warnings.catch_warnings(), state():
            if last and how == "warnings":
                warnings.simplefilter("error")
            raises_everywhere(comm, exc, f"rank {comm.size - 1}",
                              lambda: distscan.cumsum(x, comm=comm, reverse=reverse))
    after = 3 * (comm.size - 1 - comm.rank) if reverse else 3 * comm.rank
    np.testing.assert_array_equal(distscan.cumsum(np.ones(3), comm=comm, reverse=reverse),
                                  after + (np.arange(3, 0, -1) if reverse else np.arange(1, 4)))


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("what", ["sum", "segmented", "recurrence"])
def test_a_read_only_out_on_one_rank_is_refused_everywhere(what, comm):
    """Written after the exchange, a read-only ``out=`` failed on its rank alone; it is refused before."""
    rng = np.random.default_rng(comm.rank)
    x, f, b = rng.integers(0, 9, 20), rng.random(20) < 0.2, rng.standard_normal(20)
    call = {"sum": lambda out: distscan.cumsum(x, out=out, comm=comm),
            "segmented": lambda out: distscan.cumsum(x, segments=f, out=out, comm=comm),
            "recurrence": lambda out: distscan.linear_recurrence(0.9, b, out=out, comm=comm)}[what]
    dtype = np.float64 if what == "recurrence" else np.int64
    for _ in range(2):
        call(np.empty(20, dtype))  # the kind is warm on every rank
        out = np.empty(20, dtype)
        if comm.rank == 0:
            out.setflags(write=False)
        msg = raises_everywhere(comm, ValueError, "read-only", lambda: call(out))
        assert msg.startswith("rank 0:"), msg
    call(np.empty(20, dtype))  # the communicator is whole


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("where", ["prepare", "carry"])
def test_a_failure_of_the_state_loops_before_the_exchange_is_agreed(where, comm, monkeypatch):
    """The loops' making (their compile) and the carry pass run before the exchange: a failure on one
    rank raises on every rank, and the next calls work."""
    victim = 0  # the first rank computes a carry (the last one does not)
    x, f = np.arange(30) + comm.rank, (np.arange(30) % 7) == 0
    if where == "prepare":
        _kinds.PLANS.clear()  # plans made anew: each prepares its loops in its first run
        _kinds.KINDS.clear()
        real = cpu.prepare

        def failing(*args, **kwargs):
            if comm.rank == victim:
                raise MemoryError("injected: numba could not compile the loop")
            return real(*args, **kwargs)

        monkeypatch.setattr(cpu, "prepare", failing)
    else:
        # The carry fails in the fused call's first half (cpu_fused) and on the general route, which
        # the fused call falls back to when its half raises (Loops._run_one, of carry())
        _kinds.PLANS.clear()  # plans made anew: their fused calls from the failing halves below
        _kinds.KINDS.clear()
        real_halves, real_one = cpu_states.fused_halves, cpu_states.Loops._run_one

        def failing_halves(loops, reverse, record, last):
            before, after = real_halves(loops, reverse, record, last)

            def failing_before(*args):
                if comm.rank == victim:
                    raise MemoryError("injected: carry")
                return before(*args)
            return failing_before, after

        def failing_one(self, fn, *args):
            if comm.rank == victim and args[-1] is not None:  # a loop that gives the part's state: before the exchange
                raise MemoryError("injected: carry")
            return real_one(self, fn, *args)

        monkeypatch.setattr(cpu_states, "fused_halves", failing_halves)
        for _ in range(2):  # the kind's first call makes its plan's fused lean call: the next one is it
            distscan.cumsum(x, segments=f, comm=comm)
        assert any(plan.lean_run is not None for plan in _kinds.PLANS._plans.values() if plan.comm is comm)
        monkeypatch.setattr(cpu_states.Loops, "_run_one", failing_one)
    msg = raises_everywhere(comm, MemoryError, "injected", lambda: distscan.cumsum(x, segments=f, comm=comm))
    assert msg.startswith(f"rank {victim}:"), msg
    monkeypatch.undo()
    g = np.concatenate([np.arange(30) + r for r in range(comm.size)])
    flags = np.tile(f, comm.size)
    ref = segmented_reference(g, flags, "sum")[30 * comm.rank:30 * (comm.rank + 1)]
    for _ in range(2):
        y = distscan.cumsum(x, segments=f, comm=comm)
        all_ranks_ok(comm, lambda: np.testing.assert_array_equal(y, ref))


@pytest.mark.manyranks
def test_integer_scans_that_wrap_are_exact_on_every_route(comm):
    """The lean integer call (scan, then add) beside ranks on the general route (strided parts): the
    carries are the same totals, the results NumPy's on the concatenation, overflow wrapping."""
    rng = shared_rng(comm)
    for opname in ("sum", "prod", "max", "bitwise_xor", "logical_or"):
        for dtype in ("int64", "uint8", "int32", "bool"):
            counts = random_counts(rng, comm.size, 25)
            g = rng.integers(2**61, 2**62, int(counts.sum()), dtype=np.int64).astype(dtype) if opname != "prod" else \
                rng.integers(-3, 4, int(counts.sum())).astype(dtype)
            part = rank_part(g, counts, comm)
            if rng.integers(2) and comm.rank == rng.integers(comm.size):
                strided = np.zeros(2 * len(part), part.dtype)
                strided[::2] = part
                part = strided[::2]
            ref = rank_part(reference_scan(g, opname), counts, comm)
            for strategy in ("auto", "scan_then_add", "reduce_then_scan"):
                for _ in range(2):
                    got = distscan.scan(part, opname, comm=comm, strategy=strategy)
                    all_ranks_ok(comm, lambda: np.testing.assert_array_equal(got, ref, err_msg=f"{opname} {dtype}"))


@pytest.mark.parametrize("method", ["gather", "doubling"])
def test_carries_that_overflow_on_a_rank_told_to_raise_do_not_hang(method, comm, monkeypatch):
    """Ranks differ: only the last rank's NumPy raises on overflow, and the carries before it
    overflow in the exchange's fold (on that rank alone).  No rank may be left waiting: twice in a
    row, every rank raises that rank's FloatingPointError (as NumPy's cumsum of the whole array
    raises under its errstate; it gave the quiet inf there until 2026-11-27), or, where nothing
    overflows (2 ranks: one carry, no fold), every rank returns.  Recursive doubling adds the
    carries on the ranks between (rank 1 adds rank 0's to its own, under its quiet errstate): the
    last rank meets no overflow of its own, and every rank returns inf alike."""
    from distscan.dist import exchange

    if method == "doubling":  # on every rank alike; plans made before kept the gather
        monkeypatch.setattr(exchange, "DOUBLING_RANKS", 1)
    _kinds.PLANS.clear()
    _kinds.KINDS.clear()
    x = np.array([1e308]) if comm.rank < comm.size - 1 else np.array([1.0])
    try:
        for _ in range(2):
            def call():
                with np.errstate(over="raise" if comm.rank == comm.size - 1 else "ignore"):
                    return distscan.cumsum(x, comm=comm)
            if comm.size > 2 and method == "gather":
                msg = raises_everywhere(comm, FloatingPointError, "overflow", call)
                assert msg.startswith(f"rank {comm.size - 1}:"), msg
            else:
                y = call()
                if comm.rank == comm.size - 1 and comm.size > 2:
                    assert np.isinf(y[0])
            comm.Barrier()
    finally:
        _kinds.PLANS.clear()
        _kinds.KINDS.clear()
