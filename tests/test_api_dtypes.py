"""What no peer states directly, in two modes (serial, and split over the ranks: tests.support.two_modes):
every dtype on random data of 1 to 3 dimensions, float16 sums in float32, integer wrap-around, products
with zeros and overflow (no spurious NaN, also over many chunks), ``dtype=`` narrowing and bool,
scalars as a rank's one element, and ``reduce``.  Comparisons as in tests/test_api_numpy_cases.py.
"""

from __future__ import annotations

import numpy as np
import pytest

import distscan

from tests.support.reference import UFUNCS, numpy_result_dtype
from tests.support.two_modes import ALL_DTYPES, Ctx, check_scan, ops_for

pytestmark = [pytest.mark.anyranks, pytest.mark.timeout(60)]


# ---------------------------------------------------------------------------------------------
# Required coverage beyond the peers' own cases
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_every_dtype_random_multidim(ctx, dtype):
    """Random data of every dtype, 1-3 dims, axis 0/1/-1/None, every operator NumPy has."""
    rng = ctx.rng
    kind = np.dtype(dtype).kind
    for shape in [(37,), (23, 3), (11, 2, 3)]:
        if kind == "b":
            g = rng.integers(0, 2, shape).astype(bool)
        elif kind in "iu":
            info = np.iinfo(dtype)
            g = rng.integers(max(info.min, -100), min(info.max, 100), shape, endpoint=True).astype(dtype)
        elif kind == "c":
            g = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
        else:
            g = rng.standard_normal(shape).astype(dtype)
        for opname in ops_for(dtype):
            x = g
            if opname == "prod" and kind in "fc":
                x = (1 + 0.05 * g).astype(dtype)  # keep long products finite
            for axis in [0, None] + ([1, -1] if len(shape) > 1 else [-1]):
                check_scan(ctx, x, opname, axis=axis)
            check_scan(ctx, x, opname, exclusive=True)


@pytest.mark.manyranks
def test_float16_accumulates_in_float32(ctx):
    """README: numpy.cumsum(ones(3000, float16)) stops at 2048; distscan returns 3000."""
    g = np.ones(3000, np.float16)
    for c in ctx.all_counts(3000):
        got = check_scan(ctx, g, "sum", counts=c)
        ctx.check(lambda: np.testing.assert_array_equal(got, Ctx.rows(np.arange(1, 3001, dtype=np.float16), c, ctx.rank)))


@pytest.mark.manyranks
@pytest.mark.parametrize("strategy", ["reduce_then_scan", "scan_then_add"])
def test_float16_sums_are_rounded_once_by_either_strategy(ctx, strategy):
    """scan_then_add scanned a float16 part into the float16 output and added the offset to that:
    two roundings (122 ulp where the prefix cancels, 2026-11-25).  Multiples of 2^-10 up to 1 in
    size, whose float32 prefix sums are exact: the result is their float64 sums rounded once."""
    g = (ctx.rng.integers(-1024, 1025, 3001) / 1024).astype(np.float16)
    want = np.cumsum(g.astype(np.float64)).astype(np.float16)
    for c in ctx.all_counts(g.size):
        part = Ctx.rows(g, c, ctx.rank)
        got = ctx.run(lambda: distscan.cumsum(part, strategy=strategy, comm=ctx.comm))
        ctx.check(lambda: np.testing.assert_array_equal(got, Ctx.rows(want, c, ctx.rank)))


@pytest.mark.manyranks
def test_float16_state_scans_are_the_float32_scans_rounded(ctx):
    """Segmented max, min, nanmax and logaddexp and linear recurrences of float16 raised numba's
    NotImplementedError (numba has no float16) on the CPU.  They combine in float32, as the
    sums and the GPU kernels do: each is the float32 scan of the same values, rounded once."""
    rng = ctx.rng
    n = 301
    g = rng.standard_normal(n).astype(np.float16)
    g[::37] = np.nan
    flags = rng.random(n) < 0.05
    coef = rng.uniform(0.5, 1.0, n).astype(np.float16)
    calls = {
        "cummax": lambda x, f, a, **kw: distscan.cummax(x, segments=f, **kw),
        "cummin": lambda x, f, a, **kw: distscan.cummin(x, segments=f, **kw),
        "nanmax": lambda x, f, a, **kw: distscan.scan(x, "nanmax", segments=f, **kw),
        "logaddexp": lambda x, f, a, **kw: distscan.scan(x, np.logaddexp, segments=f, **kw),
        "recurrence": lambda x, f, a, **kw: distscan.linear_recurrence(a, x, **kw),
        "segmented recurrence": lambda x, f, a, **kw: distscan.linear_recurrence(a, x, segments=f, **kw),
    }
    for c in ctx.all_counts(n):
        x, f, a = (Ctx.rows(v, c, ctx.rank) for v in (g, flags, coef))
        for name, call in calls.items():
            for reverse in (False, True):
                got = ctx.run(lambda: call(x, f, a, reverse=reverse, comm=ctx.comm))
                want = ctx.run(lambda: call(x.astype(np.float32), f, a.astype(np.float32), reverse=reverse,
                                            comm=ctx.comm))
                ctx.check(lambda: (np.testing.assert_equal(got.dtype, np.float16, err_msg=name),
                                   np.testing.assert_array_equal(got, want.astype(np.float16), err_msg=name)))


