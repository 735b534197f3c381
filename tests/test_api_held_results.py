"""Users hold things: results, views of results, inputs they mutate, arrays they drop and allocate
again (a freed array's memory reused by a new one of other content), ``out=`` arrays that are
the input.  A stateful hypothesis test runs calls in any order and checks after every step that
every result still held is what it was when it was returned (no result aliases a cache, a buffer
of the exchange or another result), that inputs change only where ``out=`` was the input, and
that a call on an array whose memory once held another gives the scan of its own content.

On the CPU; calls of every kind the cheap path remembers (contiguous 1-D parts, flags, Python
number coefficients) and of the others (views, options).  Every rank runs the same steps
(derandomized hypothesis, no shrinking, no health checks that depend on time); each rank's part
is built from the drawn seed and its rank, and the reference is NumPy on the concatenation.

Written for any rank count (serially and under mpiexec, tests/run.sh).
"""

from __future__ import annotations

import gc

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, Phase, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.stateful import (Bundle, RuleBasedStateMachine, consumes, invariant, rule,  # noqa: E402
                                 run_state_machine_as_test)

import distscan  # noqa: E402
from tests.support.ranks import all_ranks_ok  # noqa: E402
from tests.support.reference import recurrence_reference, segmented_reference  # noqa: E402

pytestmark = [pytest.mark.anyranks, pytest.mark.timeout(180)]

DTYPES = ["int64", "int32", "float64", "uint8"]
SCANS = ["cumsum", "cumprod", "cummax", "cummin", "exclusive", "reverse", "segments", "recurrence", "nancumsum",
         "include_initial"]


def _counts(seed, size):
    return np.random.default_rng([seed, 1]).integers(0, 6, size)


def _global(seed, dtype, size):
    """The whole array of this seed on ``size`` ranks, and the row counts per rank."""
    counts = _counts(seed, size)
    rng = np.random.default_rng([seed, 2])
    g = rng.integers(0, 5, int(counts.sum())).astype(dtype)
    return g, counts


class Inputs:
    """One input of every rank: the global array, this rank's part (the array the user holds)."""

    def __init__(self, g, counts, rank):
        self.g, self.counts = g, counts
        lo = int(counts[:rank].sum())
        self.lo, self.hi = lo, lo + int(counts[rank])
        self.part = g[self.lo:self.hi].copy()  # a fresh allocation, not a view of the model's g


def _reference(kind, g, flags):
    if kind == "cumsum":
        return np.cumsum(g)
    if kind == "cumprod":
        return np.cumprod(g)
    if kind == "cummax":
        return np.maximum.accumulate(g)
    if kind == "cummin":
        return np.minimum.accumulate(g)
    if kind == "exclusive":
        c = np.cumsum(g)
        return np.concatenate([np.zeros(1, c.dtype), c[:-1]]) if len(c) else c
    if kind == "reverse":
        return np.cumsum(g[::-1])[::-1]
    if kind == "segments":
        return segmented_reference(g, flags, "sum")
    if kind == "recurrence":
        y = recurrence_reference(0.5, g.astype(np.float64))
        return y
    if kind == "nancumsum":
        return np.nancumsum(g)
    if kind == "include_initial":
        c = np.cumsum(g)  # np.cumulative_sum(g, include_initial=True), which NumPy < 2.1 lacks
        return np.concatenate([np.zeros(1, c.dtype), c])
    raise ValueError(kind)


def _call(kind, x, flags, comm, out=None):
    if kind == "cumsum":
        return distscan.cumsum(x, out=out, comm=comm)
    if kind == "cumprod":
        return distscan.cumprod(x, out=out, comm=comm)
    if kind == "cummax":
        return distscan.cummax(x, out=out, comm=comm)
    if kind == "cummin":
        return distscan.cummin(x, out=out, comm=comm)
    if kind == "exclusive":
        return distscan.cumsum(x, exclusive=True, out=out, comm=comm)
    if kind == "reverse":
        return distscan.cumsum(x, reverse=True, out=out, comm=comm)
    if kind == "segments":
        return distscan.cumsum(x, segments=flags, out=out, comm=comm)
    if kind == "recurrence":
        return distscan.linear_recurrence(0.5, x.astype(np.float64), out=out, comm=comm)
    if kind == "nancumsum":
        return distscan.nancumsum(x, out=out, comm=comm)
    if kind == "include_initial":
        return distscan.cumulative_sum(x, include_initial=True, out=out, comm=comm)
    raise ValueError(kind)


