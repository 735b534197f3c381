"""NumPy's own test cases of cumulative scans, ported to distscan and checked against NumPy, each in two
modes (serial, and split over the ranks: tests.support.two_modes):

``numpy/lib/tests/test_function_base.py`` (TestCumsum, TestCumprod, test_cumulative_include_initial),
``numpy/_core/tests/test_ufunc.py`` (accumulate: zero-size, byte order, out byte order, out shape,
out dtype resolution, dtype=int32 with out), ``numpy/_core/tests/test_umath.py``
(test_memoverlap_accumulate*), ``numpy/_core/tests/test_regression.py`` (test_zerosize_accumulate),
``numpy/lib/tests/test_nanfunctions.py`` (TestNanFunctions_CumSumProd: allnans, empty, keepdims,
out), ``numpy/ma/tests/test_core.py`` (test_cumsumprod), ``numpy/matrixlib/tests/test_interaction.py``
(cumulative functions on np.matrix); and NaN and inf propagating across ranks.

Comparisons (tests.support.reference.assert_matches): integer and bool results exactly (wrap-around
included); float and complex results against a float64/complex128 reference computed from the input
cast to the result dtype (NumPy casts to ``dtype=`` first), with ``|got - ref| <= TOL[dtype] * M``,
where M is the running sum of ``|x|`` for sums and ``|ref|`` for products (float16 sums/products
accumulate in float32 in distscan, on purpose; see README).  NaN and +-inf must appear exactly where
the reference, rounded to the result dtype, has them.

Random data is seeded (the ``ctx`` fixture; ``DISTSCAN_TEST_SEED=<seed>`` repeats a run).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import distscan

from tests.support.ranks import SELF
from tests.support.reference import LOGICAL, UFUNCS, Ref, identity
from tests.support.two_modes import FLOAT_DTYPES, INT_DTYPES, NAMED, Ctx, assert_is_out, check_scan, ops_for

pytestmark = [pytest.mark.anyranks, pytest.mark.timeout(60)]


# ---------------------------------------------------------------------------------------------
# NumPy: numpy/lib/tests/test_function_base.py
# ---------------------------------------------------------------------------------------------

BA = [1, 2, 10, 11, 6, 5, 4]
BA2 = [[1, 2, 3, 4], [5, 6, 7, 9], [10, 3, 4, 5]]


@pytest.mark.parametrize("ctype", ["int8", "uint8", "int16", "uint16", "int32", "uint32",
                                   "float32", "float64", "complex64", "complex128"])
def test_numpy_TestCumsum_basic(ctx, ctype):
    a, a2 = np.array(BA, ctype), np.array(BA2, ctype)
    c = ctx.counts(7)
    got = check_scan(ctx, a, "sum", axis=0, counts=c)
    tgt = np.array([1, 3, 13, 24, 30, 35, 39])
    ctx.check(lambda: np.testing.assert_array_equal(got, Ctx.rows(tgt, c, ctx.rank)))
    c2 = ctx.counts(3)
    got = check_scan(ctx, a2, "sum", axis=0, counts=c2)
    tgt = np.array([[1, 2, 3, 4], [6, 8, 10, 13], [16, 11, 14, 18]])
    ctx.check(lambda: np.testing.assert_array_equal(got, Ctx.rows(tgt, c2, ctx.rank)))
    got = check_scan(ctx, a2, "sum", axis=1, counts=c2)
    tgt = np.array([[1, 3, 6, 10], [5, 11, 18, 27], [10, 13, 17, 22]])
    ctx.check(lambda: np.testing.assert_array_equal(got, Ctx.rows(tgt, c2, ctx.rank)))


@pytest.mark.parametrize("ctype", ["int16", "uint16", "int32", "uint32", "float32", "float64",
                                   "complex64", "complex128"])
def test_numpy_TestCumprod_basic(ctx, ctype):
    a, a2 = np.array(BA, ctype), np.array(BA2, ctype)
    c = ctx.counts(7)
    got = check_scan(ctx, a, "prod", axis=-1, counts=c)
    tgt = np.array([1, 2, 20, 220, 1320, 6600, 26400])
    ctx.check(lambda: np.testing.assert_array_equal(got, Ctx.rows(tgt, c, ctx.rank)))
    c2 = ctx.counts(3)
    got = check_scan(ctx, a2, "prod", axis=0, counts=c2)
    tgt = np.array([[1, 2, 3, 4], [5, 12, 21, 36], [50, 36, 84, 180]])
    ctx.check(lambda: np.testing.assert_array_equal(got, Ctx.rows(tgt, c2, ctx.rank)))
    got = check_scan(ctx, a2, "prod", axis=-1, counts=c2)
    tgt = np.array([[1, 2, 6, 24], [5, 30, 210, 1890], [10, 30, 120, 600]])
    ctx.check(lambda: np.testing.assert_array_equal(got, Ctx.rows(tgt, c2, ctx.rank)))


def test_numpy_cumulative_include_initial(ctx):
    """np.cumulative_sum/prod(..., include_initial=True) == exclusive scan, then the total."""
    arr = np.arange(8).reshape((2, 2, 2))
    c = ctx.counts(2)
    part = Ctx.rows(arr, c, ctx.rank).copy()
    expected = np.array([[[0, 0], [0, 1], [2, 4]], [[0, 0], [4, 5], [10, 12]]])
    got = ctx.run(lambda: distscan.exclusive_scan(part, "sum", axis=1, comm=ctx.comm))
    ctx.check(lambda: np.testing.assert_array_equal(got, Ctx.rows(expected[:, :-1], c, ctx.rank), strict=True))
    expected = np.array([[[1, 0, 0], [1, 2, 6]], [[1, 4, 20], [1, 6, 42]]])
    got = ctx.run(lambda: distscan.exclusive_scan(part, "prod", axis=2, comm=ctx.comm))
    ctx.check(lambda: np.testing.assert_array_equal(got, Ctx.rows(expected[:, :, :-1], c, ctx.rank), strict=True))

    # Along the distributed axis: out=float64 (3, 2) in NumPy; here the exclusive part + reduce.
    arr = np.arange(1, 5).reshape((2, 2))
    expected = np.array([[0, 0], [1, 2], [4, 6]], dtype=np.float64)
    c = ctx.counts(2)
    part = Ctx.rows(arr, c, ctx.rank).copy()
    got = ctx.run(lambda: distscan.exclusive_scan(part, "sum", dtype=np.float64, comm=ctx.comm))
    total = ctx.run(lambda: distscan.reduce(part, "sum", dtype=np.float64, comm=ctx.comm))
    ctx.check(lambda: np.testing.assert_array_equal(got, Ctx.rows(expected[:-1], c, ctx.rank), strict=True))
    ctx.check(lambda: np.testing.assert_array_equal(total, expected[-1]))

    x = np.array([2, 2])
    c = ctx.counts(2)
    part = Ctx.rows(x, c, ctx.rank).copy()
    got = ctx.run(lambda: distscan.exclusive_scan(part, "prod", comm=ctx.comm))
    total = ctx.run(lambda: distscan.reduce(part, "prod", comm=ctx.comm))
    ctx.check(lambda: np.testing.assert_array_equal(got, Ctx.rows(np.array([1, 2]), c, ctx.rank), strict=True))
    ctx.check(lambda: np.testing.assert_equal(total, 4))


# ---------------------------------------------------------------------------------------------
# NumPy: numpy/_core/tests/test_ufunc.py, test_umath.py, test_regression.py
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("opname", ["max", "sum"])
@pytest.mark.parametrize("shape", [(30, 0), (0, 30), (30, 30), (0, 0)])
@pytest.mark.parametrize("axis", [0, 1, None])
def test_numpy_accumulate_zero_size(ctx, opname, shape, axis):
    """test_ufunc.py TestUfunc.test_reduce_zero_axis (accumulate part): any n x m works."""
    g = np.zeros(shape)
    check_scan(ctx, g, opname, axis=axis)
    check_scan(ctx, g, opname, axis=axis, exclusive=True)


def test_numpy_regression_zerosize_accumulate(ctx):
    """test_regression.py test_zerosize_accumulate (ticket #1733)."""
    x = np.array([[42, 0]], dtype=np.uint32)
    got = check_scan(ctx, x[:-1, 0], "sum")
    ctx.check(lambda: np.testing.assert_equal(got, []))


@pytest.mark.parametrize("dtype", [">i8", "<i8", ">i4", ">u2", ">f8", ">f4", ">f2", ">c16"])
def test_numpy_reducelike_byteorder_resolution(ctx, dtype):
    """test_ufunc.py test_reducelike_byteorder_resolution: byte order is storage only."""
    g = np.arange(10, dtype=dtype)
    check_scan(ctx, g, "sum")
    check_scan(ctx, g, "sum", exclusive=True)
    if np.dtype(dtype).kind != "c":
        check_scan(ctx, g[::-1], "max")
    c = ctx.counts(10)
    part = Ctx.rows(g, c, ctx.rank).copy()
    total = ctx.run(lambda: distscan.reduce(part, comm=ctx.comm))
    ctx.check(lambda: np.testing.assert_equal(total, np.add.reduce(g.astype(g.dtype.newbyteorder("=")))))


def test_numpy_reducelike_output_needs_identical_cast(ctx):
    """test_ufunc.py test_reducelike_output_needs_identical_cast (accumulate part).

    DEBATABLE: distscan documents out= as 'of the result's dtype'; a byte-swapped float64 is that
    dtype in another byte order, and NumPy explicitly accepts it (the test exists so that it is
    'not rejected directly').  Expected here: accepted, as in NumPy.
    """
    g = np.ones(20, dtype="f8")
    c = ctx.counts(20)
    part = Ctx.rows(g, c, ctx.rank).copy()
    out = np.empty(part.shape, dtype=part.dtype.newbyteorder())
    res = ctx.run(lambda: distscan.cumsum(part, out=out, comm=ctx.comm))
    expected = Ctx.rows(np.add.accumulate(g), c, ctx.rank)
    ctx.check(lambda: (np.testing.assert_array_equal(out, expected), assert_is_out(res, out)))


@pytest.mark.parametrize("with_cast", [True, False])
def test_numpy_accumulate_out_shape_mismatch(ctx, with_cast):
    """test_ufunc.py test_reduceat_and_accumulate_out_shape_mismatch."""
    g = np.arange(5 * ctx.size)
    c = ctx.counts(len(g))
    part = Ctx.rows(g, c, ctx.rank).copy()
    out = np.arange(len(part) + 3)  # definitely the wrong shape, on every rank
    if with_cast:
        out = out.astype(np.float64)
    ctx.raises((ValueError, TypeError) if with_cast else ValueError,
               lambda: distscan.cumsum(part, out=out, comm=ctx.comm))
    if not with_cast:
        ctx.raises(ValueError, lambda: distscan.cumsum(part, out=out, comm=ctx.comm), match="(shape|size)")


def test_numpy_accumulate_out_dtype_resolution_failure(ctx):
    """test_ufunc.py test_reduceat_and_accumulate_out_dtype_resolution_failure: str out."""
    g = np.arange(3 * ctx.size)
    part = Ctx.rows(g, ctx.counts(len(g)), ctx.rank).copy()
    out = np.empty(part.shape, dtype="U5")
    ctx.raises(TypeError, lambda: distscan.cumsum(part, out=out, comm=ctx.comm))


def test_numpy_accumulate_dtype_int32_with_out(ctx):
    """test_ufunc.py test_reduction_no_reference_leak: np.add.accumulate(int32, dtype=int32, out=int32)."""
    g = np.array([1, 2, 3] * 4, dtype=np.int32)
    check_scan(ctx, g, "sum", dtype=np.int32)
    c = ctx.counts(len(g))
    part = Ctx.rows(g, c, ctx.rank).copy()
    out = np.empty(part.shape, dtype=np.int32)
    res = ctx.run(lambda: distscan.cumsum(part, dtype=np.int32, out=out, comm=ctx.comm))
    ctx.check(lambda: (assert_is_out(res, out),
                       np.testing.assert_array_equal(out, Ctx.rows(np.add.accumulate(g, dtype=np.int32), c, ctx.rank))))


@pytest.mark.parametrize("ftype", [np.float32, np.float64])
def test_numpy_memoverlap_accumulate(ctx, ftype):
    """test_umath.py test_memoverlap_accumulate (gh-15597)."""
    arr = np.array([0.61, 0.60, 0.77, 0.41, 0.19], dtype=ftype)
    for opname, tgt in (("max", [0.61, 0.61, 0.77, 0.77, 0.77]), ("min", [0.61, 0.60, 0.60, 0.41, 0.19])):
        c = ctx.counts(5)
        got = check_scan(ctx, arr, opname, counts=c)
        ctx.check(lambda: np.testing.assert_array_equal(got, Ctx.rows(np.array(tgt, ftype), c, ctx.rank)))


def _symmetric_cases():
    for dt in INT_DTYPES + FLOAT_DTYPES:
        for opname in ("sum", "prod", "max", "min", "bitwise_and", "bitwise_or", "bitwise_xor"):
            if opname.startswith("bitwise") and np.dtype(dt).kind == "f":
                continue
            yield opname, dt


@pytest.mark.parametrize("opname,dtype", list(_symmetric_cases()))
def test_numpy_memoverlap_accumulate_symmetric(ctx, opname, dtype):
    """test_umath.py test_memoverlap_accumulate_symmetric: [0, 1, 2] * size, accumulated with
    dtype=dtype, equals itertools.accumulate (no promotion: dtype= forces the input dtype)."""
    for size in (2, 8, 32, 64, 128, 256):
        arr = np.array([0, 1, 2] * size).astype(dtype)
        check_scan(ctx, arr, opname, dtype=dtype)
        if np.dtype(dtype).kind in "iu":
            # The reference inside check_scan is NumPy's accumulate; the peer's itertools one agrees.
            with np.errstate(all="ignore"):
                exp = np.array(list(itertools.accumulate(arr, UFUNCS[opname])), dtype=dtype)
                np.testing.assert_array_equal(exp, UFUNCS[opname].accumulate(arr, dtype=dtype))


def _cmp_cases():
    for dt in ["bool"] + INT_DTYPES + FLOAT_DTYPES:
        for opname in LOGICAL:
            yield opname, dt


@pytest.mark.parametrize("opname,dtype", list(_cmp_cases()))
def test_numpy_memoverlap_accumulate_cmp(ctx, opname, dtype):
    """test_umath.py test_memoverlap_accumulate_cmp: logical accumulations to bool."""
    for size in (2, 8, 32, 64, 128, 256):
        arr = np.array([0, 1, 1] * size, dtype=dtype)
        got = check_scan(ctx, arr, opname)
        ctx.check(lambda: np.testing.assert_equal(got.dtype, np.bool_))


@pytest.mark.parametrize("dtype", ["int64", "float64", "complex128"])
def test_numpy_accumulate_inplace_twice(ctx, dtype):
    """test_ufunc.py test_object_array_accumulate_inplace (with numeric dtypes: distscan has no
    object dtype): np.add.accumulate(arr, out=arr) twice, along axis 0 and axis -1."""
    g = np.ones((10, 6), dtype=dtype)
    c = ctx.counts(10)
    part = Ctx.rows(g, c, ctx.rank).copy()
    for _ in range(2):
        res = ctx.run(lambda: distscan.cumsum(part, out=part, comm=ctx.comm))
        ctx.check(lambda: assert_is_out(res, part))
    expected = np.add.accumulate(np.add.accumulate(g, axis=0), axis=0)
    ctx.check(lambda: np.testing.assert_array_equal(part, Ctx.rows(expected, c, ctx.rank)))
    part = Ctx.rows(g, c, ctx.rank).copy()
    for _ in range(2):
        ctx.run(lambda: distscan.cumsum(part, out=part, axis=-1, comm=ctx.comm))
    expected = np.add.accumulate(np.add.accumulate(g, axis=-1), axis=-1)
    ctx.check(lambda: np.testing.assert_array_equal(part, Ctx.rows(expected, c, ctx.rank)))


# ---------------------------------------------------------------------------------------------
# NumPy: numpy/lib/tests/test_nanfunctions.py (the cumsum/cumprod reference side), NaN and inf
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "complex64", "complex128"])
def test_numpy_allnans(ctx, axis, dtype):
    """TestNanFunctions_CumSumProd.test_allnans, for cumsum/cumprod: NaN stays NaN everywhere."""
    g = np.full((3, 3), np.nan).astype(dtype)
    for opname in ("sum", "prod"):
        check_scan(ctx, g, opname, axis=axis)
    # 0-d NaN, axis=None (every rank holds one element of the global array).
    zero_d = np.array(np.nan).astype(dtype)
    got = ctx.run(lambda: distscan.cumsum(zero_d, axis=None, comm=ctx.comm))
    ctx.check(lambda: (np.testing.assert_equal(got.shape, (1,)), np.testing.assert_equal(np.isnan(got).all(), True),
                       np.testing.assert_equal(got.dtype, np.dtype(dtype))))


