"""The lean distributed integer call (``ScanPlan.lean_call``, run from a call kind): the common
``cumsum`` of a contiguous integer part on many ranks, fused into one function over the
exchange's buffers.  Its promise: the collectives and results of the general route
(``ScanPlan.run(fast=True)``), whatever the other ranks pass in the same call.

Each test warms the lean call on every rank first (it exists from the second call of a kind), then
lets ranks differ call by call: an empty part, a part of another dtype, a list, a strided view, a
read-only ``out=``, another operator, a cold kind on one rank, and calls on two communicators in
turn.  Every call equals NumPy on the concatenation, or raises the same exception on every rank;
the call after it works.  Hypothesis draws the rank-by-rank sequences.

Runs serially and under ``mpiexec -n K python -m pytest --with-mpi``.
"""

from __future__ import annotations

import numpy as np
import pytest

import distscan
from distscan import _kinds

from tests.dist.test_plan import Counting, _count
from tests.support.ranks import all_ranks_ok
from tests.support.reference import recurrence_reference, reference_scan, segmented_reference
from tests.support.seeds import shared_rng

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

pytestmark = [pytest.mark.anyranks, pytest.mark.timeout(300)]

N = 40  # rows a rank holds in a regular call


def _lean_calls(comm) -> int:
    """How many call kinds of this process hold a lean call for ``comm``."""
    return sum(1 for kind in _kinds.KINDS._kinds.values() if _lean_of(kind, comm) is not None)


def _lean_of(kind, comm):
    """The lean call of ``kind``'s plan on ``comm`` (None: no plan there, or no lean call yet)."""
    plan = kind.plans.get(id(comm))
    return None if plan is None or plan.comm is not comm else plan.lean_run


def _regular(comm, seed, dtype=np.int64):
    """Every rank's contiguous part of one global array and this rank's share of its cumsum."""
    rng = np.random.default_rng(seed)
    g = rng.integers(-2**40, 2**40, N * comm.size).astype(dtype)
    lo = N * comm.rank
    return g[lo:lo + N].copy(), np.cumsum(g)[lo:lo + N]


def _same_outcome(comm, fn):
    """``fn()``'s value, or the exception's type and message, checked alike on every rank."""
    try:
        outcome = ("ok", fn())
    except Exception as exc:  # noqa: BLE001 - compared across ranks below
        outcome = ("raised", f"{type(exc).__name__}: {exc}")
    seen = comm.allgather(outcome if outcome[0] == "raised" else ("ok",))
    all_ranks_ok(comm, lambda: _alike(seen))
    return outcome


def _alike(seen):
    assert len(set(seen)) == 1, seen


@pytest.mark.mpi(min_size=2)
def test_the_lean_call_is_taken_and_makes_one_collective(comm):
    _kinds.KINDS.clear()
    c = Counting(comm)
    x, ref = _regular(comm, 1)
    out = np.empty_like(x)
    for _ in range(2):  # the first call resolves the exchange; its lean call exists after it
        distscan.cumsum(x, comm=c, out=out)
    assert _lean_calls(c) == 1
    for seed in range(3):
        x, ref = _regular(comm, seed)
        made = _count(c, lambda: distscan.cumsum(x, comm=c, out=out))
        assert made == ["Allgather"], made
        all_ranks_ok(comm, lambda: np.testing.assert_array_equal(out, ref))
        y = distscan.cumsum(x, comm=c)  # out=None: a new array
        all_ranks_ok(comm, lambda: np.testing.assert_array_equal(y, ref))


# What one rank may pass beside warm lean calls on the others: (name, part from (x, g-slice), out).
def _odd_part(kind, x, rank, size):
    if kind == "empty":
        return x[:0], None
    if kind == "int32":  # another dtype: the arguments differ, every rank raises
        return x.astype(np.int32), None
    if kind == "list":
        return x.tolist(), None
    if kind == "strided":
        s = np.zeros(2 * len(x), x.dtype)
        s[::2] = x
        return s[::2], None
    if kind == "readonly out":  # refused before the exchange on this rank: every rank raises
        out = np.empty_like(x)
        out.flags.writeable = False
        return x, out
    if kind == "int32 out":  # cast into out after the scan (wrapping): this rank asks for an agreement after it
        return x, np.empty(len(x), np.int32)
    if kind == "aliased out":  # out is x itself: NumPy's answer, through a buffer
        return x, x
    raise AssertionError(kind)


