"""GPU tests of issue 30's scans (skipped without a GPU): the new functors, reverse scans,
segmented scans, linear recurrences, compensated sums and include_initial, through the API on
CuPy arrays, against the CPU path on the same data (which tests/ops/ checks against
sequential references): integers bit for bit, floats within the bounds stated there.

Sizes cross the warp, tile and look-back window boundaries and the look-ahead threshold;
outputs are poisoned first; parts of several columns, misaligned views, ``out=``; the carry of
a part (the ordered reduction) against the CPU's; 64-bit indexing past 2^31 items.
"""

from __future__ import annotations

import numpy as np
import pytest

import distscan
from distscan._dtypes import scan_types
from distscan.ops import affine, get_op, segmented

from tests.support.data import COMPLEX_NONFINITE, complex_zero_rule_case, zero_rule_case
from tests.support.devices import require_gpu
from tests.support.ranks import SELF
from tests.support.reference import (COMPENSATED_UNIT_LOG2, assert_compensated, compensated_case,
                                     nonfinite_at_zero_states, recurrence_reference, segmented_reference)

cp = require_gpu()
pytestmark = pytest.mark.gpu

from distscan.backends import cuda as gpu  # noqa: E402
from distscan.backends import cpu as cpu_backend  # noqa: E402
from distscan.backends.cuda import compile as cc  # noqa: E402
from distscan.backends.cuda import extended  # noqa: E402
from distscan.ops import compensated  # noqa: E402


SIZES = [1, 31, 257, 8193, 100_003, (1 << 22) + 1]  # past 2^21 8-byte items: the look-ahead kernel
LARGE = (1 << 23) + 5  # past the look-ahead threshold of 4-byte items
HYPOT = distscan.Operator("hypot", np.hypot, identity=0.0, cuda="hypot(a, b)", commutative=True)
SATURATING = distscan.Operator("saturating add", lambda a, b: np.minimum(a + b, 10**6), identity=0, kinds="i",
                               cuda="(a + b < 1000000) ? a + b : 1000000")


@pytest.fixture(scope="module", autouse=True)
def _precompiled():
    """Compile every module this file may need in parallel processes (CuPy's disk cache): the
    plain modules of the new functors, and the extended ones of each operator, dtype and
    direction on both device algorithms."""
    keys = set()

    def plain(op, dt):
        keys.add(gpu.module_key(np.dtype(dt), scan_types(op, np.dtype(dt)), op))

    def ext(op, dt, directions=(False, True)):
        in_dt = np.dtype(dt)
        for reverse in directions:
            for device in ("lookback", "lookahead"):
                keys.add(extended.ext_module_key(in_dt, scan_types(op, in_dt), op, device, reverse))

    for name, dt in [("nansum", "float32"), ("nanprod", "float64"), ("nanmax", "float32"), ("nanmin", "float64"),
                     ("logaddexp", "float32"), ("logaddexp2", "float64"), ("gcd", "int64"), ("lcm", "int32")]:
        plain(get_op(name), dt)
        ext(get_op(name), dt, (True,))  # forwards: the plain module
    for name, dt in [("sum", "int32"), ("sum", "float32"), ("sum", "float64"), ("max", "int64"), ("prod", "complex64"),
                     ("bitwise_xor", "uint8"), ("min", "float16"), ("sum", "int8")]:
        ext(get_op(name), dt, (True,))
    for name, dt in [("sum", "int32"), ("sum", "float32"), ("max", "float64"), ("nansum", "float64"),
                     ("prod", "int64"), ("sum", "int8"), ("sum", "int64"), ("gcd", "int64"), ("lcm", "int64"),
                     ("prod", "float32"), ("prod", "float64"), ("nanprod", "float32"), ("nanprod", "float64"),
                     ("sum", "complex128")]:
        ext(segmented(get_op(name), False), dt, (False,))
        ext(segmented(get_op(name), True), dt, (True,))
    for dt in ["float32", "float64", "complex64", "complex128", "int64"]:
        for segs in (False, True):
            for reverse in (False, True):
                ext(affine(segs, reverse), dt, (reverse,))
    ext(compensated(get_op("sum")), "float32")
    ext(HYPOT, "float64")
    ext(SATURATING, "int64")
    cc.precompile(sorted(keys, key=repr))
    yield


def _close(got, ref, dtype, bound_scale):
    got, ref = cp.asnumpy(got), np.asarray(ref)
    assert got.shape == ref.shape and got.dtype == ref.dtype, (got.shape, ref.shape, got.dtype, ref.dtype)
    if np.dtype(dtype).kind in "biu":
        np.testing.assert_array_equal(got, ref)
        return
    eps = np.finfo(np.dtype(dtype)).eps
    tol = 64 * eps * np.maximum(1.0, bound_scale) * np.log2(max(2, len(ref)))
    if tol.ndim and tol.ndim < ref.ndim:
        tol = tol.reshape(tol.shape + (1,) * (ref.ndim - tol.ndim))
    err = np.abs(got.astype(np.complex128) - ref.astype(np.complex128))
    ok = (err <= tol) | (np.isnan(got) & np.isnan(ref)) | (got == ref)
    assert ok.all(), (np.flatnonzero(~ok.reshape(-1))[:5], got.reshape(-1)[~ok.reshape(-1)][:5],
                      ref.reshape(-1)[~ok.reshape(-1)][:5])


def _cpu(fn, *arrays, **kwargs):
    """The CPU's result in double precision (float32 inputs widened: a sequential float32 scan
    drifts further than the GPU's tree), cast back to the dtype of the call."""
    with np.errstate(all="ignore"):
        narrow = fn(*arrays, comm=SELF, **kwargs).dtype
    wide = [a.astype({"f": np.float64, "c": np.complex128}[a.dtype.kind]) if isinstance(a, np.ndarray)
            and a.dtype.kind in "fc" else a for a in arrays]
    kw = {k: (np.asarray(v, np.float64) if k == "initial" and v is not None and narrow.kind == "f" else v)
          for k, v in kwargs.items()}
    with np.errstate(all="ignore"):
        return fn(*wide, comm=SELF, **kw).astype(narrow)


def _gpu(fn, *arrays, **kwargs):
    return fn(*[cp.asarray(a) if isinstance(a, np.ndarray) else a for a in arrays], comm=SELF, **kwargs)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("name,dtype", [("nansum", "float32"), ("nanprod", "float64"), ("nanmax", "float32"),
                                        ("nanmin", "float64"), ("logaddexp", "float32"), ("logaddexp2", "float64"),
                                        ("gcd", "int64"), ("lcm", "int32")])
def test_new_functors_match_the_cpu(name, dtype, n, rng):
    if name in ("gcd", "lcm"):
        x = (rng.integers(1, 7, n) * rng.choice([1, -1], n)).astype(dtype)
        if name == "lcm":
            x[rng.random(n) < 0.9] = 1  # lcm grows fast: keep most factors 1
    elif name == "nanprod":
        x = (1 + 1e-3 * rng.standard_normal(n)).astype(dtype)
    else:
        x = rng.standard_normal(n).astype(dtype)
    if np.dtype(dtype).kind == "f":
        x[rng.random(n) < 0.1] = np.nan
    for reverse in (False, True):
        ref = _cpu(distscan.scan, x, name, reverse=reverse)
        got = _gpu(distscan.scan, x, name, reverse=reverse)
        scale = np.abs(np.nan_to_num(ref)).max(initial=1)
        if name == "nanprod":  # k factors' roundings walk as sqrt(k) (a reverse scan's first items: ~n)
            scale = scale * np.sqrt(n)
        _close(got, ref, dtype, scale)


@pytest.mark.parametrize("name,dtype,algorithm", [("logaddexp", "float32", "auto"), ("logaddexp", "float32", "lookahead"),
                                                  ("logaddexp2", "float64", "auto")])
