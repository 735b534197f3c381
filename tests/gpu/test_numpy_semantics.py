"""The GPU side of NumPy's semantics, on CuPy arrays through the API on one rank (skipped without a GPU):
the backend gives back the shape it was given, float products absorb zeros through the tile-parallel
kernel as in sequential order, ``out=`` overlapping the input, and C-ordered results off axis 0.
"""

from __future__ import annotations

import numpy as np
import pytest

from distscan._dtypes import scan_types
from distscan.ops import OPS

from tests.support.devices import require_gpu
from tests.support.reference import assert_same_floats, reference_scan

cp = require_gpu()
pytestmark = pytest.mark.gpu

import distscan  # noqa: E402
from distscan.backends import cuda as gpu  # noqa: E402
from mpi4py import MPI  # noqa: E402

COMM = MPI.COMM_SELF


@pytest.mark.parametrize("opname", sorted(OPS))
@pytest.mark.parametrize("dtype", [np.int32, np.float64, np.bool_])
def test_backend_returns_the_shape_it_was_given(opname, dtype):
    op = OPS[opname]
    if np.dtype(dtype).kind not in op.kinds:
        pytest.skip("operator not defined for dtype")
    types = scan_types(op, dtype)
    for n in (1, 1000, 100003):
        x = cp.ones(n, dtype)
        for exclusive in (False, True):
            assert gpu.scan(x, op, types, exclusive=exclusive)[0].shape == (n,)
            assert gpu.scan(x.reshape(-1, 1), op, types, exclusive=exclusive)[0].shape == (n, 1)
            assert gpu.scan(x, op, types, exclusive=exclusive, seed=np.ones(1, types.acc))[0].shape == (n,)
            assert distscan.scan(x, opname, exclusive=exclusive, comm=COMM).shape == (n,)
    assert distscan.cumsum(cp.arange(1000)).shape == (1000,)


def test_cumprod_of_arange_is_all_zeros():
    for n in (1320, 1 << 20):
        x = cp.arange(n, dtype=cp.float64)
        got = cp.asnumpy(distscan.cumprod(x, comm=COMM))
        assert (got == 0).all() and not np.isnan(got).any()
        assert distscan.reduce(x, "prod", comm=COMM) == 0
    x = cp.where(cp.arange(300000) == 0, 0.0, 2.0).astype(cp.float32)
    got = cp.asnumpy(distscan.cumprod(x, dtype=np.float64, comm=COMM))
    assert (got == 0).all()
    got = cp.asnumpy(distscan.cumprod(cp.full(300000, 2.0), initial=0.0, comm=COMM))
    assert (got == 0).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("exclusive", [False, True])