class HeldResults(RuleBasedStateMachine):
    comm = None  # set by the test

    inputs = Bundle("inputs")

    def __init__(self):
        super().__init__()
        self.held = []  # (array the user holds, its snapshot, what)
        self.live = []  # inputs with their snapshot: (Inputs, snapshot)

    @rule(target=inputs, seed=st.integers(0, 2**31), dtype=st.sampled_from(DTYPES))
    def allocate(self, seed, dtype):
        inp = Inputs(*_global(seed, dtype, self.comm.size), self.comm.rank)
        self.live.append((inp, inp.part.copy()))
        return inp

    @rule(inp=consumes(inputs))
    def drop(self, inp):
        """The user drops an input: its memory may be handed to the next array allocated."""
        self.live = [(i, s) for i, s in self.live if i is not inp]
        del inp
        gc.collect()

    @rule(inp=inputs, seed=st.integers(0, 2**31))
    def mutate(self, inp, seed):
        """New values written into the same array (same address, same dtype and shape)."""
        rng = np.random.default_rng([seed, 3])
        new = rng.integers(0, 5, len(inp.g)).astype(inp.g.dtype)
        inp.g = new
        inp.part[...] = new[inp.lo:inp.hi]
        self.live = [(i, i.part.copy() if i is inp else s) for i, s in self.live]

    @rule(inp=inputs, kind=st.sampled_from(SCANS), flags_seed=st.integers(0, 2**31),
          how=st.sampled_from(["new", "out", "view"]))
    def scan(self, inp, kind, flags_seed, how):
        comm = self.comm
        flags = np.random.default_rng([flags_seed, 4]).random(len(inp.g)) < 0.3
        if kind in ("cumprod", "cummax", "cummin") and inp.g.dtype == np.uint8:
            kind = "cumsum"
        ref = _reference(kind, inp.g, flags)
        lo, hi = inp.lo, inp.hi
        if kind == "include_initial" and comm.rank == 0:
            hi += 1
        elif kind == "include_initial":
            lo, hi = lo + 1, hi + 1
        expected = ref[lo:hi]
        out = np.full(expected.shape, 3, expected.dtype) if how == "out" else None
        y = _call(kind, inp.part, flags[inp.lo:inp.hi], comm, out=out)
        what = f"{kind} of {inp.g.dtype} ({how})"
        held = y[1:] if how == "view" else y

        def check():
            assert out is None or y is out, what
            assert y.dtype == expected.dtype, (what, y.dtype, expected.dtype)
            np.testing.assert_allclose(y, expected, rtol=1e-12, err_msg=what)

        all_ranks_ok(comm, check)
        self.held.append((held, held.copy(), what))

    @rule(inp=inputs, kind=st.sampled_from(["cumsum", "cummax", "reverse", "segments", "recurrence"]),
          flags_seed=st.integers(0, 2**31))
    def scan_in_place(self, inp, kind, flags_seed):
        """``out=`` is the input itself: the input becomes the result, nothing else changes."""
        comm = self.comm
        flags = np.random.default_rng([flags_seed, 4]).random(len(inp.g)) < 0.3
        if kind == "recurrence" or inp.g.dtype != np.int64 and kind != "cummax":
            kind = "cummax"  # the result dtype is the input's
        expected = _reference(kind, inp.g, flags)[inp.lo:inp.hi].astype(inp.g.dtype)
        y = _call(kind, inp.part, flags[inp.lo:inp.hi], comm, out=inp.part)

        def check():
            assert y is inp.part, kind
            np.testing.assert_array_equal(inp.part, expected, err_msg=f"{kind} in place")

        all_ranks_ok(comm, check)
        inp.g = _reference(kind, inp.g, flags).astype(inp.g.dtype)
        self.live = [(i, i.part.copy() if i is inp else s) for i, s in self.live]

    @invariant()
    def nothing_held_changed(self):
        def check():
            for arr, snap, what in self.held:
                np.testing.assert_array_equal(arr, snap, err_msg=f"a held result changed: {what}")
            for inp, snap in self.live:
                np.testing.assert_array_equal(inp.part, snap, err_msg="an input changed")
        all_ranks_ok(self.comm, check)


def test_held_results_and_reused_memory(comm):
    HeldResults.comm = comm
    run_state_machine_as_test(HeldResults, settings=settings(
        max_examples=20, stateful_step_count=15, deadline=None, derandomize=True, database=None,
        phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck), print_blob=False))