def test_logaddexp_runs_meet_infinities_nan_and_wide_spreads(name, dtype, algorithm, rng):
    """A thread's run of logaddexp is scanned as a (max, sum of exp) pair (kernels/util/operators.cuh,
    LogSumExpRun), not by applications: runs of -inf (the identity), repeated values, +inf, a NaN,
    and neighbours 2000 apart (whose exp underflows) at every lane, thread and tile edge, inclusive
    and exclusive, forwards and reversed, on the look-back and the look-ahead (whose reduction totals
    the runs too), against NumPy's float64 accumulate: non-finite results exactly, the others
    within 4e-6 (float32) or 1e-13 (float64) of 1 + |result|."""
    ufunc = getattr(np, name)
    n = 3 * 4096 + 77
    x = rng.standard_normal(n) * 3
    kind = rng.integers(0, 8, n)
    x[kind == 1] = -np.inf
    x[kind == 2] = 1000.0 * rng.choice([-1.0, 1.0], int((kind == 2).sum()))
    x[1:][kind[1:] == 3] = x[:-1][kind[1:] == 3]  # repeats (of the value before the repeat)
    x[:300] = -np.inf  # a whole first tile's worth of lanes at the identity
    x = x.astype(dtype)
    with_inf, with_nan = x.copy(), x.copy()
    with_inf[n // 2] = np.inf
    with_nan[n // 3] = np.nan
    bound = 4e-6 if dtype == "float32" else 1e-13
    for data in (x, with_inf, with_nan):
        for reverse in (False, True):
            for exclusive in (False, True):
                order = slice(None, None, -1) if reverse else slice(None)
                with np.errstate(all="ignore"):
                    want = ufunc.accumulate(data[order].astype(np.float64))
                if exclusive:
                    want = np.concatenate([[-np.inf], want[:-1]])
                want = want[order]
                got = cp.asnumpy(distscan.scan(cp.asarray(data), name, reverse=reverse, exclusive=exclusive,
                                               algorithm=algorithm, comm=SELF)).astype(np.float64)
                where = (reverse, exclusive, data is x)
                finite = np.isfinite(want)
                np.testing.assert_array_equal(got[~finite], want[~finite], err_msg=str(where))
                err = np.abs(got[finite] - want[finite]) / (1 + np.abs(want[finite]))
                assert err.max(initial=0) <= bound, (where, err.max(), np.flatnonzero(finite)[err.argmax()])


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("opname,dtype", [("sum", "int32"), ("sum", "float32"), ("sum", "float64"), ("max", "int64"),
                                          ("prod", "complex64"), ("bitwise_xor", "uint8"), ("min", "float16")])
def test_reverse_matches_the_cpu(opname, dtype, n, rng):
    x = rng.standard_normal(n) if np.dtype(dtype).kind in "fc" else rng.integers(-50, 50, n)
    if opname == "prod":
        x = 1 + 1e-3 * x
    x = x.astype(dtype)
    for exclusive in (False, True):
        initial = None if exclusive else 2
        ref = _cpu(distscan.scan, x, opname, reverse=True, exclusive=exclusive, initial=initial)
        got = _gpu(distscan.scan, x, opname, reverse=True, exclusive=exclusive, initial=initial)
        _close(got, ref, ref.dtype, np.cumsum(np.abs(x)[::-1])[::-1].astype(float) + 1)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("opname,dtype", [("sum", "int32"), ("sum", "float32"), ("max", "float64"),
                                          ("nansum", "float64"), ("prod", "int64"), ("sum", "complex128")])
def test_segmented_matches_the_cpu(opname, dtype, n, rng):
    """(complex128 sums: 32-byte states on a tile shape of their own, backends/cuda/tuning.py)"""
    x = rng.standard_normal(n) if np.dtype(dtype).kind in "fc" else rng.integers(-9, 9, n)
    x = (x + 1j * rng.standard_normal(n) if np.dtype(dtype).kind == "c" else x).astype(dtype)
    if opname == "nansum":
        x[rng.random(n) < 0.1] = np.nan
    for density in (1e-5, 0.01, 0.5):
        flags = rng.random(n) < density
        for reverse in (False, True):
            for exclusive in (False, True):
                initial = 3 if exclusive and opname != "max" else None
                kw = dict(segments=flags, reverse=reverse, exclusive=exclusive, initial=initial)
                ref = _cpu(distscan.scan, x, opname, **kw)
                got = _gpu(distscan.scan, x, opname, **{**kw, "segments": cp.asarray(flags)})
                _close(got, ref, ref.dtype, float(np.nansum(np.abs(x))) + 1)


def _equal_with_signs(got, want, what=""):
    """NumPy's bits: NaN where NaN, zeros of the same sign (``==`` takes -0.0 for +0.0)."""
    got, want = np.asarray(got), np.asarray(want)
    np.testing.assert_array_equal(got, want, err_msg=what)
    zeros = want == 0
    np.testing.assert_array_equal(np.signbit(got[zeros]), np.signbit(want[zeros]), err_msg=f"{what}: signs of zeros")


def _same_state(got, want, what):
    """Two states of a segmented float product field for field (the sign of a zero not where the
    value is NaN: it has no meaning there)."""
    nan = np.isnan(np.asarray(want["value"]))
    for field in want.dtype.names:
        g, h = np.asarray(got[field]), np.asarray(want[field])
        if field == "sign":
            g, h = g & ~nan, h & ~nan
        np.testing.assert_array_equal(g, h, err_msg=f"{what} {field}")


@pytest.mark.parametrize("flag", ["no flag", "a flag in the middle"])
@pytest.mark.parametrize("exclusive", [False, True], ids=["inclusive", "exclusive"])
@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_segmented_float_product_absorbs_zeros_inside_the_device(dtype, reverse, exclusive, flag):
    """``[0] + [big] * 2^20`` (each big's square overflows) with no flag, and with a flag in the middle
    whose segment starts with -0.0, in scan order (mirrored in reverse): NumPy's sequential product
    is a signed zero from each zero on.  The kernels multiply tile products (a tile whose own
    product overflowed, times the carried 0, gave NaN); the host repairs them segment by segment
    (backends/absorb.absorb_segmented, from extended.scan).  The part's carry (the ordered
    reduction) and the scan's total are the CPU loops' state, field for field."""
    big = 1e30 if dtype == "float32" else 1e200
    n = (1 << 20) + 1
    x = np.full(n, big, dtype)
    flags = np.zeros(n, bool)
    x[-1 if reverse else 0] = 0.0
    if flag != "no flag":
        m = n // 2
        flags[m] = True  # in array order the second run starts at m: in reverse its first row is m's end
        x[m - 1 if reverse else m] = -0.0
    with np.errstate(all="ignore"):
        want = segmented_reference(x, flags, "prod", exclusive=exclusive, reverse=reverse)
    assert not np.isnan(want).any()
    got = distscan.scan(cp.asarray(x), "prod", segments=cp.asarray(flags), reverse=reverse, exclusive=exclusive,
                        comm=SELF)
    _equal_with_signs(cp.asnumpy(got), want, f"{dtype} reverse={reverse} exclusive={exclusive} {flag}")
    op = segmented(get_op("prod"), reverse)
    types = scan_types(op, np.dtype(dtype))
    cpu_carry = cpu_backend.reduce(x.reshape(-1, 1), op, types, aux=(flags,), reverse=reverse)
    _same_state(gpu.reduce(cp.asarray(x).reshape(-1, 1), op, types, aux=(cp.asarray(flags),), reverse=reverse),
                cpu_carry, "reduce")
    _, total = gpu.scan(cp.asarray(x), op, types, exclusive=exclusive, want_total=True, aux=(cp.asarray(flags),),
                        reverse=reverse)
    _same_state(total, cpu_carry, "scan total")


@pytest.mark.parametrize("dtype,n", [("float32", 1), ("float32", 31), ("float32", 8193), ("float32", 100_003),
                                     ("float64", 8193), ("float64", 100_003), ("float16", 8193)])
def test_segmented_float_products_are_the_cpus_bit_for_bit(dtype, n, rng):
    """Factors 0, -0, +-1, +-2, a large power of two (products overflow after a few), inf and NaN:
    every product is exact, or overflows in any grouping where it does in sequence, so the GPU's
    results are the CPU's (NumPy's sequential ones) bit for bit, zeros' signs included, with flags
    sparse and dense, forwards and in reverse, inclusive and exclusive, from a seed (a carry of
    rows before, as a rank's), with ``initial`` (0 too: folded in first, it absorbs an overflowed
    product; drawn from the factors, after a seed), for 3 columns; float16 results come from float32
    products (repaired there, then rounded).  The totals are the CPU loops' states."""
    big = 2.0 ** (600 if dtype == "float64" else 60 if dtype == "float32" else 8)
    values = np.array([0.0, -0.0, 1.0, -1.0, 2.0, -2.0, big, -big, np.inf, -np.inf, np.nan])
    p = np.array([4, 3, 30, 20, 8, 6, 20, 10, 0.3, 0.2, 0.3])
    for name in ("prod", "nanprod"):
        for reverse in (False, True):
            op = segmented(get_op(name), reverse)
            types = scan_types(op, np.dtype(dtype))
            for density in (0.0, 1e-3, 0.1):
                for exclusive in (False, True):
                    for w in (1, 3):
                        x = rng.choice(values, (n, w), p=p / p.sum()).astype(dtype)
                        flags = rng.random(n) < density
                        head = rng.choice(values, (5, w), p=p / p.sum()).astype(dtype)
                        seed = cpu_backend.reduce(head, op, types, aux=(rng.random(5) < 0.3,))
                        initial = rng.choice(values, w, p=p / p.sum()).astype(types.acc)  # a zero, a power, inf, NaN
                        for kw in ({}, {"seed": seed}, {"initial": np.full(w, -2.0, types.acc)},
                                   {"initial": np.zeros(w, types.acc)}, {"seed": seed, "initial": initial}):
                            what = f"{name} reverse={reverse} density={density} exclusive={exclusive} w={w} {list(kw)}"
                            with np.errstate(all="ignore"):
                                want, want_total = cpu_backend.scan(x, op, types, exclusive=exclusive, want_total=True,
                                                                    aux=(flags,), reverse=reverse, **kw)
                            got, total = gpu.scan(cp.asarray(x), op, types, exclusive=exclusive, want_total=True,
                                                  aux=(cp.asarray(flags),), reverse=reverse, **kw)
                            _equal_with_signs(cp.asnumpy(got), want, what)
                            _same_state(total, want_total, what)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128", "int64"])
def test_linear_recurrence_matches_the_cpu(dtype, n, rng):
    b = rng.standard_normal(n).astype(dtype) if np.dtype(dtype).kind != "i" else rng.integers(-9, 9, n)
    b = b.astype(dtype)
    a = (rng.uniform(-1, 1, n) if np.dtype(dtype).kind != "i" else rng.integers(-2, 3, n)).astype(dtype)
    for segments in (None, rng.random(n) < 0.001):
        for reverse in (False, True):
            initial = 0 if segments is None else 2
            ref = _cpu(distscan.linear_recurrence, a, b, reverse=reverse, segments=segments, initial=initial)
            got = _gpu(distscan.linear_recurrence, a, b, reverse=reverse, initial=initial,
                       segments=None if segments is None else cp.asarray(segments))
            _close(got, ref, dtype, np.abs(ref).max(initial=1) * np.ones(n))
    # a constant decay (a scalar), the exponential moving average
    ref = _cpu(distscan.linear_recurrence, 0.75, b)
    got = _gpu(distscan.linear_recurrence, 0.75, b)
    _close(got, ref, ref.dtype, np.abs(ref).max(initial=1) * np.ones(n))
    # NumPy coefficients and flags beside a CuPy b: copied to the GPU
    flags = rng.random(n) < 0.01
    ref = _cpu(distscan.linear_recurrence, a, b, segments=flags, initial=1)
    got = distscan.linear_recurrence(a, cp.asarray(b), segments=flags, initial=1, comm=SELF)
    _close(got, ref, dtype, np.abs(ref).max(initial=1) * np.ones(n))


@pytest.mark.parametrize("name", ["nanmax", "nanmin"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32"])
def test_exclusive_nanmax_and_nanmin_start_from_their_identity(name, dtype, rng):
    """An exclusive nanmax's empty prefix is -inf (nanmin's +inf; the integers' lowest and highest),
    as on the CPU.  The GPU wrote the sums' +0.0 as the first result (its kernels start from NaN,
    which fmax skips) and NaN at every later segment start (found by a fuzzer, 2026-11-25).
    Plain, reversed and segmented, 1-D calls warm (the hot path), 2-D parts, out=."""
    n = 10_001
    x = rng.standard_normal(n) * 100
    if np.dtype(dtype).kind == "f":
        x[rng.random(n) < 0.05] = np.nan
    x = x.astype(dtype)
    flags = rng.random(n) < 0.01
    for kw in ({}, {"reverse": True}, {"segments": flags}, {"segments": flags, "reverse": True}):
        ref = distscan.scan(x, name, exclusive=True, comm=SELF, **kw)
        first = ref[-1] if kw.get("reverse") else ref[0]
        assert first == (np.iinfo(dtype).min if name == "nanmax" else np.iinfo(dtype).max) \
            if np.dtype(dtype).kind == "i" else np.isinf(first) and (first < 0) == (name == "nanmax")
        gkw = {k: cp.asarray(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
        for _ in range(2):
            got = distscan.scan(cp.asarray(x), name, exclusive=True, comm=SELF, **gkw)
            np.testing.assert_array_equal(cp.asnumpy(got), ref, err_msg=str(kw))
    y = cp.empty(n, dtype)
    for _ in range(3):
        distscan.scan(cp.asarray(x), name, exclusive=True, out=y, comm=SELF)
        np.testing.assert_array_equal(cp.asnumpy(y), distscan.scan(x, name, exclusive=True, comm=SELF))
    x2 = x[:10_000].reshape(-1, 4)
    for reverse in (False, True):  # the first row is w items: the last row's, reversed
        np.testing.assert_array_equal(
            cp.asnumpy(distscan.scan(cp.asarray(x2), name, exclusive=True, reverse=reverse, comm=SELF)),
            distscan.scan(x2, name, exclusive=True, reverse=reverse, comm=SELF), err_msg=f"reverse={reverse}")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [3 * 4096 + 77, (1 << 20) + 3])
def test_segment_starts_at_warp_and_tile_boundaries_get_the_empty_prefix(dtype, n, rng):
    """A flag on every 128th item (every warp's and tile's first item for every tile shape) and at
    random: an exclusive scan's item at a segment start gets the empty prefix, bit for bit as on the
    CPU: -inf for nanmax, +inf for nanmin, +0.0 for the sums.  Reversed, the block scan and the
    look-back's trees apply the identity on the right of real states (lane 0, thread 0, the lanes
    past a sub-window's tiles), where SegmentedEnds' identity reset a segment end, and those items
    got the neutral value (NaN, -0.0) instead (found 2026-11-25 on the H200; states.cuh).
    Integer-valued floats: every sum is exact, so all items compare bit for bit, sign of zero too."""
    x = rng.integers(-50, 50, n).astype(dtype)
    x[rng.random(n) < 0.05] = np.nan
    flags = rng.random(n) < 0.02
    flags[::128] = True
    flags[1::128] = True  # reversed, item 128k's run is the one item 128k (a run that ends where a warp starts)
    dx, dflags = cp.asarray(x), cp.asarray(flags)
    for name in ("nanmax", "nanmin", "nansum", "sum"):
        for reverse in (True, False):
            for exclusive in (True, False):
                ref = distscan.scan(x, name, segments=flags, reverse=reverse, exclusive=exclusive, comm=SELF)
                for algorithm in ("auto", "lookback", "lookahead"):
                    got = cp.asnumpy(distscan.scan(dx, name, segments=dflags, reverse=reverse, exclusive=exclusive,
                                                   algorithm=algorithm, comm=SELF))
                    same = (got.view(np.uint32 if dtype == "float32" else np.uint64)
                            == ref.view(np.uint32 if dtype == "float32" else np.uint64)) | (np.isnan(got) & np.isnan(ref))
                    bad = np.flatnonzero(~same)
                    assert bad.size == 0, (name, reverse, exclusive, algorithm, bad[:8].tolist(), got[bad[:4]], ref[bad[:4]])


@pytest.mark.parametrize("name", ["nancumsum", "nancumprod"])
def test_nan_aware_scans_with_an_integer_dtype_drop_nan_first(name, rng):
    """As numpy.nancumsum(x, dtype=int64): NaN replaced before the conversion (2026-11-25)."""
    x = rng.choice(np.array([np.nan, 1.0, 2.0, 3.0]), 100_003)
    flags = rng.random(x.size) < 0.01
    for segments in (None, flags):
        ref = _cpu(getattr(distscan, name), x, dtype=np.int64, segments=segments)
        got = _gpu(getattr(distscan, name), x, dtype=np.int64,
                   segments=None if segments is None else cp.asarray(segments))
        np.testing.assert_array_equal(cp.asnumpy(got), ref)
    np.testing.assert_array_equal(cp.asnumpy(_gpu(getattr(distscan, name), x, dtype=np.int64)),
                                  getattr(np, name)(x, dtype=np.int64))


@pytest.mark.parametrize("n", [257, 100_003])
def test_float16_state_scans_combine_in_float32(n, rng):
    """float16 segmented max, min and nanmax and float16 recurrences (which the CPU refused with
    numba's NotImplementedError until 2026-11-25): the kernels combine float16 in float32, and
    the state now is float32 on the host too.  Max and min exactly the CPU's; recurrences within
    float16's bound."""
    x = rng.standard_normal(n).astype(np.float16)
    x[rng.random(n) < 0.05] = np.nan
    flags = rng.random(n) < 0.01
    for opname in ("max", "min", "nanmax"):
        for reverse in (False, True):
            ref = _cpu(distscan.scan, x, opname, segments=flags, reverse=reverse)
            got = _gpu(distscan.scan, x, opname, segments=cp.asarray(flags), reverse=reverse)
            assert got.dtype == np.float16
            np.testing.assert_array_equal(cp.asnumpy(got), ref)
    a = rng.uniform(0.5, 1.0, n).astype(np.float16)
    b = rng.standard_normal(n).astype(np.float16)
    for segments in (None, flags):
        for reverse in (False, True):
            ref = _cpu(distscan.linear_recurrence, a, b, reverse=reverse, segments=segments)
            got = _gpu(distscan.linear_recurrence, a, b, reverse=reverse,
                       segments=None if segments is None else cp.asarray(segments))
            _close(got, ref, np.float16, np.abs(ref.astype(np.float64)).max(initial=1) * np.ones(n))


@pytest.mark.parametrize("n", [8193, LARGE])
def test_out_overlapping_the_coefficients_or_the_flags(n, rng):
    """``out`` that is the coefficients or the flags, or overlaps them one item either way (a tile
    would read another's inputs after that one wrote its output): the scan of the inputs as they
    were, as on the CPU (tests/test_api_held_results.py), on the look-back and the look-ahead
    kernels, calls in a row (the later ones through the call kind)."""
    a = rng.uniform(0.5, 1.0, n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    flags = rng.random(n) < 0.001
    x = rng.random(n) < 0.5
    want_y = _cpu(distscan.linear_recurrence, a, b, segments=flags)
    want_max = _cpu(distscan.scan, x, "max", segments=flags)

    def laid_in(values, shift):
        buf = cp.zeros(n + 2, values.dtype)
        buf[1:n + 1] = cp.asarray(values)
        return buf[1:n + 1], buf[1 + shift:n + 1 + shift]

    for algorithm in ("auto", "lookahead"):
        for call in range(3):
            for shift in (0, 1, -1):
                coef, out = laid_in(a, shift)
                y = distscan.linear_recurrence(coef, cp.asarray(b), segments=cp.asarray(flags), out=out, comm=SELF,
                                               algorithm=algorithm)
                assert y is out
                _close(out, want_y, np.float32, np.abs(want_y).max(initial=1) * np.ones(n))
                seg, out = laid_in(flags, shift)
                y = distscan.scan(cp.asarray(x), "max", segments=seg, out=out, comm=SELF, algorithm=algorithm)
                assert y is out
                np.testing.assert_array_equal(cp.asnumpy(out), want_max, err_msg=f"{algorithm} {shift}")


@pytest.mark.parametrize("n", SIZES[:5])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_an_infinite_or_nan_coefficient_times_a_zero_is_zero_in_every_lane_thread_and_tile(dtype, n, rng):
    """The zero rule of distscan.ops.state.affine_coef in the kernels: where an infinite or NaN
    ``a`` meets a zero (``y``, the identity the kernels pad lanes, threads' first items and tile 0
    with, a product of coefficients ended by a zero), the sequential loop's result bit for bit
    (NaN where it gives NaN): an infinite ``a[0]`` without an initial gives ``b[0]``, one at any
    lane, item or tile start gives inf, never a padding's NaN.  Integer-valued data: exact in any
    association."""
    a, b = zero_rule_case(rng, n, dtype)
    edges = np.array([0, 1, 31, 32, 255, 256, 1023, 1024, 4095, 4096, 8191, 8192, 65535, 65536, n - 1])
    edges = edges[edges < n]
    for segments in (None, rng.random(n) < 0.05):
        for reverse in (False, True):
            for initial in (0, 2):
                x = a.copy()
                x[edges] = np.inf
                x[n - 1 if reverse else 0] = np.inf
                want = recurrence_reference(x, b, initial=initial, reverse=reverse, segments=segments).astype(dtype)
                got = _gpu(distscan.linear_recurrence, x, b, reverse=reverse, initial=initial,
                           segments=None if segments is None else cp.asarray(segments))
                np.testing.assert_array_equal(cp.asnumpy(got), want)


@pytest.mark.parametrize("n", SIZES[:5])
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_a_complex_coefficient_with_an_infinite_or_nan_part_times_a_zero_is_zero(dtype, n, rng):
    """The zero rule for complex maps (kernels/util/states.cuh, AffineMul<Complex>): a coefficient
    with an infinite or NaN real or imaginary part, met where the state before it is exactly 0
    (at every lane, thread and tile start among them, where the kernels pad with the identity
    (1, -0)), contributes nothing: the result is the same as with a finite coefficient there,
    bit for bit and finite everywhere (Gaussian integers: exact in any association).  One more
    such coefficient where the state is not 0 makes the rest non-finite, as the loop's."""
    a, b = complex_zero_rule_case(rng, n, dtype)
    edges = np.array([0, 1, 31, 32, 255, 256, 1023, 1024, 4095, 4096, 8191, 8192, 65535, 65536, n - 1])
    for segments in (None, rng.random(n) < 0.05):
        for reverse in (False, True):
            for initial in (0, 2 + 1j):
                x, want = nonfinite_at_zero_states(rng, a, b, COMPLEX_NONFINITE, initial=initial, reverse=reverse,
                                                   segments=segments, edges=edges[edges < n])
                # (the data's own check: non-finite coefficients where the state is 0, at least one,
                # and more than 1 % of the items where there are thousands; 257 items drew only 2,
                # not the 3 asked before, in 1.5 % of draws: the suite of 2026-11-28 03:24 UTC met one)
                assert n < 32 or np.count_nonzero(~np.isfinite(x)) > (n // 100 if n > 1000 else 0)
                got = cp.asnumpy(_gpu(distscan.linear_recurrence, x, b, reverse=reverse, initial=initial,
                                      segments=None if segments is None else cp.asarray(segments)))
                np.testing.assert_array_equal(got, want.astype(dtype), err_msg=f"reverse={reverse} initial={initial}")
                # one more where the state is not 0: non-finite from there on, as the loop's
                k = n // 2
                x[k] = COMPLEX_NONFINITE[0]
                ref = recurrence_reference(x, b, initial=initial, reverse=reverse, segments=segments)
                got = cp.asnumpy(_gpu(distscan.linear_recurrence, x, b, reverse=reverse, initial=initial,
                                      segments=None if segments is None else cp.asarray(segments)))
                finite = np.isfinite(ref)
                np.testing.assert_array_equal(np.isfinite(got), finite)
                np.testing.assert_array_equal(got[finite], ref[finite].astype(dtype))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_rare_non_finite_coefficients_among_bounded_tiles_keep_the_zero_rule(dtype, rng):
    """The look-back folds its aggregates without the zero rule's tests where a warp finds every one
    of them bounded (|a| <= 1: kernels/util/operators.cuh, bounds), and with them elsewhere.  Here
    most tiles' coefficients are 0 or 1 (bounded aggregates) and one in 10^4 is infinite or NaN
    (unbounded, the rule's case where the state before it is 0), so the look-back's windows mix
    both: the sequential loop's result bit for bit (integer-valued states: exact in any association)."""
    n = (1 << 21) + 7
    a = rng.choice(np.array([0, 1, np.inf, np.nan]), n, p=[0.2, 0.7998, 1e-4, 1e-4]).astype(dtype)
    b = rng.choice(np.array([0, 0, 0, 1, 2]), n).astype(dtype)
    for segments in (None, rng.random(n) < 0.001):
        for reverse in (False, True):
            want = recurrence_reference(a, b, reverse=reverse, segments=segments).astype(dtype)
            for algorithm in ("auto", "lookback", "lookahead"):
                got = cp.asnumpy(distscan.linear_recurrence(
                    cp.asarray(a), cp.asarray(b), reverse=reverse, comm=SELF, algorithm=algorithm,
                    segments=None if segments is None else cp.asarray(segments)))
                np.testing.assert_array_equal(got, want, err_msg=f"segments={segments is not None} "
                                                                 f"reverse={reverse} {algorithm}")


@pytest.mark.parametrize("share", [0.4, 2e-4])  # dense, and rare among bounded warps and tiles
@pytest.mark.parametrize("dtype,big", [("float32", 2.0**70), ("float64", 2.0**600), ("complex64", 2.0**70)])
def test_finite_coefficients_whose_products_overflow_meet_zero_states_by_the_rule(dtype, big, share, rng):
    """The kernels fold a thread's run without the zero rule's tests only where every later map of
    the fold has a finite coefficient (kernels/util/operators.cuh, tames): the items' own, for the
    run's scan, and the scanned products', for the fold of the thread's prefix into them.  Here
    every coefficient is finite (0, 1 or ``big``) but two ``big`` in a row overflow, and every state
    is 0 (b = 0): the prefix's 0 times an infinite product is the rule's 0, never IEEE's NaN, so
    every output is 0.  A tame test of the items alone would pass these runs and give NaN."""
    n = (1 << 21) + 7  # past the look-ahead's threshold of the 16-byte states
    a = rng.choice(np.array([0, 1, big]), n, p=[0.1, 0.9 - share, share]).astype(dtype)
    if share < 0.1:  # rare ones in pairs, so that they overflow
        pairs = np.flatnonzero(a == big) + 1
        a[pairs[pairs < n]] = big
    b = np.zeros(n, dtype)
    for segments in (None, rng.random(n) < 0.01):
        for reverse in (False, True):
            for algorithm in ("auto", "lookback", "lookahead"):
                got = cp.asnumpy(distscan.linear_recurrence(
                    cp.asarray(a), cp.asarray(b), reverse=reverse, comm=SELF, algorithm=algorithm,
                    segments=None if segments is None else cp.asarray(segments)))
                np.testing.assert_array_equal(got, np.zeros(n, dtype),
                                              err_msg=f"segments={segments is not None} reverse={reverse} {algorithm}")


@pytest.mark.parametrize("n", SIZES)
def test_compensated_float32_sums_are_correctly_rounded_or_within_the_bound(n, rng):
    _compensated_checked(n, rng)


def test_compensated_float32_ties_at_every_warp_join_are_rounded_to_even():
    """Items of 2^12 and 2^-12 in turn: a thread's run of 32 sums to a float whose error word is half
    its last place, and each join of two such runs doubles both, so the warps' scans meet a tie at
    every join.  There the warps' joins leave the error word as it grows (kernels/util/states.cuh,
    join_warp) until the chain's close rounds the pair once.  Every sum is exact in units of 2^-12
    and below 2^40 of them (docs/operators.md): each result is correctly rounded, bit for bit, on
    both kernels, forwards, reversed and exclusive (a plain float32 sum gets all but a few wrong)."""
    n = (1 << 16) - 1  # 2^15 items of 2^24 units: every sum below 2^40 units
    for first in (0, 1):
        units = np.where((np.arange(n) + first) % 2 == 0, 1 << 24, 1).astype(np.int64)
        x = (units * 2.0**COMPENSATED_UNIT_LOG2).astype(np.float32)
        for algorithm in ("auto", "lookback", "lookahead"):
            for reverse, exclusive in ((False, False), (True, False), (False, True), (True, True)):
                got = cp.asnumpy(_gpu(distscan.cumsum, x, compensated=True, reverse=reverse, exclusive=exclusive,
                                      algorithm=algorithm))
                assert_compensated(got, x, units, reverse=reverse, exclusive=exclusive, exact=True)


@pytest.mark.parametrize("n", SIZES)
def test_compensated_sums_that_overflow_or_meet_infinities_are_numpys(n, rng):
    """An infinite sum of the sums is the result, error 0 (TwoSum's error of it, inf - inf, would
    make it NaN): float32 sums that overflow, and infinities and a NaN in the input, at every lane,
    thread and tile edge, forwards and reversed, as NumPy's cumsum gives them (bit for bit).
    The large items have one sign: with both, a tile's own sum may overflow to -inf where the
    sequential sum is already +inf, and inf + -inf is NaN in any parallel grouping (docs/api.md)."""
    x = rng.uniform(1e37, 3e38, n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    y[rng.integers(0, n, 3)] = np.float32(np.inf)
    y[rng.integers(0, n, 1)] = -np.float32(np.inf)
    for data in (x, -x, y):
        for reverse in (False, True):
            order = slice(None, None, -1) if reverse else slice(None)
            with np.errstate(all="ignore"):
                want = np.cumsum(data[order])[order]  # float32: an overflow stays infinite
            got = cp.asnumpy(_gpu(distscan.cumsum, data, compensated=True, reverse=reverse))
            inf = ~np.isfinite(want)
            np.testing.assert_array_equal(got[inf], want[inf])
            np.testing.assert_array_equal(np.isfinite(got), ~inf)


def test_look_ahead_sizes_of_4_byte_items(rng):
    """Reverse sums and NaN-aware sums of float32 past 2^23 items (the look-ahead kernel,
    mirrored), a segmented sum there (forward the look-ahead by its flags' bits, reversed the
    look-back with its lead: plans.aux_looks_ahead), and compensated sums on both kernels ("auto"
    takes the look-back for them: plans.ext_device)."""
    x = rng.standard_normal(LARGE).astype(np.float32)
    x[rng.random(LARGE) < 0.01] = np.nan
    for name, kw in [("nansum", dict(reverse=True)), ("nansum", {}), ("nanmax", dict(reverse=True))]:
        ref = _cpu(distscan.scan, x, name, **kw)
        _close(_gpu(distscan.scan, x, name, **kw), ref, np.float32, float(np.nansum(np.abs(x))) + 1)
    x = np.nan_to_num(x)
    flags = rng.random(LARGE) < 1e-4
    for kw in [dict(reverse=True), dict(segments=flags), dict(segments=flags, reverse=True)]:
        ref = _cpu(distscan.cumsum, x, **kw)
        got = _gpu(distscan.cumsum, x, **{k: (cp.asarray(v) if isinstance(v, np.ndarray) else v) for k, v in kw.items()})
        _close(got, ref, np.float32, float(np.sum(np.abs(x))) + 1)
    _compensated_checked(LARGE, rng)
    _compensated_checked(LARGE, rng, algorithm="lookahead")
    devices = {p.device for k, p in gpu.EXT_PLANS.items() if k[4].startswith("Compensated") and k[1] == np.float32}
    assert devices == {"lookback", "lookahead"}, devices


# One tile shape for both kernels (the look-ahead's ring: 6 stages, depth 4), so that their
# association, and so their results, are the same bit for bit (kernels/agent/agent_lookahead.cuh)
SHARED_SHAPE = (128, 16, 1024, 2, 6, 4, 2)


@pytest.mark.parametrize("n", [1, 31, 2049, 2048 * 53 + 777, (1 << 21) + 3])
def test_the_look_ahead_ring_stages_flags_and_coefficients(n, rng):
    """Segmented scans and linear recurrences on the look-ahead kernel (flags and coefficients
    staged in its ring beside the items) give the look-back's results at the same tile shape:
    forwards and reversed, inclusive and exclusive, with ``initial``, partial last tiles, flags and
    coefficients at offsets that are not 16-byte aligned (the ring's scalar loads), and a segment
    flag on every tile's and warp's first item.  Integers bit for bit; floats within the bound (the
    look-ahead scans each thread's run again from its prefix, item by item, where the look-back
    applies the prefix to the run's scan: RESCAN in kernels/agent/agent_lookahead.cuh)."""
    x32 = rng.standard_normal(n + 1).astype(np.float32)
    xi = rng.integers(-2**40, 2**40, n + 1)
    flags = rng.random(n + 1) < 0.01
    flags[::2048] = True
    flags[::512] |= rng.random(flags[::512].shape) < 0.5
    a32 = rng.uniform(-1, 1, n + 1).astype(np.float32)
    a_c = (a32 * np.exp(1j * rng.uniform(0, 6.28, n + 1))).astype(np.complex64)
    d = {k: cp.asarray(v) for k, v in dict(x32=x32, xi=xi, flags=flags, a32=a32, a_c=a_c,
                                            b_c=(x32 + 1j * x32[::-1]).astype(np.complex64)).items()}
    calls = []
    for off in (0, 1):  # 1: every array a view one item on (flags 1 byte, coefficients 4 or 8 off)
        v = {k: a[off:off + n] for k, a in d.items()}
        for reverse in (False, True):
            calls += [
                lambda alg, v=v, r=reverse: distscan.cumsum(v["x32"], segments=v["flags"], reverse=r, comm=SELF,
                                                            algorithm=alg),
                lambda alg, v=v, r=reverse: distscan.scan(v["xi"], "max", segments=v["flags"], reverse=r,
                                                          exclusive=True, initial=-5, comm=SELF, algorithm=alg),
                lambda alg, v=v, r=reverse: distscan.linear_recurrence(v["a32"], v["x32"], reverse=r, comm=SELF,
                                                                       algorithm=alg),
                lambda alg, v=v, r=reverse: distscan.linear_recurrence(v["a32"], v["x32"], segments=v["flags"],
                                                                       reverse=r, comm=SELF, algorithm=alg),
                lambda alg, v=v, r=reverse: distscan.linear_recurrence(v["a_c"], v["b_c"], segments=v["flags"],
                                                                       initial=0.5, reverse=r, comm=SELF,
                                                                       algorithm=alg),
                lambda alg, v=v, r=reverse: distscan.linear_recurrence(v["a32"].astype(cp.float64),
                                                                       v["x32"].astype(cp.float64), reverse=r,
                                                                       comm=SELF, algorithm=alg),
            ]
    with gpu.overrides(tuning=SHARED_SHAPE):
        for i, call in enumerate(calls):
            back = cp.asnumpy(call("lookback"))
            ahead = cp.asnumpy(call("lookahead"))
            if back.dtype.kind in "iub":
                np.testing.assert_array_equal(ahead, back, err_msg=f"call {i}")
            else:
                _close(ahead, back, back.dtype, np.abs(back).max(initial=1) * np.ones(n))
    devices = {p.device for k, p in gpu.EXT_PLANS.items() if k[4].startswith(("Segmented", "Affine"))}
    assert "lookahead" in devices, devices


@pytest.mark.parametrize("n", [1, 31, 2049, 2048 * 53 + 777, (1 << 21) + 3])
def test_run_state_operators_on_the_look_ahead_are_the_look_back_s_bits(n, rng):
    """The operators that scan a thread's run in a state of their own (the compensated sum,
    logaddexp: RUN_STATE, kernels/util/operators.cuh) keep their items as lifted on both kernels,
    and the look-ahead's reduction keeps its warp parts for the tile's scan (RESCAN,
    kernels/agent/agent_lookahead.cuh), whose store scans each run from its prefix as the
    look-back's does: at the same tile shape the results are the look-back's bit for bit, forwards
    and reversed, inclusive and exclusive, with ``initial``, partial last tiles, float32, float64
    and complex64, through a NaN, infinities and signed zeros."""
    x32 = rng.standard_normal(n).astype(np.float32)
    x32[rng.integers(0, n, 2)] = -0.0
    odd = x32.copy()
    odd[rng.integers(0, n, 1)] = np.inf
    odd[rng.integers(0, n, 1)] = np.nan
    xc = (x32 + 1j * x32[::-1]).astype(np.complex64)
    d = {k: cp.asarray(v) for k, v in dict(x32=x32, x64=x32.astype(np.float64) * 1e3, odd=odd, xc=xc).items()}
    calls = []
    for reverse in (False, True):
        for exclusive in (False, True):
            kw = dict(reverse=reverse, exclusive=exclusive, comm=SELF)
            calls += [
                lambda alg, kw=kw: distscan.cumsum(d["x32"], compensated=True, algorithm=alg, **kw),
                lambda alg, kw=kw: distscan.cumsum(d["x64"], compensated=True, initial=0.25, algorithm=alg, **kw),
                lambda alg, kw=kw: distscan.cumsum(d["xc"], compensated=True, algorithm=alg, **kw),
                lambda alg, kw=kw: distscan.cumsum(d["odd"], compensated=True, algorithm=alg, **kw),
                lambda alg, kw=kw: distscan.scan(d["x32"], np.logaddexp, algorithm=alg, **kw),
                lambda alg, kw=kw: distscan.scan(d["x64"], np.logaddexp2, initial=-1.0, algorithm=alg, **kw),
                lambda alg, kw=kw: distscan.scan(d["odd"], np.logaddexp, algorithm=alg, **kw),
            ]
    with gpu.overrides(tuning=SHARED_SHAPE):
        for i, call in enumerate(calls):
            back = cp.asnumpy(call("lookback"))
            ahead = cp.asnumpy(call("lookahead"))
            np.testing.assert_array_equal(ahead.view(np.uint8), back.view(np.uint8), err_msg=f"call {i}")


@pytest.mark.parametrize("n", [31, 2048 * 53 + 777])
def test_the_look_ahead_reads_any_nonzero_flag_byte_as_a_start(n, rng):
    """The look-ahead folds the segmented runs by their flags' bits (RUN_BITS, Tile::flag_bits: four
    flag bytes a word, bit 7 of each byte set where it is nonzero, gathered by a multiply).  A bool
    array may hold bytes other than 0 and 1 (a view of uint8 data); each nonzero one is a start, as
    NumPy reads it and as the look-back tests it.  Flags of bytes 0, 1, 2, 0x7f, 0x80 and 0xff give
    the bits of the same call with canonical flags (bit for bit: the same kernel), and integers the
    CPU's; forwards and reversed, inclusive and exclusive, a partial last tile, views one on."""
    raw = rng.choice(np.array([1, 2, 0x7F, 0x80, 0xFF], np.uint8), n + 1)
    raw[rng.random(n + 1) >= 0.02] = 0
    raw[::2048] = 0x80  # every tile's first item (the shape below: 2048 items a tile)
    odd = cp.asarray(raw).view(cp.bool_)
    canonical = cp.asarray(raw != 0)
    x32 = cp.asarray(rng.standard_normal(n + 1).astype(np.float32))
    xi = cp.asarray(rng.integers(-2**40, 2**40, n + 1))
    a32 = cp.asarray(rng.uniform(-1, 1, n + 1).astype(np.float32))
    for off in (0, 1):
        sl = slice(off, off + n)
        for reverse in (False, True):
            for exclusive in (False, True):
                calls = [
                    lambda f: distscan.cumsum(x32[sl], segments=f[sl], reverse=reverse, exclusive=exclusive,
                                              comm=SELF, algorithm="lookahead"),
                    lambda f: distscan.cumsum(xi[sl], segments=f[sl], reverse=reverse, exclusive=exclusive,
                                              comm=SELF, algorithm="lookahead"),
                    lambda f: distscan.scan(xi[sl], np.gcd, segments=f[sl], reverse=reverse, exclusive=exclusive,
                                            comm=SELF, algorithm="lookahead"),
                    lambda f: distscan.linear_recurrence(a32[sl], x32[sl], segments=f[sl], reverse=reverse,
                                                         comm=SELF, algorithm="lookahead"),
                ]
                for i, call in enumerate(calls):
                    what = f"call {i}, offset {off}, reverse {reverse}, exclusive {exclusive}"
                    got = cp.asnumpy(call(odd))
                    np.testing.assert_array_equal(got, cp.asnumpy(call(canonical)), err_msg=what)
                    if i in (1, 2):  # the integer scans: the CPU's bits, from the same parts on the host
                        xs, fs = cp.asnumpy(xi[sl]), cp.asnumpy(canonical[sl])
                        ref = (distscan.cumsum(xs, segments=fs, reverse=reverse, exclusive=exclusive, comm=SELF)
                               if i == 1 else
                               distscan.scan(xs, np.gcd, segments=fs, reverse=reverse, exclusive=exclusive, comm=SELF))
                        np.testing.assert_array_equal(got, ref, err_msg=what)


@pytest.mark.parametrize("density", [0.5, 0.01, 1e-3, 0.0])
def test_the_segmented_lead_keeps_the_look_back_s_bits(density, rng):
    """Segmented scans on the look-back with a reduction lead (forced: 16 tiles) give the bits of
    the look-back without one, forwards and reversed, inclusive and exclusive, float32 and int64
    sums and an int64 max with initial, dense and sparse flags, flags on runs' first and last
    items, a partial last tile, views one item on (unaligned).  (Written for a lead that skipped
    the values before a warp's last flag, 2026-11-25: same bits, 7-15 % slower on the H200, not
    kept: benchmarks/RESULTS.md, "A flags-first lead for the segmented sums".)"""
    n = (1 << 21) + 777
    x32 = rng.standard_normal(n + 1).astype(np.float32)
    xi = rng.integers(-2**40, 2**40, n + 1)
    flags = rng.random(n + 1) < density
    if density:
        flags[31::32] |= rng.random(flags[31::32].shape) < 0.05  # a run's last item
        flags[::32] |= rng.random(flags[::32].shape) < 0.05      # a run's first item
    d = {k: cp.asarray(v) for k, v in dict(x32=x32, xi=xi, flags=flags).items()}
    for off in (0, 1):
        v = {k: a[off:off + n] for k, a in d.items()}
        for reverse in (False, True):
            for exclusive in (False, True):
                calls = [lambda alg: distscan.cumsum(v["x32"], segments=v["flags"], reverse=reverse,
                                                     exclusive=exclusive, comm=SELF, algorithm=alg),
                         lambda alg: distscan.cumsum(v["xi"], segments=v["flags"], reverse=reverse,
                                                     exclusive=exclusive, comm=SELF, algorithm=alg),
                         lambda alg: distscan.scan(v["xi"], "max", segments=v["flags"], reverse=reverse,
                                                   exclusive=exclusive, initial=-5 if exclusive else None,
                                                   comm=SELF, algorithm=alg)]
                for i, call in enumerate(calls):
                    with gpu.overrides(lead=16):
                        led = cp.asnumpy(call("auto"))
                    with gpu.overrides(lead=0):
                        plain = cp.asnumpy(call("auto"))
                    np.testing.assert_array_equal(led, plain, err_msg=f"call {i} off {off} reverse {reverse} "
                                                                      f"exclusive {exclusive}")
    leads = {p.lead for k, p in gpu.EXT_PLANS.items() if k[4].startswith("Segmented") and k[6] == "lookback"}
    assert any(leads), leads


def _compensated_checked(n, rng, **kw):
    """Correctly rounded where every sum of consecutive items is below 2^40 units, within the
    general bound where the prefixes pass it (tests.support.reference.assert_compensated),
    forwards, reversed and exclusive (the store's run state, kernels/util/states.cuh's
    Compensated::Run, reads before it adds)."""
    for wide in (False, True):
        x, units = compensated_case(rng, n, wide=wide)
        for reverse, exclusive in ((False, False), (True, False), (False, True), (True, True)):
            got = cp.asnumpy(_gpu(distscan.cumsum, x, compensated=True, reverse=reverse, exclusive=exclusive, **kw))
            assert_compensated(got, x, units, reverse=reverse, exclusive=exclusive, exact=not wide)


def test_columns_views_out_and_include_initial(rng):
    x = rng.integers(-9, 9, (5000, 3)).astype(np.int32)
    flags = rng.random(5000) < 0.01
    for kw in [dict(reverse=True), dict(segments=flags), dict(segments=flags, reverse=True, exclusive=True)]:
        ref = _cpu(distscan.cumsum, x, **kw)
        got = _gpu(distscan.cumsum, x, **{k: (cp.asarray(v) if isinstance(v, np.ndarray) else v) for k, v in kw.items()})
        np.testing.assert_array_equal(cp.asnumpy(got), ref)
    xv = cp.asarray(rng.integers(-9, 9, 10001).astype(np.int64))[1::2]  # strided, misaligned
    out = cp.full(xv.shape[0] + 1, -7, cp.int64)
    got = distscan.cumulative_sum(xv, include_initial=True, out=out, comm=SELF)
    np.testing.assert_array_equal(cp.asnumpy(got), np.concatenate([[0], np.cumsum(cp.asnumpy(xv))]))
    assert got is out


@pytest.mark.parametrize("name,value", [("gcd", -6), ("lcm", -6), ("nanmax", np.nan), ("nanmin", np.nan),
                                        ("sum", -0.0)])
def test_a_one_row_part_s_total_is_its_row(name, value):
    """The carry of a one-row part is the row as it is, on the GPU as on the CPU (NumPy's accumulate
    copies its first item; the identity op it is not it: gcd(0, -6) is 6, fmax(-inf, nan) -inf), from
    the reduction and from a scan's total, inclusive and exclusive."""
    op = get_op(name)
    x = np.array([value], np.int64 if name in ("gcd", "lcm") else np.float64)
    types = scan_types(op, x.dtype)
    def same(got, what):
        got = np.asarray(got).reshape(-1)
        np.testing.assert_array_equal(got, x, err_msg=what)  # NaN equals NaN here
        assert np.signbit(got[0]) == np.signbit(x[0]) or np.isnan(x[0]), what

    same(gpu.reduce(cp.asarray(x).reshape(1, 1), op, types), f"{name} GPU reduce")
    same(cpu_backend.reduce(x.reshape(1, 1), op, types), f"{name} CPU reduce")
    for exclusive in (False, True):
        _, total = gpu.scan(cp.asarray(x), op, types, exclusive=exclusive, want_total=True)
        same(cp.asnumpy(cp.asarray(total)), f"{name} exclusive={exclusive}")


@pytest.mark.parametrize("name", ["gcd", "lcm"])
def test_segmented_gcd_and_lcm_keep_a_raw_first_item(name, rng):
    """NumPy's accumulate copies a segment's first item as it is (``gcd(0, -6)`` would be 6): a
    negative first item of the array and of each segment, inclusive and exclusive, forwards and
    reversed, on the GPU as on the CPU (the CPU loops start a segment from its item).  The kernels
    alone keep them (the identity of gcd's and lcm's segmented states is marked EMPTY,
    kernels/util/states.cuh; no pass writes them back), on both device algorithms and with the
    look-back's lead (2^21 + 3 items: 1025 tiles of 2048)."""
    for n, algorithms in ((1, ("auto",)), (2, ("auto",)), (257, ("auto",)), (8193, ("auto", "lookahead")),
                          ((1 << 21) + 3, ("auto", "lookback", "lookahead"))):
        x = (rng.integers(1, 7, n) * rng.choice([1, -1], n)).astype(np.int64)
        x[0] = -6
        flags = rng.random(n) < 0.1
        for reverse in (False, True):
            for exclusive in (False, True):
                kw = dict(segments=flags, reverse=reverse, exclusive=exclusive)
                want = distscan.scan(x, name, comm=SELF, **kw)
                for algorithm in algorithms:
                    got = distscan.scan(cp.asarray(x), name, comm=SELF, algorithm=algorithm,
                                        **{**kw, "segments": cp.asarray(flags)})
                    np.testing.assert_array_equal(cp.asnumpy(got), want, err_msg=f"{name} n={n} {kw} {algorithm}")
                plain = distscan.scan(cp.asarray(x), name, comm=SELF, reverse=reverse, exclusive=exclusive)
                np.testing.assert_array_equal(cp.asnumpy(plain), distscan.scan(x, name, comm=SELF, reverse=reverse,
                                                                               exclusive=exclusive))


@pytest.mark.parametrize("name", ["gcd", "lcm"])
@pytest.mark.parametrize("reverse", [False, True])
def test_segmented_gcd_and_lcm_exclusive_from_a_negative_initial(name, reverse, rng):
    """An exclusive scan's first item in scan order starts no flagged segment: it gets the initial
    as it is (-6), as NumPy's accumulate copies it and the CPU's loops give it, not gcd(-6, 0) = 6
    (found 2026-11-28 by tests/gpu/test_state_columns.py; the 1-D kernels projected it so too)."""
    for n in (1, 2, 1000):
        for w in (1, 3):
            x = (rng.integers(1, 7, (n, w)) * rng.choice([1, -1], (n, w))).astype(np.int64)
            flags = rng.random(n) < 0.1
            flags[-1 if reverse else 0] = False
            want = distscan.scan(x, name, segments=flags, reverse=reverse, exclusive=True, initial=-6, comm=SELF)
            got = distscan.scan(cp.asarray(x), name, segments=cp.asarray(flags), reverse=reverse, exclusive=True,
                                initial=-6, comm=SELF)
            np.testing.assert_array_equal(cp.asnumpy(got), want, err_msg=f"{name} ({n}, {w}) reverse={reverse}")
            assert want[-1 if reverse else 0, 0] == -6


@pytest.mark.parametrize("reverse", [False, True])
def test_a_one_item_last_segment_s_carry_is_its_item(reverse, rng):
    """A part whose last segment in scan order is one negative item (forwards its last row flagged;
    in reverse its second row flagged): the GPU's carry of a segmented gcd/lcm holds the item as it
    is, as the CPU's loops do (the next rank's exclusive first row shows it).  It failed before
    gcd's and lcm's EMPTY identity (kernels/util/states.cuh): the kernels pad with the identity,
    and gcd(-6, 0) is 6."""
    for name in ("gcd", "lcm"):
        op = segmented(get_op(name), reverse)
        for n in (2, 9, 8193):
            x = (rng.integers(1, 7, n) * rng.choice([1, -1], n)).astype(np.int64)
            flags = rng.random(n) < 0.1
            if reverse:
                x[0], flags[1] = -6, True
            else:
                x[-1], flags[-1] = -6, True
            types = scan_types(op, x.dtype)
            want = cpu_backend.reduce(x.reshape(-1, 1), op, types, aux=(flags,), reverse=reverse)
            got = gpu.reduce(cp.asarray(x).reshape(-1, 1), op, types, aux=(cp.asarray(flags),), reverse=reverse)
            for field in types.state.names:
                np.testing.assert_array_equal(np.asarray(got[field]), np.asarray(want[field]),
                                              err_msg=f"{name} n={n} {field}")
            assert int(np.asarray(got["value"]).reshape(-1)[0]) == -6


EDGE_FLAGS = {  # the rows of a part flagged besides the random ones, by where the carry's fields look
    "first": lambda n: [0], "second": lambda n: [1], "last": lambda n: [n - 1], "first and last": lambda n: [0, n - 1],
    "none": lambda n: [], "all": lambda n: list(range(n)),
}


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("where", list(EDGE_FLAGS))
def test_carries_of_parts_with_flagged_edge_rows(where, reverse, rng):
    """The carry of a part (the ordered reduction) and a scan's total (on both device algorithms)
    on the GPU, field for field the CPU's, where the part's first, second or last row is flagged.
    In reverse a flagged first row is the part's segment end in scan order (``end``), which the
    ordered reduction's idle threads, padding with the identity on the right, reset to False: the
    GPU rank before it in array order then continued a segment that starts afresh
    (kernels/util/states.cuh).  Segmented sums (int64, exact), segmented gcd of negative items,
    and recurrences with segments (eighths and coefficients 1, -1 and 0: exact in float64 in any
    association); sizes across warps, tiles, blocks of the reduction and its partials."""
    for n in (1, 2, 33, 4097, 8193, 300_001, (1 << 20) + 3):
        flags = rng.random(n) < 2e-3
        rows = [r for r in EDGE_FLAGS[where](n) if 0 <= r < n]
        flags[rows] = True
        ints = rng.integers(-50, 50, n).astype(np.int64)
        b = rng.integers(-64, 64, n) / 8.0
        a = rng.choice([1.0, -1.0], n)
        a[rng.random(n) < 0.01] = 0.0
        cases = [(segmented(get_op("sum"), reverse), ints, (flags,)),
                 (segmented(get_op("gcd"), reverse), ints * 6 - 3, (flags,)),
                 (affine(True, reverse), b, (a, flags))]
        for op, x, aux in cases:
            types = scan_types(op, x.dtype)
            host_aux = tuple(v if v.dtype == bool else v.reshape(-1, 1) for v in aux)
            want = cpu_backend.reduce(x.reshape(-1, 1), op, types, aux=host_aux, reverse=reverse)
            got = gpu.reduce(cp.asarray(x).reshape(-1, 1), op, types, aux=tuple(cp.asarray(v) for v in host_aux),
                             reverse=reverse)
            totals = {f"scan total ({algorithm})": gpu.scan(cp.asarray(x), op, types, want_total=True,
                                                            aux=tuple(cp.asarray(v) for v in aux), reverse=reverse,
                                                            algorithm=algorithm)[1]
                      for algorithm in ("lookback", "lookahead")}
            for field in types.state.names:
                for what, have in (("reduce", got), *totals.items()):
                    np.testing.assert_array_equal(np.asarray(have[field]).reshape(-1),
                                                  np.asarray(want[field]).reshape(-1),
                                                  err_msg=f"{op.name} n={n} {what} {field}")
                    if types.state[field].kind == "b":  # a marker byte of the identity never reaches the host
                        assert np.asarray(have[field]).view(np.uint8).max() <= 1, (op.name, n, what, field)


def test_narrow_integer_segmented_scans_wrap(rng):
    """int8 sums with segments wrap as NumPy's (and the CPU's) do, in dtype=int8, and the float32
    NaN-aware segmented sum stays within float32 rounding of NumPy's float32 nancumsum."""
    n = 100_003
    x = np.full(n, 100, np.int8)
    flags = rng.random(n) < 0.001
    for reverse in (False, True):
        want = distscan.cumsum(x, segments=flags, dtype=np.int8, reverse=reverse, comm=SELF)
        got = distscan.cumsum(cp.asarray(x), segments=cp.asarray(flags), dtype=np.int8, reverse=reverse, comm=SELF)
        np.testing.assert_array_equal(cp.asnumpy(got), want)
    y = rng.standard_normal(n).astype(np.float32)
    y[::7] = np.nan
    got = cp.asnumpy(distscan.nancumsum(cp.asarray(y), segments=cp.zeros(n, bool), comm=SELF))
    assert got.dtype == np.float32
    ref = np.nancumsum(y.astype(np.float64))
    assert np.abs(got - ref).max() <= 64 * np.finfo(np.float32).eps * np.nancumsum(np.abs(y.astype(np.float64)))[-1]


@pytest.mark.parametrize("reverse", [False, True])
def test_ordered_reductions_are_the_cpus_carry(reverse, rng):
    n = (1 << 22) + 3
    b = rng.standard_normal(n)
    a = rng.uniform(0.9, 1.0, n)
    flags = rng.random(n) < 1e-4
    for op, aux in [(affine(True, reverse), (a, flags)), (segmented(get_op("sum"), reverse), (flags,))]:
        types = scan_types(op, b.dtype)
        want = cpu_backend.reduce(b.reshape(-1, 1), op, types, aux=tuple(x if x.dtype == bool else x.reshape(-1, 1)
                                                                           for x in aux), reverse=reverse)
        got = gpu.reduce(cp.asarray(b).reshape(-1, 1), op, types,
                         aux=tuple(cp.asarray(x if x.dtype == bool else x.reshape(-1, 1)) for x in aux), reverse=reverse)
        for field in types.state.names:
            if types.state[field].kind == "b":
                assert got[field][0] == want[field][0], field
            else:
                np.testing.assert_allclose(got[field], want[field], rtol=1e-9, atol=1e-9)


def test_past_2_to_the_31_items():
    """64-bit indexing of the mirrored tiles and of the flags: int8 ones, reverse and segmented."""
    n = (1 << 31) + 5
    x = cp.ones(n, cp.int8)
    y = distscan.cumsum(x, reverse=True, comm=SELF)
    assert int(y[0]) == n and int(y[-1]) == 1 and int(y[n // 2]) == n - n // 2
    del y
    flags = cp.zeros(n, bool)
    flags[1 << 31] = True
    y = distscan.cumsum(x, segments=flags, comm=SELF)
    assert int(y[(1 << 31) - 1]) == 1 << 31 and int(y[1 << 31]) == 1 and int(y[-1]) == 5


def test_declared_operators_on_the_gpu(rng):
    """A declared operator's CUDA expression compiled into the kernels (forward, reverse, exclusive,
    sizes past the look-ahead threshold); a declared structured state is refused with a clear error."""
    hyp, sat = HYPOT, SATURATING
    for n in (1, 8193, (1 << 22) + 1):
        x = rng.standard_normal(n)
        k = rng.integers(0, 3, n)
        for reverse in (False, True):
            for exclusive in (False, True):
                _close(_gpu(distscan.scan, x, hyp, reverse=reverse, exclusive=exclusive),
                       _cpu(distscan.scan, x, hyp, reverse=reverse, exclusive=exclusive), np.float64,
                       np.sqrt(np.sum(x ** 2)) + 1)
                np.testing.assert_array_equal(
                    cp.asnumpy(_gpu(distscan.scan, k, sat, reverse=reverse, exclusive=exclusive)),
                    _cpu(distscan.scan, k, sat, reverse=reverse, exclusive=exclusive))
    st = np.dtype([("n", "f8"), ("m", "f8")])
    mean = distscan.Operator("mean", lambda a, b: a, identity=lambda dt: np.zeros((), st), state=st,
                             lift=lambda v: np.zeros(v.shape, st), project=lambda s: s["m"])
    with pytest.raises(TypeError, match="no GPU form"):
        distscan.scan(cp.arange(5.0), mean, comm=SELF)


def test_declared_operators_differing_only_in_identity_compile_apart(rng):
    """Two declarations of one name and one CUDA expression whose identities differ (an exclusive
    scan starts from it): each gets its own functor, not the other's compiled identity (the GPU's
    module and plan caches go by the functor's name: ec67baa names it by its whole source)."""
    x = rng.integers(0, 9, 1000).astype(np.int64)
    for ident in (-1000, -2000, -1000):  # each neutral for these items: max with a floor below them
        op = distscan.Operator("same but for e", np.maximum, identity=ident, cuda="a > b ? a : b", commutative=True)
        got = cp.asnumpy(distscan.scan(cp.asarray(x), op, exclusive=True, comm=SELF))
        want = distscan.scan(x, op, exclusive=True, comm=SELF)
        np.testing.assert_array_equal(got, want, err_msg=f"identity {ident}")
        assert got[0] == ident


def test_the_command_runs_the_new_scans_on_the_gpu(tmp_path, rng):
    """``distscan --backend cuda`` with --reverse and --segments, and ``distscan recurrence``: the
    chunked pipeline's GPU engine (distscan/pipeline/cuda.py: each chunk's flags and coefficients go
    to the device with its rows) gives the CPU engine's file."""
    from distscan import cli

    n = 100_003
    np.save(tmp_path / "x.npy", rng.integers(-9, 9, (n, 2)).astype(np.int64))
    np.save(tmp_path / "f.npy", rng.random(n) < 0.01)
    np.save(tmp_path / "a.npy", rng.uniform(-1, 1, n))
    np.save(tmp_path / "b.npy", rng.standard_normal(n))
    np.save(tmp_path / "a32.npy", rng.uniform(0.5, 1, n).astype(np.float32))  # with int64 b: float64 y
    np.save(tmp_path / "xi.npy", rng.integers(-9, 9, n))
    for words in (["x.npy", "--reverse", "--segments", "f.npy"], ["x.npy", "--op", "gcd"],
                  ["recurrence", "a.npy", "b.npy", "--initial", "1", "--segments", "f.npy"],
                  ["recurrence", "a32.npy", "xi.npy"]):
        argv = [str(tmp_path / w) if w.endswith(".npy") else w for w in words]
        got = {}
        for backend in ("cpu", "cuda"):
            out = tmp_path / f"{backend}.npy"
            assert cli.main(argv + ["--backend", backend, "-o", str(out), "--quiet", "--force"]) == 0, words
            got[backend] = np.load(out)
        if got["cpu"].dtype.kind == "f":
            np.testing.assert_allclose(got["cuda"], got["cpu"], rtol=0, atol=1e-12 * (np.abs(got["cpu"]).max() + 1))
        else:
            np.testing.assert_array_equal(got["cuda"], got["cpu"])
        if "a32.npy" in words:
            assert got["cuda"].dtype == np.float64


@pytest.mark.parametrize("backend", ["cpu", "cuda"])
def test_the_command_keeps_infinite_and_nan_coefficients_where_the_library_does(tmp_path, rng, backend):
    """A recurrence whose coefficients are infinite or NaN on the first row and beside chunk edges,
    with segments: the file equals the library's one-process call on the host (the same infinities
    and NaNs; the finite values within 1e-12)."""
    from distscan import cli

    n = 100_003
    a = rng.uniform(0.5, 1, n)
    a[[0, 1, 4095, 4096, 50_000, n - 1]] = [np.inf, 0.5, np.nan, np.inf, np.inf, np.nan]
    b = rng.uniform(0.1, 1, n)  # positive: inf * y stays inf
    flags = rng.random(n) < 0.01
    for name, arr in (("a", a), ("b", b), ("f", flags)):
        np.save(tmp_path / f"{name}.npy", arr)
    out = tmp_path / "y.npy"
    assert cli.main(["recurrence", str(tmp_path / "a.npy"), str(tmp_path / "b.npy"), "--segments",
                     str(tmp_path / "f.npy"), "--backend", backend, "-o", str(out), "--quiet"]) == 0
    want = distscan.linear_recurrence(a, b, segments=flags, comm=SELF)
    np.testing.assert_allclose(np.load(out), want, rtol=1e-12, equal_nan=True)


def test_the_command_sends_state_chunks_and_their_flags_through_the_gpu_in_pieces(tmp_path, rng, monkeypatch):
    """The command's state scans in many chunks (64 KB), each through the GPU in pieces
    (``--gpu-memory-limit 32K``), reverse and forward: every chunk on the GPU (a state scan waits
    for CUDA; the plain reverse sum may start on the host), flags and coefficients (float32 in the
    file, float64 in the scan) on the device with their rows; the CPU engine's file (integers bit
    for bit, recurrences within 1e-12 of the largest value), compensated sums correctly rounded."""
    import json

    from distscan import cli
    from distscan.pipeline import chunks

    monkeypatch.setattr(chunks, "CHUNK_BYTES", 64 << 10)
    n = 100_003
    units = rng.integers(-2**20, 2**20, n)
    np.save(tmp_path / "x.npy", rng.integers(-9, 9, (n, 2)).astype(np.int64))
    np.save(tmp_path / "f.npy", (rng.random(n) < 0.001).astype(np.int8))
    np.save(tmp_path / "a.npy", rng.uniform(-1, 1, n).astype(np.float32))
    np.save(tmp_path / "b.npy", rng.standard_normal(n))
    np.save(tmp_path / "e.npy", (units * 2.0**-12).astype(np.float32))
    cases = [["x.npy", "--segments", "f.npy", "--reverse", "--exclusive"], ["x.npy", "--segments", "f.npy", "--op", "max"],
             ["recurrence", "a.npy", "b.npy", "--initial", "1", "--segments", "f.npy", "--reverse"],
             ["recurrence", "a.npy", "b.npy", "--initial", "0.5"], ["e.npy", "--compensated", "--reverse"],
             ["x.npy", "--reverse"]]
    for words in cases:
        argv = [str(tmp_path / w) if w.endswith(".npy") else w for w in words]
        got, reports = {}, {}
        for backend, extra in (("cpu", []), ("cuda", ["--gpu-memory-limit", "32K"])):
            out, rep = tmp_path / f"{backend}.npy", tmp_path / f"{backend}.json"
            assert cli.main(argv + ["--backend", backend, "-o", str(out), "--report", str(rep), "--quiet", "--force"]
                            + extra) == 0, words
            got[backend] = np.load(out)
            reports[backend] = json.loads(rep.read_text())
        g = reports["cuda"]["gpu"]["per_rank"][0]
        assert g["chunks_on_gpu"] + g["chunks_on_host"] > 5, (words, g)
        if words != ["x.npy", "--reverse"]:
            assert g["chunks_on_host"] == 0 and g["slot_rows"] < chunks.CHUNK_BYTES // 16, (words, g)
        if "--compensated" in words:
            e = np.load(tmp_path / "e.npy")
            for y in got.values():  # every sum below 2^37 units: correctly rounded
                assert_compensated(y, e, units, reverse=True, exact=True)
        elif got["cpu"].dtype.kind == "f":
            np.testing.assert_allclose(got["cuda"], got["cpu"], rtol=0, atol=1e-12 * (np.abs(got["cpu"]).max() + 1))
        else:
            np.testing.assert_array_equal(got["cuda"], got["cpu"])
