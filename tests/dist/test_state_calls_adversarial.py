"""The CPU state scans (segmented scans, linear recurrences, compensated sums) called many times in
a row on one communicator, where the ranks differ and the caller holds, aliases or mutates its
arrays.  From the second or third call of a kind on a communicator the calls take the fused path
(``distscan.dist.lean._fused_state_scan``, ``Loops.fused``, ``Kind.run``/``Kind.aux``), so every
scenario is called several times (at least four) with the same kind, and the ranks change what
they pass between those calls: contiguous arrays, strided views, lists, read-only arrays, memmaps,
Python numbers for the coefficient ``a``, empty and one-element parts; ``out=`` on some ranks,
aliasing the input, the flags or the coefficients (exactly or shifted by one element), of another
dtype; a bad argument on one rank (then every rank raises the same error, and the calls after it
are right); inputs mutated between calls, results held across calls; two communicators and a
split one in turn; NaN and infinities (an infinite or NaN ``a`` times a zero ``y`` gives 0) and
integer wrapping.

Every result is compared with a sequential reference on the concatenation of the parts
(integers exactly, floats within a tolerance relative to the largest magnitude).  Two defects
found when this file was written are mended, and their tests stay: narrow integer carries that
raised instead of wrapping, and float32 NaN-aware segmented scans summed in float64.

Runs serially and under ``mpiexec -n K python -m pytest --with-mpi``.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest

import distscan
from tests.support.ranks import all_ranks_ok, same_outcome
from tests.support.reference import recurrence_reference, segmented_reference
from tests.support.kinds import part_as

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

pytestmark = [pytest.mark.anyranks, pytest.mark.timeout(120)]

CALLS = 5  # calls of one kind in a row: the fused path is taken from the second or third on
N = 7      # rows a rank holds in a regular call


# -- helpers ---------------------------------------------------------------------------------------

def _close(got, ref, tol, what=""):
    got = np.asarray(got)
    if tol is None:
        np.testing.assert_array_equal(got, ref, err_msg=what)
        return
    finite = np.isfinite(ref)
    scale = max(1.0, float(np.max(np.abs(ref[finite]), initial=0.0)))
    np.testing.assert_allclose(got, ref, rtol=0, atol=tol * scale, equal_nan=True, err_msg=what)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref), err_msg=what)


def _expect(comm, outcome, ref, tol=None, what="", out=None):
    def check():
        assert outcome[0] == "ok", (what, outcome)
        if out is not None:
            assert outcome[1] is out, f"{what}: out= not returned"
        _close(outcome[1], ref, tol, what)
    all_ranks_ok(comm, check)


def _counts(comm, pattern):
    return [pattern[r % len(pattern)] for r in range(comm.size)]


def _mine(comm, counts):
    lo = sum(counts[:comm.rank])
    return slice(lo, lo + counts[comm.rank])


KINDS = ["contiguous", "strided", "reversed", "list", "readonly", "memmap"]


FLAG_KINDS = ["bool", "strided", "list", "int8", "readonly"]


def _flags_as(f, kind):
    if kind == "strided":
        b = np.zeros(2 * len(f), bool)
        b[::2] = f
        return b[::2]
    if kind == "list":
        return f.tolist()
    if kind == "int8":
        return f.astype(np.int8)
    if kind == "readonly":
        q = f.copy()
        q.flags.writeable = False
        return q
    return f.copy()


def _compensated_reference(g, reverse, exclusive):
    h = g[::-1] if reverse else g
    ref = np.cumsum(h.astype(np.float64))
    if exclusive:
        ref = np.concatenate([[0.0], ref[:-1]])
    return (ref[::-1] if reverse else ref).astype(g.dtype)


# -- parts of every kind, calls in a row -------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["int64", "float64", "int32"])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("exclusive", [False, True])
def test_segmented_parts_of_every_kind_in_a_row(comm, tmp_path, dtype, reverse, exclusive):
    """Contiguous calls first (the fused path warms up), then each rank changes its part's and its
    flags' kind call by call, with ``out=`` on some ranks, empty and one-element parts."""
    for k in range(3 * CALLS):
        rng = np.random.default_rng(1000 + k)
        counts = _counts(comm, [N] if k < CALLS else [[N], [0, 1, N], [1, N, 0, 2]][k % 3])
        g = rng.integers(-50, 50, sum(counts)).astype(dtype)
        f = rng.random(sum(counts)) < 0.3
        mine = _mine(comm, counts)
        kind = "contiguous" if k < CALLS else KINDS[(k + comm.rank) % len(KINDS)]
        fkind = "bool" if k < CALLS else FLAG_KINDS[(k + 2 * comm.rank) % len(FLAG_KINDS)]
        x = part_as(g[mine], kind, tmp_path, f"x{k}")
        fl = _flags_as(f[mine], fkind)
        ref = segmented_reference(g, f, "sum", exclusive=exclusive, reverse=reverse)[mine]
        out = np.full(counts[comm.rank], 7, ref.dtype) if (k + comm.rank) % 2 else None
        got = same_outcome(comm, lambda: distscan.cumsum(x, segments=fl, reverse=reverse, exclusive=exclusive,
                                                          out=out, comm=comm), False)
        _expect(comm, got, ref, what=f"call {k}: {kind}/{fkind} {counts}", out=out)


