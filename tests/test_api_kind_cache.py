"""The call-kind cache (distscan._kinds) and the plans' prepared loops, against what users do to
them: calls in a row, of every kind of part on some ranks only (contiguous, strided, reversed,
read-only, lists; flags and coefficients the same), ``out=`` on some ranks (of the result dtype,
another one, read-only), inputs mutated in place between calls, a failure on one rank.  Every call
equals the sequential reference on the concatenation of the parts, or raises the same exception
on every rank, and no call hangs.

The caches rest on assumptions (written next to them): a kind holds nothing read from an array
(:class:`distscan._kinds.Kind`); a plan's state loops take any layout and compile nothing after
the exchange (:class:`distscan.backends.cpu_states.Loops`); the lean integer sum adds after the
exchange what cannot fail (``ScanPlan._scan_then_add``).  The stateful test draws sequences of
calls that break each of them if it were wrong.  Under mpiexec every rank draws the same steps
(``derandomize``), each rank takes its own part kind from a per-rank draw, and every check is
agreed across the ranks before it fails (so every rank shrinks alike).

Written for any rank count (serially and under mpiexec, tests/run.sh).
"""

from __future__ import annotations

import numpy as np
import pytest

import distscan
from distscan._kinds import KINDS

from tests.support.data import random_counts, rank_part
from tests.support.ranks import all_ranks_ok, raises_everywhere
from tests.support.reference import assert_within_sum_bound, recurrence_reference, segmented_reference
from tests.support.seeds import shared_rng

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule, run_state_machine_as_test  # noqa: E402

pytestmark = [pytest.mark.anyranks, pytest.mark.timeout(600)]

LAYOUTS = ["contiguous", "contiguous", "strided", "reversed", "readonly", "list", "other dtype"]
ARRAYS = ("b", "i", "flags", "a")  # float data, integer data, segment flags, coefficients
SCALAR_A = {"contiguous": 0.75, "strided": np.float64(0.75), "reversed": np.float32(0.75),
            "readonly": np.float16(0.75), "list": 0.75, "other dtype": np.float32(0.75)}
SCANS = ["segmented int", "segmented float", "segmented reverse", "recurrence", "recurrence scalar a",
         "recurrence segments", "compensated", "sum int", "sum float"]


def _laid_out(part, layout):
    """``part`` as an array of that layout (a list for "list")."""
    if layout == "strided":
        base = np.zeros((2 * len(part),) + part.shape[1:], part.dtype)
        base[::2] = part
        return base[::2]
    if layout == "reversed":
        return np.ascontiguousarray(part[::-1])[::-1]
    if layout == "readonly":
        x = part.copy()
        x.setflags(write=False)
        return x
    if layout == "list" and len(part):  # (an empty list is float64, which the others would refuse)
        return part.tolist()
    if layout == "other dtype":
        # flags as int8 (the long way: != 0), coefficients as float32 (their values are float32's:
        # the kind casts them to the accumulator as Part does; the result dtype stays float64)
        return part.astype(np.int8 if part.dtype == np.bool_ else np.float32)
    return part.copy()


def _expected(scan, g):
    """The reference of ``scan`` on the global arrays ``g`` (b, flags, a) and its bound's scale."""
    b, flags, a = g["b"], g["flags"], g["a"]
    if scan == "segmented int":
        return segmented_reference(g["i"], flags, "sum"), None
    if scan == "segmented float":
        return segmented_reference(b, flags, "sum", exclusive=True), np.abs(b).sum() + 1
    if scan == "segmented reverse":
        return segmented_reference(g["i"], flags, "max", reverse=True), None
    if scan == "recurrence":
        return recurrence_reference(a, b), np.abs(b).sum() + 1
    if scan == "recurrence scalar a":
        return recurrence_reference(np.full(len(b), 0.75), b, reverse=True), np.abs(b).sum() + 1
    if scan == "recurrence segments":
        return recurrence_reference(a, b, segments=flags), np.abs(b).sum() + 1
    if scan == "compensated":
        return np.cumsum(b), np.abs(b).sum() + 1
    if scan == "sum int":
        return np.cumsum(g["i"]), None
    return np.cumsum(b), np.abs(b).sum() + 1