def test_products_with_zeros_and_overflow_match_numpy(dtype, exclusive, rng):
    dt = np.dtype(dtype)
    acc = np.float32 if dt == np.float16 else dt
    big = float(np.finfo(dt).max) ** 0.5 * 4
    values = np.array([0.0, -0.0, big, -big, 2.0, -3.0, 1.0, np.inf, np.nan])
    p = np.array([0.02, 0.01, 0.3, 0.1, 0.2, 0.1, 0.27, 0.005, 0.002])
    for n in (1000, 70001, 1 << 20):
        x = rng.choice(values, n, p=p / p.sum()).astype(dt)
        for start_zero in (False, True):
            if start_zero:
                x[0] = 0
            ref = reference_scan(x, "prod", exclusive=exclusive)  # in float32 for float16, as distscan
            got = cp.asnumpy(distscan.cumprod(cp.asarray(x), exclusive=exclusive, comm=COMM))
            assert_same_floats(got.astype(acc), ref.astype(acc))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_zero_search_answers_as_the_array_operations(dtype, rng):
    """backends/cuda/zero_search.py's kernels (the float products' repair: the first zero, and what
    the rows after it hold) give what absorb.ArraySearch's CuPy array operations give, on 1-D
    arrays, columns of (n, 3) rows, reversed views and whole C-ordered rows, with zeros, infinities
    and NaN anywhere (none, one, many; the first and last rows), in the items or the results."""
    from distscan.backends.absorb import ArraySearch
    from distscan.backends.cuda.zero_search import SEARCH
    plain = ArraySearch(cp)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan], dtype)
    for n in (1, 2, 31, 1000, 70001, 1 << 20):
        for density in (0.0, 1e-5, 0.01, 0.5, 1.0):
            host = np.full((n, 3), 1.5, dtype), np.full((n, 3), -0.75, dtype)
            for h in host:
                hit = rng.random(h.shape) < density
                h[hit] = rng.choice(specials, int(hit.sum()))
                if rng.random() < 0.3:
                    h[rng.choice([0, n - 1])] = rng.choice(specials)
            a2, b2 = (cp.asarray(h) for h in host)
            assert SEARCH.any_zero(a2, b2) == plain.any_zero(a2, b2), (n, density)
            for a, b in ((a2[:, 0], b2[:, 1]), (a2[:, 2].copy(), b2[:, 2].copy()), (a2[::-1, 1], b2[::-1, 0]),
                         (a2[:, :1], b2[:, 1:2])):
                assert SEARCH.any_zero(a, b) == plain.any_zero(a, b), (n, density)
                if a.ndim == 1:
                    assert SEARCH.first_zero(a, b) == plain.first_zero(a, b), (n, density)
                    assert SEARCH.tail_marks(a, b) == plain.tail_marks(a, b), (n, density)


@pytest.mark.parametrize("dtype", [np.int64, np.float32, np.float16])
def test_out_overlapping_the_input(dtype, rng):
    for n in (10, 100003, 3_000_001):
        host = (rng.random(n + 1) < 0.05).astype(dtype)
        for shift in (1, -1):
            buf = cp.asarray(host)
            x, out = (buf[:-1], buf[1:]) if shift == 1 else (buf[1:], buf[:-1])
            src = host[:-1] if shift == 1 else host[1:]
            expected = np.cumsum(src.astype(np.float64)).astype(dtype)
            res = distscan.cumsum(x, out=out, dtype=dtype, comm=COMM)
            assert res is out
            np.testing.assert_array_equal(cp.asnumpy(out), expected)


def test_local_axis_results_are_c_contiguous():
    x = cp.arange(2 * 3 * 4, dtype=cp.float32).reshape(2, 3, 4)
    for axis in (1, 2, -1):
        got = distscan.cumsum(x, axis=axis, comm=COMM)
        assert got.flags.c_contiguous
        np.testing.assert_array_equal(cp.asnumpy(got), np.cumsum(cp.asnumpy(x), axis=axis))


@pytest.mark.parametrize("call", ["cumsum", "reverse", "recurrence"])
def test_float32_subnormals_are_kept_as_numpy_keeps_them(call):
    """cumsum of 1000 copies of float32's smallest subnormal is 1000 of them, as NumPy's (and
    CuPy's own cumsum) give; compiled by CuPy's RawModule (-ftz=true) the kernels flushed each to
    0 (ftz_probe.py, s52): modules.raw_module compiles without it."""
    tiny = np.finfo(np.float32).smallest_subnormal
    x = np.full(1000, tiny, np.float32)
    d = cp.asarray(x)
    got = {"cumsum": lambda: distscan.cumsum(d, comm=COMM),
           "reverse": lambda: distscan.cumsum(d, reverse=True, comm=COMM)[::-1],
           "recurrence": lambda: distscan.linear_recurrence(1.0, d, comm=COMM)}[call]()
    np.testing.assert_array_equal(cp.asnumpy(got), np.cumsum(x))


_CAST_DTYPES = [np.float32, np.float64, np.complex64, np.complex128, np.float16, np.int32]