@pytest.mark.parametrize("dtype", ["float64", "int64"])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("segmented", [False, True])
def test_recurrence_parts_of_every_kind_in_a_row(comm, tmp_path, dtype, reverse, segmented):
    """``a`` as an array, a strided view, a list, a read-only array or a Python number (one rank
    at a time), ``b`` of every kind, empty and one-element parts, calls in a row."""
    a_kinds = ["contiguous", "strided", "list", "number", "readonly"]
    for k in range(3 * CALLS):
        rng = np.random.default_rng(2000 + k)
        counts = _counts(comm, [N] if k < CALLS else [[N], [0, 1, N], [1, N, 0, 2]][k % 3])
        n = sum(counts)
        if dtype == "int64":
            b, a = rng.integers(-2**40, 2**40, n), rng.integers(-2**20, 2**20, n)
        else:
            b, a = rng.normal(size=n), rng.uniform(-1.2, 1.2, n)
        f = rng.random(n) < 0.3 if segmented else None
        mine = _mine(comm, counts)
        akinds = [a_kinds[(k + r) % len(a_kinds)] if k >= CALLS else "contiguous" for r in range(comm.size)]
        const = a[0].item() if n else 1
        if "number" in akinds:  # every rank's a is that constant
            a[:] = const
        akind = akinds[comm.rank]
        aa = const if akind == "number" else part_as(a[mine], akind)
        bb = part_as(b[mine], KINDS[(k + 2 * comm.rank) % len(KINDS)] if k >= CALLS else "contiguous", tmp_path,
                      f"b{k}")
        fl = None if f is None else f[mine].copy()
        ref = recurrence_reference(a, b, reverse=reverse, segments=f)[mine]
        got = same_outcome(comm, lambda: distscan.linear_recurrence(aa, bb, reverse=reverse, segments=fl, comm=comm),
                            False)
        _expect(comm, got, ref, None if dtype == "int64" else 1e-9, what=f"call {k}: a {akind} {counts}")


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("exclusive", [False, True])
def test_compensated_parts_of_every_kind_in_a_row(comm, tmp_path, dtype, reverse, exclusive):
    for k in range(3 * CALLS):
        rng = np.random.default_rng(3000 + k)
        counts = _counts(comm, [N] if k < CALLS else [[N], [0, 1, N], [1, N, 0, 2]][k % 3])
        g = rng.integers(-50, 50, sum(counts)).astype(dtype)  # whole numbers: exact in any order
        mine = _mine(comm, counts)
        kind = KINDS[(k + comm.rank) % len(KINDS)] if k >= CALLS else "contiguous"
        x = part_as(g[mine], kind, tmp_path, f"x{k}")
        out = np.empty(counts[comm.rank], dtype) if (k + comm.rank) % 3 == 0 else None
        got = same_outcome(comm, lambda: distscan.scan(x, "sum", compensated=True, reverse=reverse,
                                                        exclusive=exclusive, out=out, comm=comm), False)
        _expect(comm, got, _compensated_reference(g, reverse, exclusive)[mine], what=f"call {k}: {kind}", out=out)


# -- non-finite values, the zero rule, integer wrapping ---------------------------------------------

def _one_sign_of_infinity(a, reverse):
    """+1 or -1 for each row: the sign of the product of the coefficients from the scan's start
    to the row (the real parts; NaN counts as +1).  A ``b[j]`` of this sign adds to every later
    ``y[i]`` a term of the sign of the product up to ``i``, whichever ``j``: every term of every
    ``y[i]`` has one sign, so no association of the recurrence (parts, carries, their fold) meets
    ``+inf`` with ``-inf`` or cancels to zero, which docs/operators.md leaves open (NaN there)."""
    s = np.where(np.real(a) < 0, -1.0, 1.0)
    return np.cumprod(s[::-1])[::-1] if reverse else np.cumprod(s)