def _call(scan, parts, out, comm):
    x_i, x_f, f, a = parts["i"], parts["b"], parts["flags"], parts["a"]
    kw = {"comm": comm} if out is None else {"comm": comm, "out": out}
    if scan == "segmented int":
        return distscan.cumsum(x_i, segments=f, **kw)
    if scan == "segmented float":
        return distscan.scan(x_f, "sum", segments=f, exclusive=True, **kw)
    if scan == "segmented reverse":
        return distscan.cummax(x_i, segments=f, reverse=True, **kw)
    if scan == "recurrence":
        return distscan.linear_recurrence(a, x_f, **kw)
    if scan == "recurrence scalar a":
        return distscan.linear_recurrence(parts["scalar a"], x_f, reverse=True, **kw)
    if scan == "recurrence segments":
        return distscan.linear_recurrence(a, x_f, segments=f, **kw)
    if scan == "compensated":
        return distscan.cumsum(x_f, compensated=True, **kw)
    if scan == "sum int":
        return distscan.cumsum(x_i, **kw)
    return distscan.cumsum(x_f, **kw)


def _result_dtype(scan):
    return np.dtype(np.int64) if scan in ("segmented int", "segmented reverse", "sum int") else np.dtype(np.float64)


def _agreed(comm, check):
    """``check()`` on every rank; every rank fails (the same way) if any did."""
    all_ranks_ok(comm, check)