ODD = ["empty", "int32", "list", "strided", "readonly out", "int32 out", "aliased out"]


def _one_call(comm, seed, odd_rank, kind):
    """One call where ``odd_rank`` passes its part as ``kind`` and the others a warm lean call's."""
    x, _ = _regular(comm, seed)
    rng = np.random.default_rng(seed)
    g = rng.integers(-2**40, 2**40, N * comm.size).astype(np.int64)
    parts = [g[N * r:N * (r + 1)] for r in range(comm.size)]
    out = np.empty_like(x)
    if kind == "empty":
        parts[odd_rank] = parts[odd_rank][:0]
    if comm.rank == odd_rank:
        part, given_out = _odd_part(kind, x, comm.rank, comm.size)
    else:
        part, given_out = x, out
    ref_all = np.cumsum(np.concatenate(parts))
    lo = sum(len(p) for p in parts[:comm.rank])
    ref = ref_all[lo:lo + len(parts[comm.rank])]
    outcome = _same_outcome(comm, lambda: distscan.cumsum(part, comm=comm, out=given_out))
    must_fail = kind in ("int32", "readonly out")
    all_ranks_ok(comm, lambda: _check(outcome, ref, must_fail, kind))


def _check(outcome, ref, must_fail, kind):
    status, value = outcome
    assert (status == "raised") == must_fail, (kind, outcome)
    if status == "ok":
        value = np.asarray(value)
        np.testing.assert_array_equal(value, ref.astype(value.dtype), err_msg=kind)


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("kind", ODD)
def test_one_rank_differs_beside_warm_lean_calls(comm, kind):
    """Each rank in turn passes an odd part beside the others' lean calls; the next call is lean again."""
    _kinds.KINDS.clear()
    x, ref = _regular(comm, 7)
    out = np.empty_like(x)
    for _ in range(2):
        distscan.cumsum(x, comm=comm, out=out)
    for odd_rank in range(comm.size):
        _one_call(comm, 10 + odd_rank, odd_rank, kind)
        x, ref = _regular(comm, 20 + odd_rank)
        distscan.cumsum(x, comm=comm, out=out)
        all_ranks_ok(comm, lambda: np.testing.assert_array_equal(out, ref))
    assert _lean_calls(comm) >= 1


@pytest.mark.mpi(min_size=2)
def test_a_cold_rank_beside_warm_ones(comm):
    """Only the last rank forgets its kinds (and plans) between calls: it takes the general route
    (a Part, run without ``fast``) while the others run their lean calls."""
    _kinds.KINDS.clear()
    x, _ = _regular(comm, 3)
    for _ in range(2):
        distscan.cumsum(x, comm=comm)
    for seed in range(4):
        if comm.rank == comm.size - 1:
            _kinds.KINDS.clear()
            _kinds.PLANS.clear()
        x, ref = _regular(comm, 30 + seed)
        y = distscan.cumsum(x, comm=comm)
        all_ranks_ok(comm, lambda: np.testing.assert_array_equal(y, ref))


@pytest.mark.mpi(min_size=2)
def test_two_communicators_in_turn(comm):
    """Lean calls on a communicator and its duplicate, in turn, then on a new duplicate made after
    the first is freed (which may reuse its id): each call uses its own communicator's exchange."""
    _kinds.KINDS.clear()
    a = comm.Dup()
    b = comm.Dup()
    try:
        for seed in range(4):
            for c in (a, b, a):
                x, ref = _regular(comm, 40 + seed)
                y = distscan.cumsum(x, comm=c)
                all_ranks_ok(comm, lambda: np.testing.assert_array_equal(y, ref))
        a.Free()
        a = comm.Dup()
        for seed in range(3):
            x, ref = _regular(comm, 50 + seed)
            y = distscan.cumsum(x, comm=a)
            all_ranks_ok(comm, lambda: np.testing.assert_array_equal(y, ref))
    finally:
        a.Free()
        b.Free()