@pytest.mark.manyranks  # its seeds failed at 5 to 8 ranks only (the fold of the carries): CI's 8-rank run too
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("segmented", [False, True])
@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_zero_rule_at_the_part_boundaries_in_a_row(comm, reverse, segmented, dtype):
    """Infinite and NaN coefficients at the first and last row of every part, with ``y == 0``
    before most of them: the zero rule holds wherever the array is split.  The nonzero ``b`` take
    the sign of :func:`_one_sign_of_infinity`: with random signs, a part whose own values became
    infinite met the carry of the parts before it, infinite of the other sign, in the fold of the
    carries (NaN where the sequential loop keeps an infinity, the exception docs/operators.md
    documents), at 5 to 8 ranks with these seeds."""
    n = N * comm.size
    mine = _mine(comm, [N] * comm.size)
    infinite = 0
    for k in range(CALLS + 1):
        rng = np.random.default_rng(4000 + k)
        b = np.zeros(n)
        b[rng.integers(0, n, 3)] = np.abs(rng.normal(size=3))
        a = rng.uniform(-1, 1, n).astype(dtype)
        a[rng.integers(0, n, 4)] = [np.inf, -np.inf, np.nan, np.inf]
        for r in range(comm.size):
            a[N * r] = np.inf if k % 2 else np.nan
            a[N * r + N - 1] = -np.inf
        b = (b * _one_sign_of_infinity(a, reverse) * (-1) ** k).astype(dtype)
        f = rng.random(n) < 0.2 if segmented else None
        whole = recurrence_reference(a, b, reverse=reverse, segments=f)
        infinite += int(np.isinf(whole).sum())
        ref = whole[mine]
        got = same_outcome(comm, lambda: distscan.linear_recurrence(
            a[mine].copy(), b[mine].copy(), reverse=reverse, segments=None if f is None else f[mine].copy(),
            comm=comm), False)
        _expect(comm, got, ref, 1e-12, what=f"call {k}")
    assert infinite > 0  # the results hold infinities (carried across splits from 2 ranks on), not only NaN


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("exclusive", [False, True])
def test_compensated_nonfinite_in_a_row(comm, dtype, reverse, exclusive):
    """inf, -inf, NaN, inf and -inf together (NaN), and sums that overflow: IEEE's results."""
    n = N * comm.size
    mine = _mine(comm, [N] * comm.size)
    for k in range(CALLS):
        rng = np.random.default_rng(5000 + k)
        g = rng.integers(-5, 5, n).astype(dtype)
        pos = rng.integers(0, n, 2)
        g[pos[0]] = [np.inf, -np.inf, np.nan, np.inf, 1.0][k]
        if k == 3:
            g[pos[1]] = -np.inf
        with np.errstate(all="ignore"):
            if k == 4:
                g[:] = np.finfo(dtype).max / 2
                h = g[::-1] if reverse else g
                ref = np.cumsum(h)
                if exclusive:
                    ref = np.concatenate([[0], ref[:-1]]).astype(dtype)
                ref = ref[::-1] if reverse else ref
            else:
                ref = _compensated_reference(g, reverse, exclusive)
        got = same_outcome(comm, lambda: distscan.scan(g[mine].copy(), "sum", compensated=True, reverse=reverse,
                                                        exclusive=exclusive, comm=comm), False)
        _expect(comm, got, ref[mine], what=f"call {k}")


@pytest.mark.parametrize("reverse", [False, True])
def test_nancumsum_segmented_in_a_row(comm, reverse):
    n = N * comm.size
    mine = _mine(comm, [N] * comm.size)
    for k in range(CALLS):
        rng = np.random.default_rng(6000 + k)
        g = rng.integers(-5, 5, n).astype(float)
        g[rng.random(n) < 0.3] = np.nan
        f = rng.random(n) < 0.3
        got = same_outcome(comm, lambda: distscan.nancumsum(g[mine].copy(), segments=f[mine].copy(),
                                                             reverse=reverse, comm=comm), False)
        _expect(comm, got, segmented_reference(g, f, "nansum", reverse=reverse)[mine], what=f"call {k}")