def test_numpy_nanfunctions_empty(ctx):
    """TestNanFunctions_CumSumProd.test_empty (cumsum/cumprod side): zeros((0, 3))."""
    mat = np.zeros((0, 3))
    for opname in ("sum", "prod"):
        for axis in (0, 1, None):
            got = check_scan(ctx, mat, opname, axis=axis)
            ctx.check(lambda: np.testing.assert_equal(got.shape, (0,) if axis is None else (0, 3)))


def test_numpy_nanfunctions_keepdims_shapes(ctx):
    """TestNanFunctions_CumSumProd.test_keepdims: ones((3, 5, 7, 11)) with NaNs; shapes and values."""
    d = np.ones((3, 5, 7, 11))
    rs = np.random.RandomState(0)
    d[rs.rand(*d.shape) < 0.5] = np.nan
    for opname in ("sum", "prod"):
        got = check_scan(ctx, d, opname, axis=None)
        c = ctx.counts(3)
        got = check_scan(ctx, d, opname, axis=None, counts=c)
        ctx.check(lambda: np.testing.assert_equal(got.shape, (int(c[ctx.rank]) * 385,)))
        for axis in range(4):
            check_scan(ctx, d, opname, axis=axis)


def test_numpy_nanfunctions_out(ctx):
    """TestNanFunctions_CumSumProd.test_out: eye(3), out=eye(3), axis -2, -1, 0, 1."""
    mat = np.eye(3)
    for opname, fn in (("sum", distscan.cumsum), ("prod", distscan.cumprod)):
        c = ctx.counts(3)
        part = Ctx.rows(mat, c, ctx.rank).copy()
        for axis in (-2, -1, 0, 1):
            resout = Ctx.rows(np.eye(3), c, ctx.rank).copy()
            res = ctx.run(lambda: fn(part, axis=axis, out=resout, comm=ctx.comm))
            tgt = Ctx.rows(UFUNCS[opname].accumulate(mat, axis=axis), c, ctx.rank)
            ctx.check(lambda: (assert_is_out(res, resout), np.testing.assert_array_equal(resout, tgt)))


