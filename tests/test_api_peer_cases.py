"""The cumulative-scan test cases of peer projects, ported to distscan and checked against NumPy, each in
two modes (serial, and split over the ranks: tests.support.two_modes):

- Dask (dask/dask): ``dask/array/tests/test_reductions.py`` (test_array_cumreduction_axis,
  test_array_cumreduction_dtype, test_array_cumreduction_ufunc, test_array_cumreduction_out).
- CuPy (cupy/cupy): ``tests/cupy_tests/math_tests/test_sumprod.py`` (TestCumsum, TestCumprod,
  TestCumulativeSumProd, TestCubReduction.test_cub_cumsum/test_cub_cumprod).
- Heat (helmholtz-analytics/heat): ``tests/core/test_arithmetics.py`` (formerly
  ``heat/core/tests/test_arithmetics.py``; test_cumsum, test_cumprod, test_cumsum_, test_cumprod_).
- Array API test suite (data-apis/array-api-tests): ``array_api_tests/test_statistical_functions.py``
  (test_cumulative_sum, test_cumulative_prod); ``include_initial=True`` maps to distscan's
  exclusive scan followed by ``reduce``.

Comparisons as in tests/test_api_numpy_cases.py (tests.support.reference.assert_matches).
"""

from __future__ import annotations

import numpy as np
import pytest

import distscan

from tests.support.reference import UFUNCS, Ref, assert_matches, numpy_result_dtype
from tests.support.two_modes import (ALL_DTYPES, NAMED, UNSET, Ctx, assert_is_out, check_scan, shaped_arange,
                                     shaped_random)

pytestmark = [pytest.mark.anyranks, pytest.mark.timeout(60)]


# ---------------------------------------------------------------------------------------------
# Dask: dask/array/tests/test_reductions.py
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("opname", ["sum", "prod"])
@pytest.mark.parametrize("use_nan", [False, True])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_dask_array_cumreduction_axis(ctx, opname, use_nan, axis):
    """test_array_cumreduction_axis: arange(1320.).reshape(10, 11, 12), a[1] = nan.

    With axis=None, NumPy's cumprod is all zeros (the first element is 0; later values overflow
    to inf only in partial products that never meet the zero).  No NaN may appear where NumPy has
    none."""
    s = (10, 11, 12)
    a = np.arange(np.prod(s), dtype=float).reshape(s)
    if use_nan:
        a[1] = np.nan
    check_scan(ctx, a, opname, axis=axis)
    check_scan(ctx, a, opname, axis=axis)   # a second split of the rows (ctx.counts rotates schemes)


@pytest.mark.parametrize("opname", ["sum", "prod"])
@pytest.mark.parametrize("target_dtype", [None, int, float])
def test_dask_array_cumreduction_dtype(ctx, opname, target_dtype):
    """test_array_cumreduction_dtype: linspace(0, 1, 10) with dtype None/int/float."""
    a = np.linspace(0, 1, num=10, dtype=float)
    check_scan(ctx, a, opname, axis=0, dtype=target_dtype if target_dtype else UNSET)


@pytest.mark.parametrize("opname", ["sum", "prod", "max"])
@pytest.mark.parametrize("target_dtype", [None, int, float])
@pytest.mark.parametrize("spelling", ["name", "ufunc"])
def test_dask_array_cumreduction_ufunc(ctx, opname, target_dtype, spelling):
    """test_array_cumreduction_ufunc: ufunc.accumulate(a, dtype=target) through distscan.scan,
    the operator given by name or, as Dask does, as the NumPy ufunc itself."""
    a = np.linspace(0, 1, num=10, dtype=float)
    c = ctx.counts(10)
    check_scan(ctx, a, opname, dtype=target_dtype if target_dtype else UNSET, via="scan", counts=c)
    if spelling == "ufunc":
        part = Ctx.rows(a, c, ctx.rank).copy()
        kw = {} if target_dtype is None else {"dtype": target_dtype}
        got = ctx.run(lambda: distscan.scan(part, UFUNCS[opname], comm=ctx.comm, **kw))
        ref = Ref(a, opname, dtype=target_dtype).part(c, ctx.rank, 1)
        ctx.check(lambda: assert_matches(got, ref, what=f"op={UFUNCS[opname].__name__}"))