@pytest.mark.manyranks
def test_integer_overflow_wraps_like_numpy(ctx):
    """Integer sums and products wrap as NumPy's do, also across rank boundaries."""
    i64 = np.iinfo(np.int64)
    cases = [
        (np.full(12, i64.max // 3, np.int64), "sum", {}),
        (np.array([i64.max, 1, 1, i64.min, -1, -1] * 2, np.int64), "sum", {}),
        (np.full(10, np.iinfo(np.uint64).max // 3, np.uint64), "sum", {}),
        (np.full(9, 100, np.int8), "sum", {"dtype": np.int8}),
        (np.full(9, 200, np.uint8), "sum", {"dtype": np.uint8}),
        (np.arange(1, 100, dtype=np.int64), "prod", {}),                # wraps, then exactly 0
        (np.arange(1, 40, dtype=np.int32), "prod", {"dtype": np.int32}),
        (np.full(20, 3, np.uint32), "prod", {"dtype": np.uint32}),
        (np.full(20, -3, np.int16), "prod", {"dtype": np.int16}),
        (np.arange(1, 30, dtype=np.uint8), "prod", {}),                 # -> uint64
    ]
    for g, opname, kw in cases:
        for c in ctx.all_counts(len(g)):
            check_scan(ctx, g, opname, counts=c, **kw)
            check_scan(ctx, g, opname, counts=c, exclusive=True, **kw)
        part = Ctx.rows(g, ctx.counts(len(g)), ctx.rank).copy()
        total = ctx.run(lambda: distscan.reduce(part, opname, comm=ctx.comm, **kw))
        with np.errstate(all="ignore"):
            exp = UFUNCS[opname].reduce(g, dtype=kw.get("dtype", numpy_result_dtype(opname, g.dtype)))
        ctx.check(lambda: (np.testing.assert_equal(total, exp), np.testing.assert_equal(np.asarray(total).dtype, exp.dtype)))


@pytest.mark.manyranks
@pytest.mark.parametrize("strategy", ["reduce_then_scan", "scan_then_add"])
def test_cumprod_zeros_and_overflow_no_spurious_nan(ctx, strategy):
    """NumPy's cumprod(arange(1320.)) is all zeros; so is every product after a zero when no inf is
    in the input, even where the later partial products alone overflow.  distscan may not turn
    0 * (an overflowed carry) into NaN."""
    cases = [np.arange(1320.0),
             np.array([2.0, 0.0, 1e300, 1e300, 5.0, 1e300, 1e300, 3.0]),
             np.concatenate([[0.0], np.full(50, 1e200)]),
             np.arange(1320.0).astype(np.float32)]
    for g in cases:
        for c in ctx.all_counts(len(g)):
            got = check_scan(ctx, g, "prod", counts=c, extra={"strategy": strategy})
            ctx.check(lambda: np.testing.assert_equal(np.isnan(got).any(), False))
        part = Ctx.rows(g, ctx.counts(len(g)), ctx.rank).copy()
        total = ctx.run(lambda: distscan.reduce(part, "prod", comm=ctx.comm))
        ctx.check(lambda: np.testing.assert_equal(total, g.dtype.type(0)))


def test_cumprod_zeros_and_overflow_long_arrays(ctx):
    """The same, on arrays long enough to be scanned in several chunks inside a rank, with a cast
    (dtype=float32 from float64: NumPy casts, then multiplies: all zeros) and with initial=0."""
    g = np.arange(300_000, dtype=np.float64)
    check_scan(ctx, g, "prod", dtype=np.float32)
    g = np.concatenate([np.full(10, 1e30), np.full(300_000, 1e30)])
    check_scan(ctx, g, "prod", initial=0.0)
    check_scan(ctx, np.arange(1, 300_000, dtype=np.float64), "prod", initial=0.0, exclusive=True)


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int16", "int32", "int64", "uint64", "float16",
                                   "float32", "float64", "complex128"])
def test_dtype_narrowing_and_bool(ctx, dtype):
    """dtype=: narrowing (the input is cast first, as NumPy does and the README states: with
    dtype=float16 the float64 input is rounded to float16 before the float32 accumulation),
    bool -> int, bool -> bool (NumPy's add/multiply on bool are logical or/and)."""
    rng = ctx.rng
    g = rng.integers(-300, 300, 50)
    if np.dtype(dtype).kind == "b":
        g = rng.integers(0, 2, 50).astype(bool)
    elif np.dtype(dtype).kind == "u":
        g = np.abs(g)
    gf = rng.uniform(-300, 300, 50)
    if np.dtype(dtype).kind in "iu":   # float -> int casts out of range are undefined in C: stay inside
        info = np.iinfo(dtype)
        gf = rng.uniform(max(info.min, -300), min(info.max, 300), 50)
    for opname in ("sum", "prod"):
        for src in (g, gf):
            if np.dtype(dtype).kind == "b" and src is gf:
                continue
            src = src if np.dtype(dtype).kind not in "fc" or opname == "sum" else (1 + src / 3000)
            check_scan(ctx, src, opname, dtype=dtype)
            check_scan(ctx, src, opname, dtype=dtype, exclusive=True)
    b = rng.integers(0, 2, 40).astype(bool)
    for dt in ("int8", "uint8", "int32", "int64", "float32", "bool"):
        for opname in ("sum", "prod"):
            check_scan(ctx, b, opname, dtype=dt)
    check_scan(ctx, b, "sum")
    check_scan(ctx, b, "max")
    check_scan(ctx, b, "min")


def test_scalars(ctx):
    """A Python or NumPy scalar is this rank's one element of the global array: exclusive_scan
    returns this rank's exclusive prefix and reduce the global total, both as scalars."""
    v = ctx.rank + 2
    prefix = sum(r + 2 for r in range(ctx.rank))
    total = sum(r + 2 for r in range(ctx.size))
    got = ctx.run(lambda: distscan.exclusive_scan(v, comm=ctx.comm))
    ctx.check(lambda: (np.testing.assert_equal(np.ndim(got), 0), np.testing.assert_equal(isinstance(got, np.ndarray), False),
                       np.testing.assert_equal(got, prefix)))
    got = ctx.run(lambda: distscan.reduce(v, comm=ctx.comm))
    ctx.check(lambda: (np.testing.assert_equal(np.ndim(got), 0), np.testing.assert_equal(isinstance(got, np.ndarray), False),
                       np.testing.assert_equal(got, total)))
    got = ctx.run(lambda: distscan.exclusive_scan(np.int32(v), comm=ctx.comm))
    ctx.check(lambda: (np.testing.assert_equal(np.ndim(got), 0), np.testing.assert_equal(got, prefix),
                       np.testing.assert_equal(np.asarray(got).dtype, np.cumsum(np.int32(1)).dtype)))
    got = ctx.run(lambda: distscan.reduce(np.float32(v), "max", comm=ctx.comm))
    ctx.check(lambda: (np.testing.assert_equal(np.ndim(got), 0), np.testing.assert_equal(got, ctx.size + 1),
                       np.testing.assert_equal(np.asarray(got).dtype, np.float32)))
    got = ctx.run(lambda: distscan.exclusive_scan(True, comm=ctx.comm))    # bool counts as int
    ctx.check(lambda: (np.testing.assert_equal(np.ndim(got), 0), np.testing.assert_equal(got, ctx.rank),
                       np.testing.assert_equal(np.asarray(got).dtype, np.cumsum(True).dtype)))
    got = ctx.run(lambda: distscan.exclusive_scan(float(v), "prod", comm=ctx.comm))
    ctx.check(lambda: (np.testing.assert_equal(np.ndim(got), 0),
                       np.testing.assert_equal(got, float(np.prod([r + 2 for r in range(ctx.rank)])))))


def test_reduce_matches_numpy(ctx):
    """reduce: NumPy's sum/prod/max/min of the global array (dtype included), axis 0 and None;
    empty: sum is 0, max raises ValueError (no identity) on every rank."""
    rng = ctx.rng
    for dtype in ("int8", "uint16", "int64", "float32", "float64", "complex64", "bool"):
        g = rng.integers(0, 5, (17, 3)).astype(dtype)
        for c in ctx.all_counts(17)[:2]:
            part = Ctx.rows(g, c, ctx.rank).copy()
            for opname in ops_for(dtype):
                for axis in (0, None):
                    got = ctx.run(lambda: distscan.reduce(part, opname, axis=axis, comm=ctx.comm))
                    with np.errstate(all="ignore"):
                        if opname in ("sum", "prod"):
                            exp = getattr(np, opname)(g, axis=axis)
                        else:
                            exp = UFUNCS[opname].reduce(g, axis=axis)
                    ctx.check(lambda: (np.testing.assert_allclose(np.asarray(got, np.complex128),
                                                                  np.asarray(exp, np.complex128), rtol=1e-5),
                                       np.testing.assert_equal(np.asarray(got).dtype, np.asarray(exp).dtype)))
    empty = np.empty((0, 2))
    got = ctx.run(lambda: distscan.reduce(empty, comm=ctx.comm))
    ctx.check(lambda: np.testing.assert_array_equal(got, [0.0, 0.0]))
    ctx.raises(ValueError, lambda: distscan.reduce(empty, "max", comm=ctx.comm))


class _FloatSubclass(float):
    pass


@pytest.mark.parametrize("a,held", [(1, True), (1.5, True), (1j, True), (np.int8(1), True), (np.float32(1), True),
                                    (np.complex64(1), True), (True, False), (np.bool_(True), False),
                                    (_FloatSubclass(1), False), (np.array(1.0), False), (np.str_("1"), False),
                                    (None, False)], ids=repr)
def test_a_number_the_host_holds_is_a_python_or_numpy_number_not_a_bool(a, held):
    """One test (``_dtypes.is_host_number``) decides for the cold and the warm route whether a
    linear recurrence's ``a`` is one number read as one device word on the GPU."""
    from distscan._dtypes import is_host_number
    assert is_host_number(a) is held