@pytest.mark.mpi(min_size=2)
@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(data=st.data())
def test_drawn_sequences_of_calls(comm, data):
    """Sequences of calls in which every rank draws its own part kind, operator and dtype (drawn
    alike on every rank: hypothesis is derandomized and the draws are the same), integers exact."""
    kinds = ["lean", "lean", "lean", "empty", "int32", "list", "strided", "int32 out", "aliased out",
             "readonly out", "max"]
    calls = data.draw(st.lists(st.lists(st.sampled_from(kinds), min_size=comm.size, max_size=comm.size),
                               min_size=3, max_size=8))
    seed = shared_rng(comm).integers(2**31)
    for i, per_rank in enumerate(calls):
        _drawn_call(comm, int(seed) + i, per_rank)


def _drawn_call(comm, seed, per_rank):
    rng = np.random.default_rng(seed)
    counts = [0 if k == "empty" else int(n) for k, n in zip(per_rank, rng.integers(1, 60, comm.size))]
    g = rng.integers(-2**40, 2**40, sum(counts))
    mine = per_rank[comm.rank]
    lo = sum(counts[:comm.rank])
    x = g[lo:lo + counts[comm.rank]].copy()
    op = "max" if "max" in per_rank else "sum"  # max on every rank, or a mismatch where only some
    my_op = "max" if mine == "max" else "sum"
    if mine in ("lean", "max", "empty"):
        part, out = x, np.empty_like(x)
    else:
        part, out = _odd_part(mine, x, comm.rank, comm.size)
    must_fail = any(k in ("int32", "readonly out") for k in per_rank) or op != "sum" and per_rank.count("max") < comm.size
    ref = reference_scan(g, op)[lo:lo + counts[comm.rank]]
    outcome = _same_outcome(comm, lambda: distscan.scan(part, my_op, comm=comm, out=out))
    all_ranks_ok(comm, lambda: _check(outcome, ref, must_fail, str(per_rank)))


# -- the fused CPU state scans (segmented, recurrence, compensated) --------------------------------

def _state_global(seed, size, n=N):
    """One global array for each state scan: integers, flags, coefficients, floats of exact sums,
    factors of exact products with zeros and overflow."""
    rng = np.random.default_rng(seed)
    total = n * size
    x = rng.integers(-9, 9, total)
    return {"x": x, "f": rng.random(total) < 0.1, "a": rng.uniform(0.5, 1, total),
            "b": rng.integers(-64, 64, total) / 8.0, "p": _factors(x)}


def _factors(x):
    """Integers from [-9, 9) as factors whose products are exact or overflow in any grouping where they
    do in sequence: 0 and -1 as zeros of both signs, +-7 and more as +-2^600, +-2 and +-3 as +-2, the
    rest as +-1 (a segmented float product absorbs its zeros across ranks as NumPy's does)."""
    mag = np.where(np.abs(x) >= 7, 2.0 ** 600, np.where(np.abs(x) >= 2, 2.0, 1.0))
    return np.where(x == 0, 0.0, np.where(x == -1, -0.0, np.sign(x) * mag))