@pytest.mark.parametrize("opname", ["sum", "prod"])
def test_dask_array_cumreduction_out(ctx, opname):
    """test_array_cumreduction_out: func(x, axis=0, out=x) with x = ones((10, 10))."""
    g = np.ones((10, 10))
    for c in ctx.all_counts(10):
        x = Ctx.rows(g, c, ctx.rank).copy()
        res = ctx.run(lambda: NAMED[opname](x, axis=0, out=x, comm=ctx.comm))
        expected = Ctx.rows(UFUNCS[opname].accumulate(g, axis=0), c, ctx.rank)
        ctx.check(lambda: (assert_is_out(res, x), np.testing.assert_array_equal(x, expected)))


# ---------------------------------------------------------------------------------------------
# CuPy: tests/cupy_tests/math_tests/test_sumprod.py
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_cupy_TestCumsum(ctx, dtype):
    """TestCumsum: test_cumsum (5,), test_cumsum_2dim (4, 5) flattened (NumPy's default axis is
    None; distscan's is 0, so it is passed), test_cumsum_axis / test_ndarray_cumsum_axis
    (4, 5, 6) with axis 0, 1, 2, and the input is never overwritten."""
    check_scan(ctx, shaped_arange((5,), dtype), "sum")
    check_scan(ctx, shaped_arange((4, 5), dtype), "sum", axis=None)
    for axis in (0, 1, 2, -1):
        check_scan(ctx, shaped_arange((4, 5, 6), dtype), "sum", axis=axis)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_cupy_TestCumsum_out(ctx, dtype):
    """TestCumsum.test_cumsum_out / _out_noncontiguous / test_cumsum_axis_out / _axis_out_noncontiguous.

    CuPy passes out of the *input* dtype; NumPy then casts.  distscan requires out of the result
    dtype (README; the brief: wrong dtype -> error), so out here has NumPy's result dtype, and
    test_out_of_another_dtype_is_an_error covers the input-dtype out."""
    rd = numpy_result_dtype("sum", dtype)
    a = shaped_arange((5,), dtype)
    for noncontig in (False, True):
        c = ctx.counts(5)
        part = Ctx.rows(a, c, ctx.rank).copy()
        out = np.zeros((2 * len(part),), rd)[::2] if noncontig else np.zeros(part.shape, rd)
        res = ctx.run(lambda: distscan.cumsum(part, out=out, comm=ctx.comm))
        ref = Ref(a, "sum").part(c, ctx.rank, 1)
        ctx.check(lambda: (assert_is_out(res, out), assert_matches(out, ref, what="out")))
    shape = (4, 5, 6)
    a = shaped_arange(shape, dtype)
    for axis in (0, 1, 2):
        for noncontig in (False, True):
            c = ctx.counts(4)
            part = Ctx.rows(a, c, ctx.rank).copy()
            out = (np.zeros((2 * part.shape[0],) + shape[1:], rd)[::2] if noncontig
                   else np.zeros(part.shape, rd))
            res = ctx.run(lambda: distscan.cumsum(part, axis=axis, out=out, comm=ctx.comm))
            ref = Ref(a, "sum", axis=axis).part(c, ctx.rank, 30)
            ctx.check(lambda: (assert_is_out(res, out), assert_matches(out, ref, what=f"out axis={axis}")))


@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_cupy_TestCumsum_axis_empty(ctx, dtype, axis):
    """TestCumsum.test_cumsum_axis_empty: shape (0, 1, 2)."""
    check_scan(ctx, shaped_arange((0, 1, 2), dtype), "sum", axis=axis)


@pytest.mark.parametrize("opname", ["sum", "prod"])
def test_cupy_invalid_axis(ctx, opname):
    """TestCumsum/TestCumprod.test_invalid_axis_lower*/upper*: AxisError."""
    a = shaped_arange((4, 5), np.float32)
    part = Ctx.rows(a, ctx.counts(4), ctx.rank).copy()
    for axis in (-a.ndim - 1, a.ndim + 1, a.ndim):
        ctx.raises(np.exceptions.AxisError, lambda: NAMED[opname](part, axis=axis, comm=ctx.comm))