@pytest.mark.manyranks
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "complex64", "complex128"])
def test_nan_and_inf_propagate_across_ranks(ctx, dtype):
    """NaN and inf anywhere (also at a rank boundary) propagate exactly as in NumPy."""
    vals = [1.0, 2.0, np.nan, 3.0, -1.0, np.inf, 4.0, -np.inf, 5.0, 1.0, 2.0, 0.5]
    for start in range(0, 8, 3):
        g = np.array(vals[start:] + vals[:start]).astype(dtype)
        for c in ctx.all_counts(len(g)):
            for opname in ops_for(dtype):
                check_scan(ctx, g, opname, counts=c)
                check_scan(ctx, g, opname, counts=c, exclusive=True)
    g = np.array([np.inf, 1.0, -np.inf, 2.0, 3.0]).astype(dtype)   # inf + -inf = nan
    check_scan(ctx, g, "sum")
    g = np.array([2.0, 0.0, np.inf, 3.0]).astype(dtype)            # 0 * inf = nan (the input holds inf)
    check_scan(ctx, g, "prod")
    if np.dtype(dtype).kind == "f":
        g = np.array([1.0, 5.0, np.nan, 7.0, 2.0, -np.inf]).astype(dtype)
        for c in ctx.all_counts(len(g)):
            check_scan(ctx, g, "max", counts=c)
            check_scan(ctx, g, "min", counts=c)
            check_scan(ctx, g[::-1].copy(), "max", counts=c)