STATE = {  # name: (call on this rank's parts, reference of the global arrays)
    "segmented": (lambda p, out, c: distscan.cumsum(p["x"], segments=p["f"], out=out, comm=c),
                  lambda g: segmented_reference(g["x"], g["f"], "sum")),
    "segmented reverse max": (lambda p, out, c: distscan.cummax(p["x"], segments=p["f"], reverse=True, out=out, comm=c),
                              lambda g: segmented_reference(g["x"], g["f"], "max", reverse=True)),
    "segmented exclusive": (lambda p, out, c: distscan.scan(p["x"], "sum", segments=p["f"], exclusive=True, out=out,
                                                            comm=c),
                            lambda g: segmented_reference(g["x"], g["f"], "sum", exclusive=True)),
    "recurrence": (lambda p, out, c: distscan.linear_recurrence(p["a"], p["b"], out=out, comm=c),
                   lambda g: recurrence_reference(g["a"], g["b"])),
    "recurrence reverse, segments": (
        lambda p, out, c: distscan.linear_recurrence(p["a"], p["b"], segments=p["f"], reverse=True, out=out, comm=c),
        lambda g: recurrence_reference(g["a"], g["b"], segments=g["f"], reverse=True)),
    "compensated": (lambda p, out, c: distscan.cumsum(p["b"], compensated=True, out=out, comm=c),
                    lambda g: np.cumsum(g["b"])),  # eighths: every prefix exact
    "segmented product": (lambda p, out, c: distscan.cumprod(p["p"], segments=p["f"], out=out, comm=c),
                          lambda g: _products(g["p"], g["f"])),
    "segmented reverse exclusive product": (
        lambda p, out, c: distscan.scan(p["p"], "prod", segments=p["f"], reverse=True, exclusive=True, out=out,
                                        comm=c),
        lambda g: _products(g["p"], g["f"], reverse=True, exclusive=True)),
}


def _products(x, f, **kw):
    with np.errstate(all="ignore"):
        return segmented_reference(x, f, "prod", **kw)


def _state_parts(g, counts, rank):
    lo = sum(counts[:rank])
    return {k: v[lo:lo + counts[rank]].copy() for k, v in g.items()}


def _state_call(comm, name, seed, counts, odd_rank=None, odd=None):
    call, reference = STATE[name]
    g = _state_global(seed, comm.size)
    total = sum(counts)
    g = {k: v[:total] for k, v in g.items()}
    if odd == "float32 coefficients":  # values float32 holds, so that the odd rank's are the same
        g["a"] = g["a"].astype(np.float32).astype(np.float64)
    parts = _state_parts(g, counts, comm.rank)
    key = "p" if name.endswith("product") else "x" if name.startswith("segmented") else "b"
    out = np.empty_like(reference({k: v[:1] for k, v in g.items()}), shape=len(parts[key]))
    must_fail = False
    if comm.rank == odd_rank:
        if odd == "strided":
            s = np.zeros(2 * len(parts[key]), parts[key].dtype)
            s[::2] = parts[key]
            parts[key], out = s[::2], None
        elif odd == "list flags":
            parts["f"] = parts["f"].tolist()
        elif odd == "byte flags":  # flags of another dtype (converted on the Part route)
            parts["f"] = parts["f"].astype(np.uint8)
        elif odd == "float32 coefficients":  # coefficients of another dtype (cast by Kind.aux)
            parts["a"] = parts["a"].astype(np.float32)
        elif odd == "narrow out":  # out of another dtype than the accumulator (values it holds exactly)
            out = out.astype(np.int32 if out.dtype.kind == "i" else np.float32)
        elif odd == "short flags":
            parts["f"] = parts["f"][:-1]
        elif odd == "cold":
            _kinds.KINDS.clear()
            _kinds.PLANS.clear()
    if odd == "short flags" and ("segment" in name or "segments" in name) and counts[odd_rank] > 0:
        must_fail = True
    lo = sum(counts[:comm.rank])
    ref = reference(g)[lo:lo + counts[comm.rank]]
    outcome = _same_outcome(comm, lambda: call(parts, out, comm))
    all_ranks_ok(comm, lambda: _check_close(outcome, ref, must_fail, f"{name} {odd} on {odd_rank}"))


def _check_close(outcome, ref, must_fail, what):
    status, value = outcome
    assert (status == "raised") == must_fail, (what, outcome)
    if status == "ok":
        np.testing.assert_allclose(np.asarray(value), ref, rtol=1e-12, atol=0, err_msg=what)