def test_cupy_arraylike(ctx):
    """TestCumsum/TestCumprod.test_*_arraylike: CuPy rejects a tuple; NumPy (and distscan's README:
    'lists and scalars are accepted') take it as an array."""
    vals = tuple(range(1, 2 * ctx.size + 1))
    # Every rank holds at least one element: an empty tuple has no integer dtype (NumPy makes it
    # float64), so an empty part would make the ranks' dtypes differ.
    c = np.full(ctx.size, 2)
    part = tuple(Ctx.rows(np.array(vals), c, ctx.rank).tolist())
    got = ctx.run(lambda: distscan.cumsum(part, comm=ctx.comm))
    ctx.check(lambda: np.testing.assert_array_equal(got, Ctx.rows(np.cumsum(vals), c, ctx.rank), strict=True))
    got = ctx.run(lambda: distscan.cumprod(part, comm=ctx.comm))
    ctx.check(lambda: np.testing.assert_array_equal(got, Ctx.rows(np.cumprod(vals), c, ctx.rank), strict=True))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_cupy_TestCumprod(ctx, dtype):
    """TestCumprod: test_cumprod_1dim, test_cumprod_2dim_without_axis (flattened),
    test_cumprod_2dim_with_axis / test_ndarray_cumprod_2dim_with_axis (axis=1), and axis 0."""
    check_scan(ctx, shaped_arange((5,), dtype), "prod")
    check_scan(ctx, shaped_arange((4, 5), dtype), "prod", axis=None)
    check_scan(ctx, shaped_arange((4, 5), dtype), "prod", axis=1)
    check_scan(ctx, shaped_arange((4, 5), dtype), "prod", axis=0)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_cupy_TestCumprod_out(ctx, dtype):
    """TestCumprod.test_cumprod_out / _out_noncontiguous (out of NumPy's result dtype, see above)."""
    rd = numpy_result_dtype("prod", dtype)
    a = shaped_arange((5,), dtype)
    for noncontig in (False, True):
        c = ctx.counts(5)
        part = Ctx.rows(a, c, ctx.rank).copy()
        out = np.zeros((2 * len(part),), rd)[::2] if noncontig else np.zeros(part.shape, rd)
        res = ctx.run(lambda: distscan.cumprod(part, out=out, comm=ctx.comm))
        ref = Ref(a, "prod").part(c, ctx.rank, 1)
        ctx.check(lambda: (assert_is_out(res, out), assert_matches(out, ref, what="out")))


def test_cupy_cumprod_int8_dtype_int8(ctx):
    """TestCumprod.test_cumprod_huge_array in small: ones(n, 'b') with dtype='b' stays all 1."""
    g = np.ones(1000, np.int8)
    got = check_scan(ctx, g, "prod", dtype=np.int8)
    ctx.check(lambda: np.testing.assert_equal(bool((got == 1).all()), True))


@pytest.mark.parametrize("opname", ["sum", "prod"])
@pytest.mark.parametrize("dtype", [d for d in ALL_DTYPES if d != "bool"])
def test_cupy_TestCumulativeSumProd_dtype(ctx, opname, dtype):
    """TestCumulativeSumProd.test_dtype: int16 arange with every dtype= (narrowing included)."""
    a = shaped_arange((5,), np.int16)
    check_scan(ctx, a, opname, dtype=dtype)
    a = shaped_arange((12,), np.int16) * np.int16(25)   # values up to 300: narrowing to int8 wraps
    check_scan(ctx, a, opname, dtype=dtype)


@pytest.mark.parametrize("opname", ["sum", "prod"])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_cupy_TestCumulativeSumProd_axes_and_include_initial(ctx, opname, dtype):
    """TestCumulativeSumProd: test_axis (axis=1), test_negative_axis (axis=-1), test_1d, and the
    include_initial variants (exclusive scan; the last element is the total, see reduce)."""
    a3 = shaped_arange((3, 4, 5), dtype)
    check_scan(ctx, a3, opname, axis=1)
    check_scan(ctx, a3, opname, axis=-1)
    check_scan(ctx, a3, opname, axis=1, exclusive=True)
    check_scan(ctx, a3, opname, axis=-1, via="exclusive_scan")
    a1 = shaped_arange((5,), dtype)
    check_scan(ctx, a1, opname)
    c = ctx.counts(5)
    check_scan(ctx, a1, opname, via="exclusive_scan", counts=c)
    part = Ctx.rows(a1, c, ctx.rank).copy()
    total = ctx.run(lambda: distscan.reduce(part, opname, comm=ctx.comm))
    ref = Ref(a1, opname)

    def verify():
        last = (ref.exact if ref.exact is not None else ref.expected_rounded())[-1]
        assert np.asarray(total).dtype == ref.dtype, (np.asarray(total).dtype, ref.dtype)
        np.testing.assert_allclose(np.asarray(total, np.complex128), np.asarray(last, np.complex128), rtol=1e-3)
    ctx.check(verify)