class KindCacheMachine(RuleBasedStateMachine):
    """Calls in a row on arrays that persist, are mutated in place, or are replaced, with part
    kinds and ``out=`` drawn per rank."""

    comm = None

    def __init__(self):
        super().__init__()
        self.parts = {}
        self.held = []  # (result, its values then): results the caller keeps are never written again

    @initialize(seed=st.integers(0, 2**32 - 1))
    def start(self, seed):
        self._new_data(seed, [dict.fromkeys(ARRAYS, "contiguous")] * self.comm.size)

    def _new_data(self, seed, layouts):
        rng = np.random.default_rng(seed)
        self.counts = random_counts(rng, self.comm.size, 40)
        n = int(self.counts.sum())
        self.g = {"b": rng.standard_normal(n), "i": rng.integers(-2**40, 2**40, n),
                  "flags": rng.random(n) < 0.2, "a": rng.uniform(0.5, 1.0, n).astype(np.float32).astype(float)}
        self.layout = layouts[self.comm.rank]
        self._lay_out()

    def _lay_out(self, keys=ARRAYS):
        """This rank's parts of the global arrays, each in its layout; the scalar ``a`` 0.75 as a
        Python or NumPy number by the coefficients' layout (each a kind of its own; the result
        float64 for all of them with float64 ``b``)."""
        self.parts["scalar a"] = SCALAR_A[self.layout["a"]]
        for k in keys:
            layout = self.layout[k] if self.layout[k] != "other dtype" or k in ("flags", "a") else "contiguous"
            self.parts[k] = _laid_out(rank_part(self.g[k], self.counts, self.comm), layout)

    @rule(seed=st.integers(0, 2**32 - 1), layouts=st.data())
    def replace_the_arrays(self, seed, layouts):
        """New arrays, each rank's (data, flags, coefficients) in layouts of its own."""
        per_rank = [{k: layouts.draw(st.sampled_from(LAYOUTS)) for k in ARRAYS} for _ in range(self.comm.size)]
        self._new_data(seed, per_rank)

    @rule(seed=st.integers(0, 2**32 - 1))
    def mutate_in_place(self, seed):
        """Change some elements of every array, in place where this rank's part is an array."""
        rng = np.random.default_rng(seed)
        n = len(self.g["b"])
        where = rng.random(n) < 0.3
        self.g["b"][where] = rng.standard_normal(int(where.sum()))
        self.g["i"][where] += 7
        self.g["flags"][where] = ~self.g["flags"][where]
        self.g["a"][where] = rng.uniform(0.5, 1.0, int(where.sum())).astype(np.float32)
        lo = int(self.counts[:self.comm.rank].sum())
        hi = lo + int(self.counts[self.comm.rank])
        for k in ARRAYS:
            if self.layout[k] in ("contiguous", "strided", "reversed") or (
                    self.layout[k] == "other dtype" and k in ("b", "i")):
                self.parts[k][...] = self.g[k][lo:hi]
            else:  # read-only arrays and lists are built again
                self._lay_out([k])

    @rule(scan=st.sampled_from(SCANS), outs=st.data())
    def call(self, scan, outs):
        comm = self.comm
        modes = [outs.draw(st.sampled_from(["none", "none", "same", "other dtype", "read-only"]))
                 for _ in range(comm.size)]
        mode = modes[comm.rank]
        n = int(self.counts[comm.rank])
        res = _result_dtype(scan)
        out = None
        if mode == "same":
            out = np.full(n, 99, res)
        elif mode == "other dtype":  # narrower: computed in the result dtype, cast into out as NumPy does
            out = np.full(n, 99, np.int32 if res.kind == "i" else np.float32)
        elif mode == "read-only":
            out = np.full(n, 99, res)
            out.setflags(write=False)
        if "read-only" in modes:
            msg = raises_everywhere(comm, ValueError, "read-only", lambda: _call(scan, self.parts, out, comm))
            assert msg.startswith("rank ") or modes.count("read-only") == comm.size, msg
            return
        got = _call(scan, self.parts, out, comm)
        ref, scale = _expected(scan, self.g)
        mine = rank_part(ref, self.counts, comm)
        if out is not None:
            assert got is out
            with np.errstate(all="ignore"):
                mine = mine.astype(out.dtype)
        if out is None:
            self.held = self.held[-8:] + [(got, np.array(got, copy=True))]
        held = self.held
        _agreed(comm, lambda: [np.testing.assert_array_equal(r, v, err_msg="a held result changed") for r, v in held])
        if mine.dtype.kind in "iu":
            _agreed(comm, lambda: np.testing.assert_array_equal(got, mine, err_msg=f"{scan} {modes} {self.layout}"))
            assert got.dtype == mine.dtype
        else:
            n_all = len(self.g["b"])
            eps_dtype = got.dtype
            _agreed(comm, lambda: assert_within_sum_bound(got, mine, np.full(len(mine), scale), eps_dtype, n=n_all))

    @rule(victim=st.integers(0, 63))
    def one_rank_fails(self, victim):
        """One rank's flags are one too many: every rank raises the same ValueError."""
        comm = self.comm
        victim %= comm.size
        f = self.parts["flags"]
        if comm.rank == victim:
            f = np.ones(len(f) + 1, bool)
        x = self.parts["i"]
        msg = raises_everywhere(comm, ValueError, "segments", lambda: distscan.cumsum(x, segments=f, comm=comm))
        assert msg.startswith(f"rank {victim}") or comm.size == 1, msg


def test_kind_cache_and_prepared_loops_survive_what_users_do(comm):
    KINDS.clear()
    KindCacheMachine.comm = comm
    run_state_machine_as_test(KindCacheMachine, settings=settings(
        max_examples=30, stateful_step_count=12, deadline=None, derandomize=True, database=None,
        suppress_health_check=list(HealthCheck)))