def _fused(comm) -> int:
    """How many call kinds of this process hold a fused state call for ``comm``."""
    return sum(1 for kind in _kinds.KINDS._kinds.values()
               if "_fused_state_scan" in getattr(_lean_of(kind, comm), "__qualname__", ""))


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("name", sorted(STATE))
def test_state_scans_take_the_fused_call(comm, name):
    _kinds.KINDS.clear()
    c = Counting(comm)
    counts = [N] * comm.size
    for seed in range(2):
        _state_call(c, name, seed, counts)
    assert _fused(c) == 1
    for seed in range(2, 5):
        made = _count(c, lambda: _state_call(c, name, seed, counts))
        # distscan's one collective (the exchange), then the test's own checks (pickled allgathers)
        assert made[0] == "Allgather" and made.count("Allgather") == 1 and set(made[1:]) == {"allgather"}, made


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("odd", ["empty", "strided", "list flags", "short flags", "cold", "byte flags",
                                 "float32 coefficients", "narrow out"])
@pytest.mark.parametrize("name", sorted(STATE))
def test_one_rank_differs_beside_fused_state_calls(comm, name, odd):
    """Each rank in turn passes something else beside the others' fused calls; every call is right
    or raises on every rank, and the calls after it are right.  Arrays of other dtypes (flags,
    coefficients, out) check the fused calls' assumption: the loops' entry points read every array
    as the types they were compiled for (backends/cpu_fused.py), so such arrays must never reach them."""
    if odd in ("list flags", "short flags", "byte flags") and "segment" not in name:
        pytest.skip("no flags in this scan")
    if odd == "float32 coefficients" and "recurrence" not in name:
        pytest.skip("no coefficients in this scan")
    if odd == "narrow out" and ("recurrence" in name or "product" in name):
        pytest.skip("a recurrence's or a product's values are not those of float32")
    _kinds.KINDS.clear()
    counts = [N] * comm.size
    for seed in range(2):
        _state_call(comm, name, seed, counts)
    for odd_rank in range(comm.size):
        odd_counts = list(counts)
        if odd == "empty":
            odd_counts[odd_rank] = 0
        _state_call(comm, name, 10 + odd_rank, odd_counts, odd_rank, odd)
        _state_call(comm, name, 20 + odd_rank, counts)


# A fused segmented call scans its part before the exchange from no seed and after it only up to
# the first row that starts afresh (cpu_states.Loops.fused): flags where that row is the first, the
# last, past the end, every row, and parts of one row, forwards and in reverse, inclusive and
# exclusive, segmented scans and recurrences with segments, each rank's pattern in turn.
FLAG_PATTERNS = ["none", "first", "last", "middle", "all", "second to last"]
SEGMENTED_CALLS = {  # name: (call on this rank's x, a, flags and out; reference of the global arrays)
    "sum": (lambda x, a, f, out, c: distscan.cumsum(x, segments=f, out=out, comm=c),
            lambda x, a, f: segmented_reference(x, f, "sum")),
    "reverse max": (lambda x, a, f, out, c: distscan.cummax(x, segments=f, reverse=True, out=out, comm=c),
                    lambda x, a, f: segmented_reference(x, f, "max", reverse=True)),
    "exclusive sum": (lambda x, a, f, out, c: distscan.scan(x, "sum", segments=f, exclusive=True, out=out, comm=c),
                      lambda x, a, f: segmented_reference(x, f, "sum", exclusive=True)),
    "exclusive reverse sum": (
        lambda x, a, f, out, c: distscan.scan(x, "sum", segments=f, exclusive=True, reverse=True, out=out, comm=c),
        lambda x, a, f: segmented_reference(x, f, "sum", exclusive=True, reverse=True)),
    # recurrences with segments (floats: x in eighths, a in {1/4, 1/2, 1}, so that every value is exact)
    "recurrence": (lambda x, a, f, out, c: distscan.linear_recurrence(a, x / 8.0, segments=f, out=out, comm=c),
                   lambda x, a, f: recurrence_reference(a, x / 8.0, segments=f)),
    "reverse recurrence": (
        lambda x, a, f, out, c: distscan.linear_recurrence(a, x / 8.0, segments=f, reverse=True, out=out, comm=c),
        lambda x, a, f: recurrence_reference(a, x / 8.0, segments=f, reverse=True)),
    # float products with zeros and overflow (_factors): the carry absorbs the zeros (ops.state.Segmented)
    "product": (lambda x, a, f, out, c: distscan.cumprod(_factors(x), segments=f, out=out, comm=c),
                lambda x, a, f: _products(_factors(x), f)),
    "exclusive reverse product": (
        lambda x, a, f, out, c: distscan.scan(_factors(x), "prod", segments=f, exclusive=True, reverse=True, out=out,
                                              comm=c),
        lambda x, a, f: _products(_factors(x), f, exclusive=True, reverse=True)),
}