def test_a_dropped_array_s_memory_holds_new_content(comm):
    """The same address, size and dtype, other values: the cheap path's kind of call is remembered,
    never its data."""
    size, rank = comm.size, comm.rank
    results = []
    for k in range(6):
        x = np.full(5, k + 1, np.int64) + rank  # often the address of the last iteration's array
        results.append((distscan.cumsum(x, comm=comm), k))
        del x
    g = lambda k: np.concatenate([np.full(5, k + 1, np.int64) + r for r in range(size)])  # noqa: E731
    all_ranks_ok(comm, lambda: [np.testing.assert_array_equal(y, np.cumsum(g(k))[5 * rank:5 * rank + 5])
                                for y, k in results])


def test_out_aliasing_the_input_with_an_offset(comm):
    """``out`` overlapping the input one element further: NumPy's answer, whichever way it overlaps."""
    size, rank = comm.size, comm.rank
    g = np.arange(1, 4 * size + 1, dtype=np.int64)
    for shift in (1, -1):
        buf = np.zeros(6, np.int64)
        x = buf[1:5]
        x[...] = g[4 * rank:4 * rank + 4]
        out = buf[1 + shift:5 + shift]
        expected = np.cumsum(g)[4 * rank:4 * rank + 4]
        y = distscan.cumsum(x, out=out, comm=comm)

        def check():
            assert y is out
            np.testing.assert_array_equal(out, expected, err_msg=f"shift {shift}")

        all_ranks_ok(comm, check)


def test_out_aliasing_the_flags_or_the_coefficients(comm):
    """``out`` that is (or overlaps, one element either way) the segment flags or the recurrence's
    coefficients: the scan of the inputs as they were before the call, as NumPy's buffered operands
    give, on every call of a row (the first calls take the general route, the later ones the plan's
    fused call, whose segmented finish reads its inputs a second time after the exchange)."""
    size, rank = comm.size, comm.rank
    n = 9
    rng = np.random.default_rng(5)
    a_all = rng.uniform(0.5, 1.5, n * size)
    b_all = rng.standard_normal(n * size)
    f_all = rng.random(n * size) < 0.25
    x_all = rng.random(n * size) < 0.5
    mine = slice(n * rank, n * rank + n)

    def recurrence(reverse, segmented):
        return recurrence_reference(a_all, b_all, reverse=reverse, segments=f_all if segmented else None)[mine]

    def laid_in(values, shift):
        """``values`` in a buffer of one element more on each side, and the view ``shift`` on of it."""
        buf = np.zeros(n + 2, values.dtype)
        buf[1:n + 1] = values
        return buf[1:n + 1], buf[1 + shift:n + 1 + shift]

    for call in range(4):
        for reverse in (False, True):
            for shift in (0, 1, -1):
                for segmented in (False, True):
                    a, out = laid_in(a_all[mine], shift)
                    segments = f_all[mine] if segmented else None
                    y = distscan.linear_recurrence(a, b_all[mine], segments=segments, reverse=reverse, out=out,
                                                   comm=comm)
                    what = f"call {call} out=a shifted {shift}, reverse={reverse}, segments={segmented}"
                    all_ranks_ok(comm, lambda: (np.testing.assert_allclose(out, recurrence(reverse, segmented),
                                                                           rtol=1e-12, err_msg=what),
                                                assert_is(y, out)))
                flags, out = laid_in(f_all[mine], shift)
                want = segmented_reference(x_all, f_all, "max", reverse=reverse)[mine]
                y = distscan.scan(x_all[mine], "max", segments=flags, reverse=reverse, out=out, comm=comm)
                what = f"call {call} out=segments shifted {shift}, reverse={reverse}"
                all_ranks_ok(comm, lambda: (np.testing.assert_array_equal(out, want, err_msg=what), assert_is(y, out)))
                # flags that are the bytes of an int8 out
                out = np.zeros(n + 2, np.int8)[1:n + 1]
                flags = out.view(np.bool_)
                flags[...] = f_all[mine]
                x8 = x_all.astype(np.int8)
                want = segmented_reference(x8, f_all, "sum", reverse=reverse, dtype=np.int8)[mine]
                y = distscan.cumsum(x8[mine], segments=flags, reverse=reverse, dtype=np.int8, out=out, comm=comm)
                what = f"call {call} flags viewing the int8 out, reverse={reverse}"
                all_ranks_ok(comm, lambda: (np.testing.assert_array_equal(out, want, err_msg=what), assert_is(y, out)))


def assert_is(y, out):
    assert y is out