@pytest.mark.parametrize("opname", ["sum", "prod"])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_cupy_TestCumulativeSumProd_0d_and_empty_axis(ctx, opname, dtype):
    """TestCumulativeSumProd.test_0d (flattened: each rank holds one element), test_empty_axis
    and test_empty_axis_include_initial ((3, 0, 4), axis=1)."""
    x = np.asarray(3, dtype=dtype)
    got = ctx.run(lambda: NAMED[opname](x, axis=None, comm=ctx.comm))
    ref = Ref(np.full(ctx.size, x), opname).part(np.ones(ctx.size, int), ctx.rank, 1)
    ctx.check(lambda: assert_matches(got, ref, what="0-d"))
    e = np.empty((3, 0, 4), dtype=dtype)
    check_scan(ctx, e, opname, axis=1)
    check_scan(ctx, e, opname, axis=1, exclusive=True)


@pytest.mark.parametrize("opname", ["sum", "prod"])
@pytest.mark.parametrize("in_dtype", [np.int8, np.uint16])
def test_cupy_narrow_int_promotion_include_initial(ctx, opname, in_dtype):
    """TestCumulativeSumProd.test_narrow_int_promotion_include_initial: int8 -> int64,
    uint16 -> uint64, also for the exclusive scan."""
    a = shaped_arange((5,), in_dtype)
    got = check_scan(ctx, a, opname, via="exclusive_scan")
    ctx.check(lambda: np.testing.assert_equal(got.dtype, np.dtype(np.int64 if in_dtype == np.int8 else np.uint64)))


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("shape", [(64,), (16, 16), (8, 2, 8), (4, 2, 2, 4)])
@pytest.mark.parametrize("dtype", list("bhilBHILfdFD"))
def test_cupy_TestCubReduction_cumsum_cumprod(ctx, dtype, shape, order):
    """TestCubReduction.test_cub_cumsum / test_cub_cumprod: shaped_random, C or Fortran order,
    flattened scan (a.cumsum()).  For complex cumprod the overflow may end as inf or nan
    (CuPy's _mitigate_cumprod); only the non-finite positions are compared there."""
    a = shaped_random(shape, dtype, order=order)
    prep = (lambda p: np.asfortranarray(p)) if order == "F" else None
    check_scan(ctx, a, "sum", axis=None, prepare=prep)
    check_scan(ctx, a, "prod", axis=None, prepare=prep, nonfinite_equiv=np.dtype(dtype).kind == "c")


# ---------------------------------------------------------------------------------------------
# Heat: tests/core/test_arithmetics.py
# ---------------------------------------------------------------------------------------------