def _flags(pattern, n):
    f = np.zeros(n, bool)
    if n:
        where = {"none": [], "first": [0], "last": [n - 1], "middle": [n // 2], "all": list(range(n)),
                 "second to last": [max(0, n - 2)]}[pattern]
        f[where] = True
    return f


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("call", sorted(SEGMENTED_CALLS))
@pytest.mark.parametrize("n", [1, 2, 7, 5000])  # 5000: a long search for the first flag
def test_the_fused_segmented_finish_stops_where_the_seed_does(comm, call, n):
    run, reference = SEGMENTED_CALLS[call]
    _kinds.KINDS.clear()
    rng = np.random.default_rng(n)
    x, a = rng.integers(-9, 9, n * comm.size), rng.choice([0.25, 0.5, 1.0], n * comm.size)
    mine = slice(comm.rank * n, (comm.rank + 1) * n)
    for shift in range(len(FLAG_PATTERNS)):
        f = np.concatenate([_flags(FLAG_PATTERNS[(r + shift) % len(FLAG_PATTERNS)], n) for r in range(comm.size)])
        ref = reference(x, a, f)[mine]
        for _ in range(3):  # cold, then warm (the fused call from the second)
            out = np.full(n, 99, ref.dtype)
            y = run(x[mine].copy(), a[mine].copy(), f[mine].copy(), out, comm)
            all_ranks_ok(comm, lambda: np.testing.assert_array_equal(y, ref, err_msg=f"{call} shift {shift}"))
    assert _fused(comm) == 1


# A fused recurrence or compensated sum scans its part from no seed before the exchange (its carry
# is that scan's last state) and again from its seed after it; the first rank in scan order is then
# done (cpu_states.Loops.fused).  Its results are the general route's bit for bit: random floats
# (not exact sums), uneven parts, a part of one row, an empty part, forwards and in reverse.
UNEXACT_CALLS = {
    "recurrence": lambda a, b, out, c: distscan.linear_recurrence(a, b, out=out, comm=c),
    "reverse recurrence": lambda a, b, out, c: distscan.linear_recurrence(a, b, reverse=True, out=out, comm=c),
    "complex recurrence": lambda a, b, out, c: distscan.linear_recurrence(a * (0.6 + 0.8j), b + 0.5j, out=out, comm=c),
    "float32 recurrence": lambda a, b, out, c: distscan.linear_recurrence(a.astype(np.float32), b.astype(np.float32),
                                                                          out=out, comm=c),
    "compensated": lambda a, b, out, c: distscan.cumsum(b, compensated=True, out=out, comm=c),
    "exclusive reverse compensated": lambda a, b, out, c: distscan.scan(b, "sum", compensated=True, exclusive=True,
                                                                         reverse=True, out=out, comm=c),
}


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("call", sorted(UNEXACT_CALLS))
def test_fused_recurrences_and_compensated_sums_keep_the_general_routes_bits(comm, call):
    run = UNEXACT_CALLS[call]
    _kinds.KINDS.clear()
    for counts in ([50] * comm.size, [1 + 13 * r for r in range(comm.size)], [0] + [9] * (comm.size - 1),
                   [7] * (comm.size - 1) + [1]):
        rng = np.random.default_rng(sum(counts))
        a, b = rng.uniform(0.5, 1.5, sum(counts)), rng.standard_normal(sum(counts)) * 1e3
        lo, n = sum(counts[:comm.rank]), counts[comm.rank]
        mine_a, mine_b = a[lo:lo + n].copy(), b[lo:lo + n].copy()
        general = run(mine_a[::-1].copy()[::-1], mine_b[::-1].copy()[::-1], None, comm)  # strided: the Part route
        for _ in range(3):  # cold, then warm (the fused call from the second)
            fused = run(mine_a, mine_b, np.empty_like(general), comm)
            all_ranks_ok(comm, lambda: np.testing.assert_array_equal(fused, general, err_msg=f"{call} {counts}"))
    assert _fused(comm) >= 1  # (an empty part's "general" call is contiguous: a fused kind of its own)


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int32", "int64", "uint64"])
@pytest.mark.parametrize("op", ["sum", "prod", "max", "min", "bitwise_xor", "logical_or", "logical_and"])
def test_every_exact_operator_and_integer_dtype(comm, op, dtype):
    """The lean integer call of each exact operator and integer (or bool) dtype equals NumPy on the
    concatenation, wrapping where NumPy wraps, in the dtype NumPy gives (bool sums are integers)."""
    if dtype == "bool" and op.startswith("bitwise"):
        op = "logical_xor"
    if dtype != "bool" and op.startswith("logical"):
        pytest.skip("logical scans of integers give bool: not the lean integer call")
    _kinds.KINDS.clear()
    rng = shared_rng(comm)
    for _ in range(4):
        counts = rng.integers(1, 30, comm.size)
        g = rng.integers(0, 2, int(counts.sum())).astype(dtype) if dtype == "bool" else \
            rng.integers(-3 if np.dtype(dtype).kind == "i" else 0, 4, int(counts.sum())).astype(dtype)
        lo = int(counts[:comm.rank].sum())
        x = g[lo:lo + counts[comm.rank]]
        for kw in ({}, {"dtype": dtype}):  # bool sums and products are integers, unless dtype=bool
            ref = reference_scan(g, op, **kw)[lo:lo + counts[comm.rank]]
            for _ in range(2):  # the second call of a kind is the lean one
                y = distscan.scan(x, op, comm=comm, **kw)
                all_ranks_ok(comm, lambda: np.testing.assert_array_equal(y, ref, err_msg=f"{op} {dtype} {kw}"))
                all_ranks_ok(comm, lambda: _same_dtype(y, ref))


def _same_dtype(y, ref):
    assert y.dtype == ref.dtype, (y.dtype, ref.dtype)


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("dtype", ["int64", "uint64", "int32", "uint8"])
@pytest.mark.parametrize("op", ["sum", "max", "min"])
def test_the_fused_fold_wraps_as_numpy_at_the_extremes(comm, op, dtype):
    """The fused integer call folds the carries before a rank as Python ints (lean._integer_fold):
    sums wrap into the dtype as NumPy's addition does, maxima and minima keep the extremes, with
    carries at and past the dtype's limits on every rank (the fold of many ranks wraps several
    times), against NumPy on the concatenation."""
    _kinds.KINDS.clear()
    info = np.iinfo(dtype)
    rng = shared_rng(comm)
    for _ in range(3):
        counts = rng.integers(1, 6, comm.size)
        g = rng.choice(np.array([info.min, info.max, info.max - 1, info.min + 1, 0, 1], dtype=dtype),
                       int(counts.sum()))
        lo = int(counts[:comm.rank].sum())
        x = g[lo:lo + counts[comm.rank]]
        ref = reference_scan(g, op, dtype=dtype)[lo:lo + counts[comm.rank]]
        for _ in range(3):  # cold, then the fused call
            y = distscan.scan(x, op, dtype=dtype, comm=comm)
            all_ranks_ok(comm, lambda: np.testing.assert_array_equal(y, ref, err_msg=f"{op} {dtype} {counts}"))
    assert _lean_calls(comm) >= 1