# ---------------------------------------------------------------------------------------------
# NumPy: numpy/ma/tests/test_core.py and numpy/matrixlib/tests/test_interaction.py
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("opname", ["sum", "prod", "max", "min"])
def test_numpy_ma_cumsumprod(ctx, opname):
    """test_core.py TestMaskedArrayMethods.test_cumsumprod / test_cumsumprod_with_output data.

    numpy.ma semantics: the result is a masked array with the input's mask, and masked positions
    count as the identity (``mX.cumsum(0)._data == mX.filled(0).cumsum(0)`` at unmasked positions).
    A clear TypeError (masked arrays unsupported) on every rank is accepted instead.
    """
    rng = np.random.default_rng(7)
    data = np.round(rng.uniform(0.5, 2.0, (6, 4)), 2)
    mask = np.zeros(data.shape, bool)
    mask[:, 0] = mask[0] = True
    mask[-1, -1] = True
    mask[3, 2] = True
    g = np.ma.array(data, mask=mask)
    for axis in (0, 1):
        c = ctx.counts(6)
        part = np.ma.array(Ctx.rows(data, c, ctx.rank).copy(), mask=Ctx.rows(mask, c, ctx.rank).copy())
        try:
            got = ctx.run(lambda: NAMED[opname](part, axis=axis, comm=ctx.comm))
        except TypeError:
            continue  # "a clear TypeError" is acceptable
        filled = g.filled(identity(opname, g.dtype))
        exp = Ctx.rows(UFUNCS[opname].accumulate(filled, axis=axis), c, ctx.rank)
        pmask = Ctx.rows(mask, c, ctx.rank)

        def verify():
            assert isinstance(got, np.ma.MaskedArray), (
                f"cum{opname} of a masked array returned {type(got).__name__}: the mask is lost "
                f"(numpy.ma keeps it); data={np.asarray(got).tolist()}")
            np.testing.assert_array_equal(np.ma.getmaskarray(got), pmask)
            np.testing.assert_allclose(np.asarray(got)[~pmask], exp[~pmask], rtol=1e-12,
                                       err_msg="masked positions must count as the identity")
        ctx.check(verify)


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")
def test_numpy_matrix_cumulative(ctx):
    """test_interaction.py (nancumsum/nancumprod on np.matrix; the same holds for cumsum/cumprod).

    Values must be NumPy's.  DEBATABLE (not asserted): the array type and, for axis=None, the
    shape -- NumPy returns np.matrix of shape (1, N); distscan documents a 1-D result for
    axis=None.  Either is accepted here.
    """
    g = np.arange(1, 10).reshape(3, 3)
    for opname in ("sum", "prod"):
        for axis in (0, 1, None):
            c = ctx.counts(3)
            part = np.matrix(Ctx.rows(g, c, ctx.rank))
            got = ctx.run(lambda: NAMED[opname](part, axis=axis, comm=ctx.comm))
            ref = Ref(g, opname, axis=axis).part(c, ctx.rank, 3)

            def verify():
                vals = np.asarray(got)
                if axis is None:
                    assert vals.shape in ((int(c[ctx.rank]) * 3,), (1, int(c[ctx.rank]) * 3)), vals.shape
                    vals = vals.reshape(-1)
                else:
                    assert vals.shape == (int(c[ctx.rank]), 3), vals.shape
                np.testing.assert_array_equal(vals, ref.exact, err_msg=f"cum{opname} matrix axis={axis}")
            ctx.check(verify)


@pytest.mark.parametrize("initial,error", [(np.nan, ValueError), (np.inf, ValueError), (1e30, OverflowError),
                                           (-1e30, OverflowError)])
def test_an_initial_that_no_integer_holds_is_refused(initial, error):
    """``initial=`` for a scan in integers as NumPy's reductions take it: NaN, an infinity or a value
    past the range refused (it was cast to garbage: ``linear_recurrence(..., initial=nan)`` gave
    INT64_MIN), a fraction truncated (``np.add.reduce([1, 2], initial=2.5)`` is 5)."""
    x = np.array([1, 2])
    with pytest.raises(error, match="initial value"):
        distscan.scan(x, "sum", initial=initial, comm=SELF)
    with pytest.raises(error, match="initial value"):
        distscan.linear_recurrence(np.array([1, 1]), x, initial=initial, comm=SELF)
    np.testing.assert_array_equal(distscan.scan(x, "sum", initial=2.5, comm=SELF), [3, 5])
    assert int(np.add.reduce(x, initial=2.5)) == 5