def test_heat_cumsum(ctx):
    """test_cumsum: ones (2, 4) int32 axis 1; (4, 2) int64 split=0 axis 0; (2, 2, 2) float with
    out=float32 along the split axis; dtype=float64; axis 2; errors."""
    # heat's int32 stays int32; NumPy's (and distscan's) cumsum of int32 is int64.
    a = np.ones((2, 4), np.int32)
    c = ctx.counts(2)
    got = check_scan(ctx, a, "sum", axis=1, counts=c)
    ctx.check(lambda: np.testing.assert_array_equal(got, Ctx.rows(np.array([[1, 2, 3, 4]] * 2), c, ctx.rank)))
    a = np.ones((4, 2), np.int64)
    c = ctx.counts(4)
    got = check_scan(ctx, a, "sum", axis=0, counts=c)
    ctx.check(lambda: np.testing.assert_array_equal(got, Ctx.rows(np.array([[1, 1], [2, 2], [3, 3], [4, 4]]), c, ctx.rank)))

    a = np.ones((2, 2, 2), np.float32)
    c = ctx.counts(2)
    part = Ctx.rows(a, c, ctx.rank).copy()
    out = np.empty(part.shape, np.float32)
    res = ctx.run(lambda: distscan.cumsum(part, axis=0, out=out, comm=ctx.comm))
    expected = np.array([[[1, 1], [1, 1]], [[2, 2], [2, 2]]], np.float32)
    ctx.check(lambda: (assert_is_out(res, out), np.testing.assert_array_equal(out, Ctx.rows(expected, c, ctx.rank))))

    a = np.ones((2, 2, 2), np.int32)
    got = check_scan(ctx, a, "sum", axis=1, dtype=np.float64)
    check_scan(ctx, np.ones((2, 2, 2), np.float32), "sum", axis=2)

    part = Ctx.rows(np.ones((2, 2)), ctx.counts(2), ctx.rank).copy()
    ctx.raises(TypeError, lambda: distscan.cumsum(part, axis="1", comm=ctx.comm))
    ctx.raises(TypeError, lambda: distscan.cumsum(part, axis=0.5, comm=ctx.comm))
    ctx.raises(ValueError, lambda: distscan.cumsum(part, axis=2, comm=ctx.comm))
    a = Ctx.rows(np.ones((2, 2, 2)), ctx.counts(2), ctx.rank).copy()
    bad_out = np.empty((a.shape[0] + 1, 2, 2))
    ctx.raises(ValueError, lambda: distscan.cumsum(a, axis=2, out=bad_out, comm=ctx.comm))


def test_heat_cumprod(ctx):
    """test_cumprod: full((2, 4), 2) int32 axis 1; (4, 2) int64 split=0; (2, 2, 2) out=float32;
    dtype=float64; errors."""
    a = np.full((2, 4), 2, np.int32)
    c = ctx.counts(2)
    got = check_scan(ctx, a, "prod", axis=1, counts=c)
    ctx.check(lambda: np.testing.assert_array_equal(got, Ctx.rows(np.array([[2, 4, 8, 16]] * 2), c, ctx.rank)))
    a = np.full((4, 2), 2, np.int64)
    c = ctx.counts(4)
    got = check_scan(ctx, a, "prod", axis=0, counts=c)
    ctx.check(lambda: np.testing.assert_array_equal(got, Ctx.rows(np.array([[2, 2], [4, 4], [8, 8], [16, 16]]), c, ctx.rank)))
    a = np.full((2, 2, 2), 2, np.float32)
    c = ctx.counts(2)
    part = Ctx.rows(a, c, ctx.rank).copy()
    out = np.empty(part.shape, np.float32)
    res = ctx.run(lambda: distscan.cumprod(part, axis=0, out=out, comm=ctx.comm))
    expected = np.array([[[2, 2], [2, 2]], [[4, 4], [4, 4]]], np.float32)
    ctx.check(lambda: (assert_is_out(res, out), np.testing.assert_array_equal(out, Ctx.rows(expected, c, ctx.rank))))
    check_scan(ctx, np.full((2, 2, 2), 2, np.int32), "prod", axis=1, dtype=np.float64)
    check_scan(ctx, np.full((2, 2, 2), 2, np.float32), "prod", axis=2)
    part = Ctx.rows(np.ones((2, 2)), ctx.counts(2), ctx.rank).copy()
    ctx.raises(TypeError, lambda: distscan.cumprod(part, axis="1", comm=ctx.comm))
    ctx.raises(ValueError, lambda: distscan.cumprod(part, axis=2, comm=ctx.comm))