@pytest.mark.parametrize("reverse", [False, True])
def test_int64_recurrence_wraps_in_a_row(comm, reverse):
    n = N * comm.size
    mine = _mine(comm, [N] * comm.size)
    for k in range(CALLS):
        rng = np.random.default_rng(7000 + k)
        b, a = rng.integers(-2**62, 2**62, n), rng.integers(-2**62, 2**62, n)
        got = same_outcome(comm, lambda: distscan.linear_recurrence(a[mine].copy(), b[mine].copy(), reverse=reverse,
                                                                     comm=comm), False)
        _expect(comm, got, recurrence_reference(a, b, reverse=reverse)[mine], what=f"call {k}")


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32"])
@pytest.mark.parametrize("call", ["segmented", "segmented reverse", "recurrence"])
def test_narrow_integer_state_carries_wrap_like_numpy(comm, dtype, call):
    """A narrow integer state scan whose part's carry leaves the dtype's range wraps, as NumPy (and
    distscan on one rank) does.  It raised ``OverflowError: Python integer ... out of bounds for
    int8`` on every rank: the one-column numba loops accumulate in int64 (numba's integer
    promotion) and returned that Python int, which the carry's narrow field refused; they now cast
    what they return to the accumulator dtype (``AS_ACC``).  Parts of several columns wrapped
    already (their states are arrays of the accumulator dtype)."""
    big = {"int8": 100, "uint8": 200, "int16": 30000, "int32": 2**30 + 1}[dtype]
    n = 4 * comm.size
    mine = _mine(comm, [4] * comm.size)
    g = np.full(n, big, dtype)
    f = np.zeros(n, bool)
    f[1] = True
    a = np.full(n, 3, dtype)
    with np.errstate(over="ignore"):
        if call == "recurrence":
            ref = recurrence_reference(a, g)  # a*y + b in dtype, wrapping
            fn = lambda: distscan.linear_recurrence(a[mine].copy(), g[mine].copy(), comm=comm)  # noqa: E731
        else:
            reverse = call.endswith("reverse")
            ref = segmented_reference(g, f, "sum", reverse=reverse, dtype=dtype)
            fn = lambda: distscan.cumsum(g[mine].copy(), segments=f[mine].copy(), dtype=dtype,  # noqa: E731
                                         reverse=reverse, comm=comm)
    for k in range(CALLS - 1):
        got = same_outcome(comm, fn, what=f"call {k}")
        _expect(comm, got, ref[mine], what=f"call {k}")


@pytest.mark.parametrize("op", ["nansum", "nanprod"])
def test_segmented_nan_ops_of_float32_accumulate_in_float32(comm, op):
    """A segmented ``nansum``/``nanprod`` of float32 accumulates in float32, as NumPy's float32
    ``nancumsum``/``nancumprod`` do (the loops' NaN lift once unified ``b`` with an int literal as
    float64, and the segment was summed in float64).  The first two ranks' parts are NumPy's bits
    (the second's seed is the first part's last sum, a sequential prefix); a later part's seed is a
    fold of carries (another association), within float32 rounding of NumPy's."""
    rng = np.random.default_rng(8)
    n = 500 * comm.size
    mine = _mine(comm, [500] * comm.size)
    g = rng.normal(size=n).astype(np.float32)
    if op == "nanprod":
        g = np.abs(g) * 0.2 + 0.9
    g[::7] = np.nan
    ref = (np.nancumsum if op == "nansum" else np.nancumprod)(g)
    for k in range(CALLS - 1):
        got = same_outcome(comm, lambda: distscan.scan(g[mine].copy(), op, segments=np.zeros(500, bool), comm=comm),
                            False)
        _expect(comm, got, ref[mine], tol=None if comm.rank <= 1 else 1e-5, what=f"call {k}")


# -- out= aliasing (regression: the one-element shift was just fixed) ------------------------------

def _aliased(kind, shift, values, dtype):
    """``(input view, out view)`` of one buffer: the same memory (shift 0) or shifted by one."""
    n = len(values)
    buf = np.zeros(n + 1, dtype)
    views = {0: (buf[:n], buf[:n]), 1: (buf[1:], buf[:n]), -1: (buf[:n], buf[1:])}[shift]
    views[0][:] = values
    return views


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("shift", [0, 1, -1])
def test_out_aliasing_the_inputs_in_a_row(comm, reverse, shift):
    """``out=`` that is (or overlaps by all but one element) ``x``, ``b``, ``a`` or the flags, on
    every rank or on one only, calls in a row: the scan of the inputs as they were."""
    n = N * comm.size
    mine = _mine(comm, [N] * comm.size)
    for k in range(CALLS):
        rng = np.random.default_rng(9000 + k)
        gb, ga, gf = rng.normal(size=n), rng.uniform(-1, 1, n), rng.random(n) < 0.3
        gi, gx = rng.integers(-9, 9, n), rng.random(n) < 0.3
        aliasing = k % 2 == 0 or comm.rank == k % comm.size  # every rank, or one rank alone
        ref = recurrence_reference(ga, gb, reverse=reverse, segments=gf)[mine]
        # out aliasing a
        a_v, o_v = _aliased("a", shift, ga[mine], float) if aliasing else (ga[mine].copy(), None)
        got = same_outcome(comm, lambda: distscan.linear_recurrence(a_v, gb[mine].copy(), reverse=reverse,
                                                                     segments=gf[mine].copy(), out=o_v, comm=comm),
                            False)
        _expect(comm, got, ref, 1e-9, what=f"call {k}: out aliases a", out=o_v)
        # out aliasing b
        b_v, o_v = _aliased("b", shift, gb[mine], float) if aliasing else (gb[mine].copy(), None)
        got = same_outcome(comm, lambda: distscan.linear_recurrence(ga[mine].copy(), b_v, reverse=reverse,
                                                                     segments=gf[mine].copy(), out=o_v, comm=comm),
                            False)
        _expect(comm, got, ref, 1e-9, what=f"call {k}: out aliases b", out=o_v)
        # out aliasing the flags (a segmented logical_or is bool like them)
        f_v, o_v = _aliased("f", shift, gf[mine], bool) if aliasing else (gf[mine].copy(), None)
        got = same_outcome(comm, lambda: distscan.scan(gx[mine].copy(), "logical_or", segments=f_v, reverse=reverse,
                                                        out=o_v, comm=comm), False)
        _expect(comm, got, segmented_reference(gx, gf, "logical_or", reverse=reverse)[mine],
                what=f"call {k}: out aliases the flags", out=o_v)
        # out aliasing x of a segmented sum and of a compensated sum
        x_v, o_v = _aliased("x", shift, gi[mine], np.int64) if aliasing else (gi[mine].copy(), None)
        got = same_outcome(comm, lambda: distscan.cumsum(x_v, segments=gf[mine].copy(), reverse=reverse, out=o_v,
                                                          comm=comm), False)
        _expect(comm, got, segmented_reference(gi, gf, "sum", reverse=reverse)[mine], what=f"call {k}: out aliases x",
                out=o_v)
        gc_ = gi.astype(float)
        x_v, o_v = _aliased("x", shift, gc_[mine], float) if aliasing else (gc_[mine].copy(), None)
        got = same_outcome(comm, lambda: distscan.scan(x_v, "sum", compensated=True, reverse=reverse, out=o_v,
                                                        comm=comm), False)
        _expect(comm, got, _compensated_reference(gc_, reverse, False)[mine],
                what=f"call {k}: compensated out aliases x", out=o_v)


