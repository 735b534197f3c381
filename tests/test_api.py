"""Single-process semantics of the public API (no MPI launch needed; comm of size 1)."""

import numpy as np
import pytest

import distscan
from distscan import OPS
from distscan._dtypes import scan_types
from distscan.ops import get_op

from tests.support.data import random_array
from tests.support.reference import assert_scan_equal, reference_scan

ALL_DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
              "float16", "float32", "float64", "complex64", "complex128"]


def _cases():
    for op in OPS.values():
        for dt in ALL_DTYPES:
            if np.dtype(dt).kind in op.kinds:
                yield op.name, dt


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("opname,dtype", list(_cases()))
def test_every_operator_and_dtype_matches_numpy(opname, dtype, exclusive, comm, rng):
    for n in (0, 1, 2, 31, 1000, 100_003):
        x = random_array(rng, n, dtype)
        got = distscan.scan(x, opname, exclusive=exclusive, comm=comm)
        assert_scan_equal(got, reference_scan(x, opname, exclusive=exclusive))


@pytest.mark.parametrize("dtype", ["int8", "int32", "uint16", "bool", "float32", "complex64"])
def test_numpy_dtype_promotion(dtype, comm):
    x = np.ones(5, dtype)
    assert distscan.cumsum(x, comm=comm).dtype == np.cumsum(x).dtype
    assert distscan.cumprod(x, comm=comm).dtype == np.cumprod(x).dtype
    if np.dtype(dtype).kind != "c":
        assert distscan.cummax(x, comm=comm).dtype == np.maximum.accumulate(x).dtype


def test_dtype_argument_casts_input_first_like_numpy(comm):
    x = np.array([1.7, 2.9, -3.5, 100.2])
    np.testing.assert_array_equal(distscan.cumsum(x, dtype=np.int32, comm=comm), np.cumsum(x, dtype=np.int32))
    x8 = np.array([100, 100, 100], np.int8)
    np.testing.assert_array_equal(distscan.cumsum(x8, dtype=np.int8, comm=comm), np.cumsum(x8, dtype=np.int8))