@pytest.mark.parametrize("opname", ["sum", "prod"])
@pytest.mark.parametrize("dtype", ["int32", "int64", "float32"])
def test_heat_inplace_cumsum_cumprod(ctx, opname, dtype):
    """test_cumsum_ / test_cumprod_: in place (out is the input) along every axis of split
    tensors; int32 keeps int32 through dtype=, as heat's in-place operation does."""
    base = np.full((2, 4), 2 if opname == "prod" else 1, dtype)
    for axis in (0, 1):
        c = ctx.counts(2)
        x = Ctx.rows(base, c, ctx.rank).copy()
        res = ctx.run(lambda: NAMED[opname](x, axis=axis, dtype=x.dtype, out=x, comm=ctx.comm))
        expected = Ctx.rows(UFUNCS[opname].accumulate(base, axis=axis, dtype=dtype), c, ctx.rank)
        ctx.check(lambda: (assert_is_out(res, x), np.testing.assert_array_equal(x, expected)))
    base3 = np.full((2, 2, 2), 2 if opname == "prod" else 1, dtype)
    for axis in (0, 1, 2):
        c = ctx.counts(2)
        x = Ctx.rows(base3, c, ctx.rank).copy()
        ctx.run(lambda: NAMED[opname](x, axis=axis, dtype=x.dtype, out=x, comm=ctx.comm))
        expected = Ctx.rows(UFUNCS[opname].accumulate(base3, axis=axis, dtype=dtype), c, ctx.rank)
        ctx.check(lambda: np.testing.assert_array_equal(x, expected))


@pytest.mark.manyranks
def test_heat_single_element_split(ctx):
    """test_cumsum_ 'Single element split': [1, 2] over all ranks (more ranks than elements)."""
    g = np.array([1, 2])
    for c in ctx.all_counts(2):
        x = Ctx.rows(g, c, ctx.rank).copy()
        res = ctx.run(lambda: distscan.cumsum(x, out=x, comm=ctx.comm))
        ctx.check(lambda: (assert_is_out(res, x), np.testing.assert_array_equal(x, Ctx.rows(np.array([1, 3]), c, ctx.rank))))


# ---------------------------------------------------------------------------------------------
# Array API test suite: array_api_tests/test_statistical_functions.py
# ---------------------------------------------------------------------------------------------

# dh.promotion_table: the dtypes each dtype promotes to (for the kwarg dtype= of cumulative_sum).
_PROMOTES_TO = {
    "bool": ["bool"],
    "int8": ["int8", "int16", "int32", "int64"], "int16": ["int16", "int32", "int64"],
    "int32": ["int32", "int64"], "int64": ["int64"],
    "uint8": ["uint8", "uint16", "uint32", "uint64", "int16", "int32", "int64"],
    "uint16": ["uint16", "uint32", "uint64", "int32", "int64"], "uint32": ["uint32", "uint64", "int64"],
    "uint64": ["uint64"],
    "float32": ["float32", "float64", "complex64", "complex128"], "float64": ["float64", "complex128"],
    "complex64": ["complex64", "complex128"], "complex128": ["complex128"],
}


@pytest.mark.parametrize("opname", ["sum", "prod"])
def test_array_api_cumulative_sum_prod(ctx, opname):
    """test_cumulative_sum / test_cumulative_prod: random numeric arrays (min_dims=1), any axis
    (None only for 1-D there; any ndim here), kwarg dtype from the promotion table, and
    include_initial (exclusive scan: the first element is 0 / 1; then the total).  The suite's
    hypothesis search is replaced by a seeded draw of 40 cases."""
    rng = ctx.rng
    for _ in range(40):
        dt = str(rng.choice(list(_PROMOTES_TO)))
        ndim = int(rng.integers(1, 4))
        shape = (int(rng.integers(0, 13)),) + tuple(int(rng.integers(0, 5)) for _ in range(ndim - 1))
        kind = np.dtype(dt).kind
        if kind == "b":
            g = rng.integers(0, 2, shape).astype(bool)
        elif kind in "iu":
            info = np.iinfo(dt)
            g = rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True)  # overflow wraps
        else:
            g = (rng.uniform(0.5, 1.5, shape) * rng.choice([-1, 1], shape)).astype(dt)
            if kind == "c":
                g = (g + 1j * rng.uniform(-0.5, 0.5, shape)).astype(dt)
        axis = rng.choice([None] + list(range(-ndim, ndim)))
        axis = None if axis is None else int(axis)
        kw_dtype = rng.choice([None] + _PROMOTES_TO[dt])
        include_initial = bool(rng.integers(0, 2))
        kwargs = dict(axis=axis, dtype=UNSET if kw_dtype is None else np.dtype(kw_dtype))
        check_scan(ctx, g, opname, **kwargs)
        if include_initial:
            # The leading 0 / 1 of include_initial is the exclusive scan's first element (the
            # reference starts with NumPy's identity); the trailing total is reduce's (tested below).
            check_scan(ctx, g, opname, exclusive=True, **kwargs)