@pytest.mark.parametrize("reverse", [False, True])
def test_out_of_another_dtype_on_some_ranks_in_a_row(comm, reverse):
    """int32 ``out=`` for an int64 segmented sum (NumPy's wrapping cast) and float32 ``out=`` for a
    float64 recurrence, on some ranks, alternating with warm calls."""
    n = N * comm.size
    mine = _mine(comm, [N] * comm.size)
    for k in range(2 * CALLS):
        rng = np.random.default_rng(9500 + k)
        gx, gf = rng.integers(-2**40, 2**40, n), rng.random(n) < 0.3
        ref = segmented_reference(gx, gf, "sum", reverse=reverse)[mine]
        out = np.empty(N, np.int32) if (comm.rank + k) % 2 else None
        got = same_outcome(comm, lambda: distscan.cumsum(gx[mine].copy(), segments=gf[mine].copy(), reverse=reverse,
                                                          out=out, comm=comm), False)
        _expect(comm, got, ref if out is None else ref.astype(np.int32), what=f"call {k}", out=out)
        gb, ga = rng.normal(size=n), rng.uniform(-1, 1, n)
        ref = recurrence_reference(ga, gb, reverse=reverse, segments=gf)[mine]
        out = np.empty(N, np.float32) if (comm.rank + k) % 2 else np.empty(N)
        got = same_outcome(comm, lambda: distscan.linear_recurrence(ga[mine].copy(), gb[mine].copy(),
                                                                     segments=gf[mine].copy(), reverse=reverse,
                                                                     out=out, comm=comm), False)
        _expect(comm, None if got[0] != "ok" else ("ok", got[1].astype(float)), ref, 1e-6, what=f"call {k}")


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("reverse", [False, True])
def test_a_cast_that_raises_on_one_rank_only_raises_everywhere(comm, reverse):
    """A float32 ``out=`` whose cast overflows, under ``np.errstate(all="raise")`` on one rank only:
    every rank raises that rank's FloatingPointError; the calls after it are right."""
    n = N * comm.size
    mine = _mine(comm, [N] * comm.size)
    ones = np.ones(n)
    for k in range(CALLS):
        odd = k % comm.size
        out = np.empty(N, np.float32) if comm.rank == odd else None
        with (np.errstate(all="raise") if comm.rank == odd else np.errstate()):
            same_outcome(comm, lambda: distscan.linear_recurrence(ones[mine].copy(), np.full(N, 1e200),
                                                                   reverse=reverse, out=out, comm=comm), True)
        got = same_outcome(comm, lambda: distscan.linear_recurrence(ones[mine].copy(), ones[mine].copy(),
                                                                     reverse=reverse, comm=comm), False)
        _expect(comm, got, recurrence_reference(ones, ones, reverse=reverse)[mine], what=f"call {k}")


# -- mutation between calls, held results ------------------------------------------------------------