@pytest.mark.manyranks
def test_state_calls_take_the_cached_kind_and_give_the_general_answer(comm):
    """The second call of a kind takes the cheap way; the same call the long way (a strided part)
    gives the same bits, at any split (empty parts too), for every state scan the cache takes."""
    rng = shared_rng(comm)
    for _ in range(3):
        counts = random_counts(rng, comm.size, 30)
        n = int(counts.sum())
        b, i = rng.standard_normal(n), rng.integers(-100, 100, n)
        flags, a = rng.random(n) < 0.2, rng.uniform(-1, 1, n)
        xb, xi, f, xa = (rank_part(v, counts, comm) for v in (b, i, flags, a))
        calls = [lambda x, f: distscan.cumsum(x, segments=f, comm=comm),
                 lambda x, f: distscan.cummin(x, segments=f, reverse=True, comm=comm),
                 lambda x, f: distscan.linear_recurrence(xa, x.astype(float), segments=f, comm=comm),
                 lambda x, f: distscan.linear_recurrence(-0.5, x.astype(float), comm=comm),
                 lambda x, f: distscan.cumsum(x.astype(float), compensated=True, comm=comm)]
        for call in calls:
            first = call(xi, f)
            cached = call(xi, f)  # the kind is warm
            strided = np.zeros(2 * len(xi), xi.dtype)
            strided[::2] = xi
            general = call(strided[::2], f)  # the long way
            all_ranks_ok(comm, lambda: (np.testing.assert_array_equal(cached, first),
                                        np.testing.assert_array_equal(cached, general)))
        y = distscan.cumsum(xi, segments=f, comm=comm)
        all_ranks_ok(comm, lambda: np.testing.assert_array_equal(y, rank_part(segmented_reference(i, flags, "sum"),
                                                                              counts, comm)))
        y = distscan.linear_recurrence(xa, xb, comm=comm)
        ref = rank_part(recurrence_reference(a, b), counts, comm)
        all_ranks_ok(comm, lambda: assert_within_sum_bound(y, ref, np.full(len(ref), np.abs(b).sum() + 1), "float64",
                                                           n=n))


def test_options_of_other_kinds_take_the_long_way(comm):
    """Flags that are not bool, coefficients that broadcast, a list: the long way; a NumPy scalar
    the cheap one (below): the same answer as bool flags and full coefficient arrays."""
    rng = shared_rng(comm)
    counts = random_counts(rng, comm.size, 30, empty=0)
    n = int(counts.sum())
    b, flags = rng.standard_normal(n), rng.random(n) < 0.3
    xb, f = rank_part(b, counts, comm), rank_part(flags, counts, comm)
    want = distscan.linear_recurrence(np.full(len(xb), 0.5), xb, segments=f, comm=comm)
    for a, flags_as in ((0.5, f.astype(np.int8)), (np.float64(0.5), f.tolist()), (np.array([0.5]), f),
                        (np.full(len(xb), 0.5, np.float32), f)):
        for _ in range(2):
            got = distscan.linear_recurrence(a, xb, segments=flags_as, comm=comm)
            all_ranks_ok(comm, lambda: np.testing.assert_array_equal(got, want))


@pytest.mark.parametrize("a", [np.float64(0.5), np.float32(0.5), np.float16(-0.5), np.int64(3), np.int8(-2),
                               np.complex64(0.5 + 0.25j), np.array(0.5), np.array(-0.5, np.float32)],
                         ids=lambda a: f"{type(a).__name__}-{a.dtype}")
def test_numpy_scalar_coefficients_take_the_cheap_way(comm, monkeypatch, a):
    """A NumPy scalar or 0-d array ``a`` is one kind a dtype (as NumPy 2 resolves it: float32 ``a``
    with float16 ``b`` computes in float32, float64 ``a`` with float32 ``b`` in float64; NumPy 1
    reads a float64 scalar's value): after the first call no call of it builds a ``Part``, and
    each gives the long way's answer (a strided ``b``), whose dtype it keeps.  A Python number of
    another kind between."""
    rng = shared_rng(comm)
    counts = random_counts(rng, comm.size, 40)
    n = int(counts.sum())
    data = rng.integers(-3, 4, n) if a.dtype.kind in "iu" else rng.standard_normal(n)
    for b_dtype in ((np.int64, np.int32) if a.dtype.kind in "iu" else (np.float32, np.float64, np.float16)):
        xb = rank_part(data.astype(b_dtype), counts, comm)
        strided = np.zeros(2 * len(xb), xb.dtype)
        strided[::2] = xb
        long_way = distscan.linear_recurrence(a, strided[::2], comm=comm)
        # (NumPy's a*b: np.float64 and np.complex128 are Python floats and complexes, whose value
        # NumPy 1 reads to resolve, the others by their dtype)
        assert long_way.dtype == np.result_type(a if isinstance(a, (float, complex)) else a.dtype, xb.dtype)
        distscan.linear_recurrence(a, xb, comm=comm)  # the kind remembered
        distscan.linear_recurrence(1, xb, comm=comm)  # a Python number between: another kind
        built = []
        real_part = distscan.api.Part
        monkeypatch.setattr(distscan.api, "Part", lambda *args, **kw: built.append(1) or real_part(*args, **kw))
        try:
            for _ in range(3):
                got = distscan.linear_recurrence(a, xb, comm=comm)
                all_ranks_ok(comm, lambda: (np.testing.assert_array_equal(got, long_way),
                                            np.testing.assert_equal(got.dtype, long_way.dtype)))
        finally:
            monkeypatch.setattr(distscan.api, "Part", real_part)
        all_ranks_ok(comm, lambda: np.testing.assert_equal(built, []))