def test_integer_overflow_wraps_like_numpy(comm):
    x = np.full(10, np.iinfo(np.int64).max // 3, np.int64)
    with np.errstate(over="ignore"):
        expected = np.cumsum(x)
    np.testing.assert_array_equal(distscan.cumsum(x, comm=comm), expected)
    u = np.full(7, 200, np.uint8)
    np.testing.assert_array_equal(distscan.cumsum(u, dtype=np.uint8, comm=comm), np.cumsum(u, dtype=np.uint8))


def test_float16_sums_accumulate_in_float32(comm):
    x = np.ones(3000, np.float16)
    assert np.cumsum(x)[-1] == 2048  # NumPy stalls: 2048 + 1 rounds back to 2048 in float16
    got = distscan.cumsum(x, comm=comm)
    assert got.dtype == np.float16
    assert got[-1] == 3000  # distscan accumulates in float32, then rounds each result


def test_nan_propagates_through_max_and_min(comm):
    x = np.array([1.0, np.nan, 5.0, -2.0])
    np.testing.assert_array_equal(distscan.cummax(x, comm=comm), np.maximum.accumulate(x))
    np.testing.assert_array_equal(distscan.cummin(x, comm=comm), np.minimum.accumulate(x))


def test_exclusive_starts_at_identity_or_initial(comm):
    x = np.array([3, 1, 4, 1, 5], np.int64)
    np.testing.assert_array_equal(distscan.cumsum(x, exclusive=True, comm=comm), [0, 3, 4, 8, 9])
    np.testing.assert_array_equal(distscan.cumsum(x, exclusive=True, initial=10, comm=comm), [10, 13, 14, 18, 19])
    np.testing.assert_array_equal(distscan.cumsum(x, initial=10, comm=comm), [13, 14, 18, 19, 24])
    np.testing.assert_array_equal(distscan.cummax(x, exclusive=True, comm=comm),
                                  [np.iinfo(np.int64).min, 3, 3, 4, 4])
    np.testing.assert_array_equal(distscan.cumprod(x, exclusive=True, comm=comm), [1, 3, 3, 12, 12])
    np.testing.assert_array_equal(distscan.exclusive_scan(x, "max", initial=4, comm=comm), [4, 4, 4, 4, 4])


def test_logical_and_bitwise_operators(comm):
    x = np.array([3, 0, 5, 6, 7], np.int32)
    np.testing.assert_array_equal(distscan.scan(x, "logical_and", comm=comm), np.logical_and.accumulate(x))
    np.testing.assert_array_equal(distscan.scan(x, "logical_or", comm=comm), np.logical_or.accumulate(x))
    np.testing.assert_array_equal(distscan.scan(x, "logical_xor", comm=comm), np.logical_xor.accumulate(x != 0))
    np.testing.assert_array_equal(distscan.scan(x, "bitwise_and", comm=comm), np.bitwise_and.accumulate(x))
    np.testing.assert_array_equal(distscan.scan(x, "bitwise_or", comm=comm), np.bitwise_or.accumulate(x))
    np.testing.assert_array_equal(distscan.scan(x, "bitwise_xor", comm=comm), np.bitwise_xor.accumulate(x))
    b = np.array([True, False, True, True])
    np.testing.assert_array_equal(distscan.scan(b, "bitwise_xor", comm=comm), np.bitwise_xor.accumulate(b))


def test_operator_spellings(comm):
    x = np.arange(1, 6)
    for spelling in ("sum", "add", "SUM", np.add, get_op("sum")):
        np.testing.assert_array_equal(distscan.scan(x, spelling, comm=comm), np.cumsum(x))
    with pytest.raises(ValueError, match="unknown operator"):
        distscan.scan(x, "median", comm=comm)
    with pytest.raises(ValueError, match="not associative"):
        distscan.scan(x, np.subtract, comm=comm)


@pytest.mark.parametrize("opname,dtype", [("bitwise_and", "float64"), ("max", "complex128"),
                                          ("bitwise_xor", "float16"), ("min", "complex64")])
def test_undefined_operator_dtype_pairs_raise_type_error(opname, dtype, comm):
    with pytest.raises(TypeError, match="not defined"):
        distscan.scan(np.ones(4, dtype), opname, comm=comm)


@pytest.mark.parametrize("bad", [np.array(["a", "b"]), np.array([object(), object()]),
                                 np.array(["2020-01-01"], dtype="datetime64[D]")])
def test_unsupported_dtypes_raise_type_error(bad, comm):
    with pytest.raises(TypeError, match="not supported"):
        distscan.cumsum(bad, comm=comm)


def test_logical_scans_refuse_non_bool_dtype(comm):
    with pytest.raises(TypeError, match="always gives bool"):
        distscan.scan(np.ones(3), "logical_or", dtype=np.int32, comm=comm)


def test_complex_cannot_be_cast_to_real(comm):
    with pytest.raises(TypeError, match="imaginary"):
        distscan.cumsum(np.ones(3, np.complex64), dtype=np.float32, comm=comm)


def test_axes_and_flattening(comm, rng):
    x = rng.integers(-50, 50, (7, 4, 3))
    for axis in (0, 1, 2, -1, -3):
        np.testing.assert_array_equal(distscan.cumsum(x, axis=axis, comm=comm), np.cumsum(x, axis=axis))
    np.testing.assert_array_equal(distscan.cumsum(x, axis=None, comm=comm), np.cumsum(x, axis=None))
    np.testing.assert_array_equal(distscan.cumsum(x, axis=1, exclusive=True, comm=comm),
                                  np.cumsum(x, axis=1) - x)
    assert distscan.cumsum(np.array(5), axis=None, comm=comm).tolist() == [5]
    with pytest.raises(np.exceptions.AxisError):
        distscan.cumsum(np.array(5), comm=comm)
    with pytest.raises(np.exceptions.AxisError):
        distscan.cumsum(x, axis=3, comm=comm)
    with pytest.raises(TypeError, match="axis must be"):
        distscan.cumsum(x, axis=1.5, comm=comm)


def test_non_contiguous_and_byte_swapped_inputs(comm):
    x = np.arange(40, dtype=np.int64).reshape(8, 5)[:, ::2]
    np.testing.assert_array_equal(distscan.cumsum(x, comm=comm), np.cumsum(x, axis=0))
    big_endian = np.arange(10, dtype=">i4")
    got = distscan.cumsum(big_endian, comm=comm)
    np.testing.assert_array_equal(got, np.cumsum(big_endian))
    assert got.dtype == np.int64


def test_initial_per_column_and_broadcast(comm):
    x = np.ones((4, 3), np.int64)
    got = distscan.cumsum(x, initial=np.array([0, 10, 100]), comm=comm)
    np.testing.assert_array_equal(got, np.cumsum(x, axis=0) + [0, 10, 100])
    with pytest.raises(ValueError, match="initial"):
        distscan.cumsum(x, initial=np.array([1, 2]), comm=comm)


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_initial_of_a_trailing_shape_of_two_axes(axis, comm):
    """``initial`` of the shape without the scanned axis (two axes here), or one that broadcasts to
    it, for plain scans and recurrences; the flattened row is still taken."""
    rng = np.random.default_rng(7)
    x = rng.integers(-5, 5, (4, 3, 2)).astype(np.float64)
    rest = x.shape[:axis] + x.shape[axis + 1:]
    ini = rng.integers(-5, 5, rest).astype(np.float64)
    want = np.cumsum(np.concatenate([np.expand_dims(ini, axis), x], axis), axis)
    want = np.delete(want, 0, axis)
    for given in (ini, ini.reshape(-1)):
        np.testing.assert_array_equal(distscan.cumsum(x, axis=axis, initial=given, comm=comm), want)
    last = rng.integers(-5, 5, rest[-1:]).astype(np.float64)  # broadcasts over the other axis
    np.testing.assert_array_equal(distscan.cumsum(x, axis=axis, initial=last, comm=comm),
                                  np.delete(np.cumsum(np.concatenate(
                                      [np.expand_dims(np.broadcast_to(last, rest), axis), x], axis), axis), 0, axis))
    if axis == 0:  # a recurrence with a = 1 is the same sum
        y = distscan.linear_recurrence(np.ones_like(x), x, initial=ini, comm=comm)
        np.testing.assert_array_equal(y, want)


def test_out_argument(comm):
    x = np.arange(12, dtype=np.int32).reshape(6, 2)
    out = np.full((6, 2), -7, np.int64)
    res = distscan.cumsum(x, out=out, comm=comm)
    assert res is out
    np.testing.assert_array_equal(out, np.cumsum(x, axis=0))
    strided = np.full((6, 4), -7, np.int64)[:, ::2]
    assert distscan.cumsum(x, out=strided, comm=comm) is strided
    np.testing.assert_array_equal(strided, np.cumsum(x, axis=0))
    col = np.full((6, 2), -7, np.int64)
    distscan.cumsum(x, axis=1, out=col, comm=comm)
    np.testing.assert_array_equal(col, np.cumsum(x, axis=1))
    # out of another dtype: computed as NumPy computes (in its loop for (out, input)), cast into out
    narrow = distscan.cumsum(x, out=np.empty((6, 2), np.int32), comm=comm)
    np.testing.assert_array_equal(narrow, np.cumsum(x, axis=0, out=np.empty((6, 2), np.int32)))
    assert narrow.dtype == np.int32
    with pytest.raises(ValueError, match="shape"):
        distscan.cumsum(x, out=np.empty((5, 2), np.int64), comm=comm)


def test_bad_arguments(comm):
    x = np.arange(5)
    with pytest.raises(ValueError, match="strategy"):
        distscan.cumsum(x, strategy="fast", comm=comm)
    with pytest.raises(ValueError, match="hierarchy"):
        distscan.cumsum(x, hierarchy="tree", comm=comm)
    with pytest.raises(ValueError, match="backend"):
        distscan.cumsum(x, backend="tpu", comm=comm)


def test_lists_and_scalars_are_accepted(comm):
    np.testing.assert_array_equal(distscan.cumsum([1, 2, 3], comm=comm), [1, 3, 6])


def test_reduce(comm):
    x = np.arange(1, 11, dtype=np.int32)
    assert distscan.reduce(x, comm=comm) == 55
    assert distscan.reduce(x, comm=comm).dtype == np.sum(x).dtype
    assert distscan.reduce(x, "max", comm=comm) == 10
    np.testing.assert_array_equal(distscan.reduce(np.ones((4, 3)), comm=comm), [4.0, 4.0, 4.0])
    with pytest.raises(ValueError, match="identity"):
        distscan.reduce(np.empty(0), "max", comm=comm)
    assert distscan.reduce(np.empty(0), "sum", comm=comm) == 0


def test_timings_are_reported(comm):
    timings = {}
    distscan.cumsum(np.arange(1000), comm=comm, timings=timings)
    assert set(timings) >= {"scan"} and all(v >= 0 for v in timings.values())


def test_scan_types_rules():
    assert scan_types(get_op("sum"), np.int16).result == np.int64
    assert scan_types(get_op("sum"), np.uint8).result == np.uint64
    assert scan_types(get_op("sum"), np.float16).acc == np.float32
    assert scan_types(get_op("max"), np.float16).acc == np.float16
    assert scan_types(get_op("logical_or"), np.float64).result == np.bool_
    assert scan_types(get_op("sum"), np.int32, dtype=np.float32).result == np.float32