@pytest.mark.parametrize("reverse", [False, True])
def test_inputs_mutated_between_calls_and_results_held(comm, reverse):
    """The same x, flags and a arrays, overwritten in place between calls (no stale state), and
    results dropped or held (a reallocated array at the same address): held results never change."""
    n = N * comm.size
    mine = _mine(comm, [N] * comm.size)
    x, fl, a = np.empty(N, np.int64), np.empty(N, bool), np.empty(N, np.int64)
    xf = np.empty(N)
    held = []
    for k in range(2 * CALLS):
        rng = np.random.default_rng(10000 + k)
        gx, gf, ga = rng.integers(-9, 9, n), rng.random(n) < 0.3, rng.integers(-3, 3, n)
        x[:], fl[:], a[:] = gx[mine], gf[mine], ga[mine]
        xf[:] = gx[mine]
        y = (distscan.cumsum(x, segments=fl, reverse=reverse, comm=comm),
             distscan.linear_recurrence(a, x, reverse=reverse, segments=fl, comm=comm),
             distscan.linear_recurrence(a, x, reverse=reverse, comm=comm),
             distscan.scan(xf, "sum", compensated=True, reverse=reverse, comm=comm))
        refs = (segmented_reference(gx, gf, "sum", reverse=reverse)[mine],
                recurrence_reference(ga, gx, reverse=reverse, segments=gf)[mine],
                recurrence_reference(ga, gx, reverse=reverse)[mine],
                _compensated_reference(gx.astype(float), reverse, False)[mine])
        if k % 2:
            held.append((k, y, refs))
        del y
        gc.collect()

    def check():
        for k, ys, refs in held:
            for i, (y, ref) in enumerate(zip(ys, refs)):
                _close(y, ref, None, f"held call {k}, result {i}")
    all_ranks_ok(comm, check)


# -- a bad argument on one rank, then good calls ------------------------------------------------------

def _bad_calls(comm, g):
    """name -> (fn(me), must_fail): ``me`` says whether this rank is the one that misbehaves."""
    gx, gf, ga, gb = g
    mine = _mine(comm, [N] * comm.size)
    x, f = (lambda: gx[mine].copy()), (lambda: gf[mine].copy())
    a, b = (lambda: ga[mine].copy()), (lambda: gb[mine].copy())

    def readonly_out():
        o = np.empty(N, np.int64)
        o.flags.writeable = False
        return o

    return {
        "flags short": (lambda me: distscan.cumsum(x(), segments=f()[:-1] if me else f(), comm=comm), True),
        "flags long": (lambda me: distscan.cumsum(x(), segments=np.r_[f(), True] if me else f(), comm=comm), True),
        "flags 2-D": (lambda me: distscan.cumsum(x(), segments=f().reshape(-1, 1) if me else f(), comm=comm), True),
        "flags int": (lambda me: distscan.cumsum(x(), segments=f().astype(np.int32) if me else f(), comm=comm), False),
        "no flags": (lambda me: distscan.cumsum(x(), segments=None if me else f(), comm=comm), comm.size > 1),
        "subtract": (lambda me: distscan.scan(x(), np.subtract if me else "sum", segments=f(), comm=comm), True),
        "reverse": (lambda me: distscan.cumsum(x(), segments=f(), reverse=me, comm=comm), comm.size > 1),
        "exclusive": (lambda me: distscan.cumsum(x(), segments=f(), exclusive=me, comm=comm), comm.size > 1),
        "readonly out": (lambda me: distscan.cumsum(x(), segments=f(), out=readonly_out() if me else None,
                                                    comm=comm), True),
        "out shape": (lambda me: distscan.cumsum(x(), segments=f(), out=np.empty(N + 1, np.int64) if me else None,
                                                 comm=comm), True),
        "a short": (lambda me: distscan.linear_recurrence(a()[:-1] if me else a(), b(), comm=comm), True),
        "a object": (lambda me: distscan.linear_recurrence(np.array([None] * N) if me else a(), b(), comm=comm), True),
        "a 2**70": (lambda me: distscan.linear_recurrence(2**70 if me else 1, x(), comm=comm), True),
        "a complex": (lambda me: distscan.linear_recurrence(0.5j if me else 0.5, b(), comm=comm), comm.size > 1),
        "a float32": (lambda me: distscan.linear_recurrence(a().astype(np.float32) if me else a(),
                                                            b().astype(np.float32), comm=comm), comm.size > 1),
        "segmented a short": (lambda me: distscan.linear_recurrence(a()[:-1] if me else a(), b(), segments=f(),
                                                                    comm=comm), True),
        "segmented flags short": (lambda me: distscan.linear_recurrence(a(), b(), segments=f()[:-1] if me else f(),
                                                                        comm=comm), True),
        "initial differs": (lambda me: distscan.linear_recurrence(a(), b(), initial=1.0 if me else 2.0, comm=comm),
                            comm.size > 1),
        "compensated one rank": (lambda me: distscan.scan(b(), "sum", compensated=me, comm=comm), comm.size > 1),
        "compensated int": (lambda me: distscan.scan(x() if me else b(), "sum", compensated=True, comm=comm), True),
        "compensated segments": (lambda me: distscan.scan(b(), "sum", compensated=True, segments=f() if me else None,
                                                          comm=comm), True),
    }