def test_numbers_whose_value_numpy_1_reads_keep_the_long_way_s_dtype(comm):
    """NumPy 1 resolves a Python float's (and np.float64's) dtype in ``a*b`` by its value: 1e300
    with float32 ``b`` computes in float64, 0.5 in float32.  A warm kind made by 0.5 must not take
    1e300 (it computed float32 infinities where the long way gives float64).  On NumPy 2 both
    are float32 (the value is weak)."""
    b = np.arange(1, 6, dtype=np.float32) * np.float32(comm.rank + 1)
    strided = np.zeros(2 * len(b), b.dtype)
    strided[::2] = b
    for a in (0.5, 1e300, 0.25, np.float64(0.5), np.float64(1e300), 1e300 + 0j, 0.5 + 0j):
        with np.errstate(all="ignore"):
            warm = distscan.linear_recurrence(a, b, comm=comm)
            long_way = distscan.linear_recurrence(a, strided[::2], comm=comm)
        all_ranks_ok(comm, lambda: (np.testing.assert_equal(warm.dtype, long_way.dtype),
                                    np.testing.assert_array_equal(warm, long_way),
                                    np.testing.assert_equal(warm.dtype, np.result_type(a, b))))


def test_linear_recurrence_initial_zero_in_any_form(comm):
    """``initial`` 0, 0.0, -0.0, 0j, False, np.float64(0) and a zero row give the recurrence from 0;
    a nonzero Python number does not."""
    rng = shared_rng(comm)
    counts = random_counts(rng, comm.size, 20)
    b = rank_part(rng.standard_normal(int(counts.sum())), counts, comm)
    a = np.full(len(b), 0.5)
    want = distscan.linear_recurrence(a, b, comm=comm)
    for zero in (0, 0.0, -0.0, 0j, False, np.float64(0), np.zeros(1), None):
        got = distscan.linear_recurrence(a, b, initial=zero, comm=comm)
        all_ranks_ok(comm, lambda: np.testing.assert_array_equal(got, want))
    shifted = distscan.linear_recurrence(a, b, initial=2.0, comm=comm)
    lo = int(counts[:comm.rank].sum())
    decay = 0.5 ** np.arange(lo + 1, lo + len(b) + 1)
    scale = np.abs(want).max(initial=0) + 2  # the difference of two sums: absolute error of their size
    all_ranks_ok(comm, lambda: np.testing.assert_allclose(shifted - want, 2.0 * decay, rtol=0, atol=1e-13 * scale))


def test_a_remembered_kind_whose_check_raises_on_one_rank_raises_on_every_rank(comm):
    """A kind's cheap check runs before any collective: a coefficient that it cannot convert on one
    rank only (2**70 for an int64 recurrence) must take the long way, which agrees on the failure,
    rather than raise on that rank alone and leave the others in the exchange."""
    b = np.arange(5, dtype=np.int64)
    distscan.linear_recurrence(2, b, comm=comm)  # the kind (a Python int, int64 b) is remembered
    a = 2**70 if comm.rank == 0 else 2
    # NumPy 2 cannot convert 2**70 to int64 (OverflowError, "out of bounds" as its a*y says); NumPy 1's
    # value-based casting makes it an object dtype, which distscan refuses (TypeError): either way the
    # same error on every rank
    raises_everywhere(comm, (OverflowError, TypeError), "too large|not supported|out of bounds",
                      lambda: distscan.linear_recurrence(a, b, comm=comm))
    np.testing.assert_array_equal(distscan.linear_recurrence(2, b[:0], comm=comm), b[:0])