def _cast_values(dtype):
    """Values whose casts a flush to zero or a wrong rounding would change: float32 and float64
    subnormals, float64s that round to float32 subnormals or overflow, signed zeros, NaN, inf."""
    tiny32 = float(np.finfo(np.float32).smallest_subnormal)
    reals = np.array([0.0, -0.0, 1.0, -2.5, tiny32, -tiny32, 3 * tiny32, 1.0e-40, -7.3e-39, 1.0e-46, 1.2e-38,
                      5e-324, 1e300, -1e300, 3.4028235e38, np.inf, -np.inf, np.nan, 1.0 / 3.0], np.float64)
    dt = np.dtype(dtype)
    with np.errstate(all="ignore"):
        if dt.kind == "c":
            return (reals + 1j * reals[::-1]).astype(dt)
        if dt.kind == "i":
            return np.arange(-9, 10).astype(dt)
        return reals.astype(dt)


def _assert_same_bits(got, want):
    """Bit for bit (a signed zero, a subnormal), but any NaN for a NaN: the GPU's conversion of a
    NaN gives its canonical one, NumPy's keeps the payload."""
    g, w = got.reshape(-1), want.reshape(-1)
    if w.dtype.kind == "c":  # (its parts)
        g, w = g.view(w.real.dtype), w.view(w.real.dtype)
    nan = np.isnan(w)
    np.testing.assert_array_equal(np.isnan(g), nan)
    np.testing.assert_array_equal(g[~nan].view(np.uint8), w[~nan].view(np.uint8))


@pytest.mark.parametrize("src", _CAST_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("dst", [np.float32, np.float64, np.complex64, np.complex128], ids=lambda d: np.dtype(d).name)
def test_the_backend_s_cast_gives_numpy_s_bits(src, dst):
    """``backends.cuda.astype`` (casts.py) against NumPy's ``astype``, bit for bit: subnormals kept
    (CuPy's own cast flushes them), contiguous, strided, 0-d and empty arrays; a complex value into
    a real dtype is CuPy's cast (it warns, as NumPy does)."""
    if np.dtype(src).kind == "c" and np.dtype(dst).kind != "c":
        pytest.skip("a complex value cast to a real dtype: CuPy's cast")
    x = _cast_values(src)
    with np.errstate(all="ignore"):
        for a in (x, np.repeat(x, 2)[::2], x[3:4].reshape(()), x[:0]):
            got = gpu.astype(cp.asarray(a), dst)
            assert got.dtype == np.dtype(dst) and got.shape == a.shape and got.flags.c_contiguous
            _assert_same_bits(cp.asnumpy(got), a.astype(dst))
    same = cp.asarray(x.astype(dst))
    assert gpu.astype(same, dst) is same


@pytest.mark.parametrize("a_dtype,b_dtype", [(np.float32, np.float64), (np.float32, np.complex64),
                                             (np.float32, np.complex128), (np.complex64, np.complex128)])
def test_subnormal_coefficients_keep_their_value_cold_and_warm(a_dtype, b_dtype):
    """A recurrence's coefficients cast to the accumulator (``Part`` and ``Kind.aux``: the
    backend's ``astype``): y[1] = a[1] * b[0] is the subnormal a[1], as NumPy's float64 loop gives,
    on the first call (``Part``) and the calls of the same kind after it (``Kind``)."""
    n = 1000
    acc = np.result_type(a_dtype, b_dtype)
    tiny = np.finfo(np.float32).smallest_subnormal
    a = np.full(n, tiny, a_dtype)
    b = np.zeros(n, b_dtype)
    b[0] = 1
    want = distscan.linear_recurrence(a, b, comm=COMM)  # (the CPU's)
    assert want[1] != 0
    d_a, d_b = cp.asarray(a), cp.asarray(b)
    for _ in range(3):
        got = distscan.linear_recurrence(d_a, d_b, comm=COMM)
        assert got.dtype == acc
        np.testing.assert_array_equal(cp.asnumpy(got), want)
    strided = cp.asarray(np.repeat(a, 2))[::2]  # (not contiguous: the Part route)
    np.testing.assert_array_equal(cp.asnumpy(distscan.linear_recurrence(strided, d_b, comm=COMM)), want)