BAD = ["flags short", "flags long", "flags 2-D", "flags int", "no flags", "subtract", "reverse", "exclusive",
       "readonly out", "out shape", "a short", "a object", "a 2**70", "a complex", "a float32", "segmented a short",
       "segmented flags short", "initial differs", "compensated one rank", "compensated int", "compensated segments"]


def _good_calls(comm, g, what):
    gx, gf, ga, gb = g
    mine = _mine(comm, [N] * comm.size)
    for reverse in (False, True):
        for k in range(2):
            got = same_outcome(comm, lambda: distscan.cumsum(gx[mine].copy(), segments=gf[mine].copy(),
                                                              reverse=reverse, comm=comm), False, what)
            _expect(comm, got, segmented_reference(gx, gf, "sum", reverse=reverse)[mine], what=what)
            got = same_outcome(comm, lambda: distscan.linear_recurrence(ga[mine].copy(), gb[mine].copy(),
                                                                         segments=gf[mine].copy(), reverse=reverse,
                                                                         comm=comm), False, what)
            _expect(comm, got, recurrence_reference(ga, gb, reverse=reverse, segments=gf)[mine], 1e-9, what=what)
            got = same_outcome(comm, lambda: distscan.linear_recurrence(ga[mine].copy(), gb[mine].copy(),
                                                                         reverse=reverse, comm=comm), False, what)
            _expect(comm, got, recurrence_reference(ga, gb, reverse=reverse)[mine], 1e-9, what=what)
            got = same_outcome(comm, lambda: distscan.scan(gb[mine].copy(), "sum", compensated=True, reverse=reverse,
                                                            comm=comm), False, what)
            ref = np.cumsum(gb[::-1])[::-1] if reverse else np.cumsum(gb)
            _expect(comm, got, ref[mine], 1e-12, what=what)


@pytest.mark.parametrize("bad", BAD)
def test_a_bad_argument_on_one_rank_beside_warm_calls(comm, bad):
    """After warm calls of every state kind, the first and the last rank in turn pass a bad
    argument (twice): every rank raises the same exception (or, for an argument every rank may
    pass alike, succeeds), and the calls after it, of every kind, are right."""
    n = N * comm.size
    rng = np.random.default_rng(11000)
    g = (rng.integers(-9, 9, n), rng.random(n) < 0.3, rng.uniform(-1, 1, n), rng.normal(size=n))
    _good_calls(comm, g, "warm")
    fn, must_fail = _bad_calls(comm, g)[bad]
    for odd in sorted({0, comm.size - 1}):
        for rep in range(2):
            same_outcome(comm, lambda: fn(comm.rank == odd), must_fail, f"{bad} on rank {odd}, {rep}")
        _good_calls(comm, g, f"after {bad} on rank {odd}")


# -- communicators in turn --------------------------------------------------------------------------

def test_two_communicators_and_a_split_one_in_turn(comm):
    """Calls of each kind on two duplicates and a split communicator (ranks in reverse order) in
    turn, alternating reverse/forward, exclusive/inclusive and segments/none."""
    c1, c2 = comm.Dup(), comm.Dup()
    sub = comm.Split(0, comm.size - 1 - comm.rank)
    try:
        n = N * comm.size
        for k in range(4 * CALLS):
            rng = np.random.default_rng(12000 + k)
            gx, gf, ga, gb = rng.integers(-9, 9, n), rng.random(n) < 0.3, rng.integers(-2, 3, n), rng.normal(size=n)
            c = [c1, c2, sub][k % 3]
            mine = _mine(c, [N] * c.size)
            reverse, exclusive, segmented = bool(k // 3 % 2), bool(k // 2 % 2), bool(k % 2)
            got = same_outcome(c, lambda: distscan.cumsum(gx[mine].copy(), segments=gf[mine].copy(), reverse=reverse,
                                                           exclusive=exclusive, comm=c), False)
            _expect(c, got, segmented_reference(gx, gf, "sum", reverse=reverse, exclusive=exclusive)[mine],
                    what=f"call {k}")
            fl = gf[mine].copy() if segmented else None
            got = same_outcome(c, lambda: distscan.linear_recurrence(ga[mine].copy(), gx[mine].copy(), reverse=reverse,
                                                                      segments=fl, comm=c), False)
            _expect(c, got, recurrence_reference(ga, gx, reverse=reverse, segments=gf if segmented else None)[mine],
                    what=f"call {k}")
            got = same_outcome(c, lambda: distscan.scan(gb[mine].copy(), "sum", compensated=True, reverse=reverse,
                                                         exclusive=exclusive, comm=c), False)
            ref = np.cumsum(gb[::-1])[::-1] if reverse else np.cumsum(gb)
            _expect(c, got, (ref - gb if exclusive else ref)[mine], 1e-12, what=f"call {k}")
    finally:
        for c in (c1, c2, sub):
            c.Free()


# -- hypothesis: sequences of calls where the ranks differ ------------------------------------------

PROFILE = settings(max_examples=20, deadline=None, derandomize=True, database=None,
                   phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck),
                   print_blob=False)
CALL_KINDS = ["segmented", "recurrence", "segmented recurrence", "compensated"]


@st.composite
def call_sequences(draw):
    kind = draw(st.sampled_from(CALL_KINDS))
    steps = draw(st.lists(st.fixed_dictionaries({
        "seed": st.integers(0, 2**31),
        "counts": st.lists(st.sampled_from([0, 1, 2, 5, 9, 9]), min_size=4, max_size=4),
        "kinds": st.lists(st.sampled_from(KINDS[:5]), min_size=4, max_size=4),
        "akinds": st.lists(st.sampled_from(["array", "strided", "number"]), min_size=4, max_size=4),
        "outs": st.lists(st.sampled_from([None, "out", "alias"]), min_size=4, max_size=4),
        "reverse": st.booleans(),
    }), min_size=CALLS, max_size=CALLS + 3))
    return kind, draw(st.booleans()), steps


@PROFILE
@given(seq=call_sequences())
def test_sequences_of_calls_where_ranks_differ(comm, seq):
    """A kind of call ``CALLS`` or more times in a row (the same ``reverse`` in the first two, so
    that the fused path warms up), each rank passing its part, ``a`` and ``out=`` in a kind of its
    own in each call (contiguous, strided, reversed, list, read-only; ``a`` a number; ``out`` its
    own or aliasing the input)."""
    kind, exclusive, steps = seq
    exclusive = exclusive and kind in ("segmented", "compensated")
    for k, step in enumerate(steps):
        counts = _counts(comm, step["counts"]) if k >= 2 else _counts(comm, [9])
        n = sum(counts)
        mine = _mine(comm, counts)
        reverse = steps[0]["reverse"] if k < 2 else step["reverse"]
        rng = np.random.default_rng(step["seed"])
        part_kind = step["kinds"][comm.rank % 4] if k >= 2 else "contiguous"
        out_kind = step["outs"][comm.rank % 4] if k >= 2 else None
        if kind == "compensated":
            g = rng.integers(-50, 50, n).astype(float)
            ref = _compensated_reference(g, reverse, exclusive)[mine]
            call = lambda x, out: distscan.scan(x, "sum", compensated=True, reverse=reverse,  # noqa: E731
                                                exclusive=exclusive, out=out, comm=comm)
            tol = None
        elif kind == "segmented":
            g, f = rng.integers(-2**40, 2**40, n), rng.random(n) < 0.3
            ref = segmented_reference(g, f, "sum", reverse=reverse, exclusive=exclusive)[mine]
            fl = f[mine].copy()
            call = lambda x, out: distscan.cumsum(x, segments=fl, reverse=reverse, exclusive=exclusive,  # noqa: E731
                                                  out=out, comm=comm)
            tol = None
        else:
            g, a = rng.normal(size=n), rng.uniform(-1.1, 1.1, n)
            akinds = [step["akinds"][r % 4] if k >= 2 else "array" for r in range(comm.size)]
            const = a[0].item() if n else 0.5
            if "number" in akinds:
                a[:] = const
            f = rng.random(n) < 0.3 if kind == "segmented recurrence" else None
            ref = recurrence_reference(a, g, reverse=reverse, segments=f)[mine]
            ak = akinds[comm.rank]
            aa = const if ak == "number" else part_as(a[mine], "strided" if ak == "strided" else "contiguous")
            fl = None if f is None else f[mine].copy()
            call = lambda x, out: distscan.linear_recurrence(aa, x, reverse=reverse, segments=fl, out=out,  # noqa: E731
                                                             comm=comm)
            tol = 1e-9
        x = part_as(g[mine], part_kind)
        out = None
        if out_kind == "out":
            out = np.empty(counts[comm.rank], ref.dtype)
        elif out_kind == "alias" and isinstance(x, np.ndarray) and x.flags.writeable and x.dtype == ref.dtype:
            out = x
        got = same_outcome(comm, lambda: call(x, out), False, f"call {k}")
        _expect(comm, got, ref, tol, what=f"call {k}: {kind} {part_kind} out={out_kind} {counts}", out=out)
