"""Array kinds and arguments through the API, at one rank and at any rank count: ``out=`` overlapping the
input (several CPU chunks), in place and reversed views, results of a local axis C-contiguous (and
sendable), ``np.matrix`` and masked arrays as NumPy treats them, scalar parts giving scalars (the
write-offset idiom), ``and``/``or``/``xor`` bitwise on integers, ``backend="cuda"`` without CuPy.

Runs serially and under ``mpiexec -n K python -m pytest --with-mpi``; every failure is made collective.
"""

import sys

import numpy as np
import pytest

import distscan

from tests.support.data import local_part
from tests.support.ranks import all_ranks_ok
from tests.support.seeds import shared_rng

pytestmark = [pytest.mark.anyranks, pytest.mark.timeout(120)]


# --- 3. out= overlapping the input -----------------------------------------------------------

@pytest.mark.parametrize("dtype", ["int64", "float64", "float16", "int32"])
def test_out_overlapping_the_input(dtype, comm):
    rng = shared_rng(comm)
    # float16 sums accumulate in float32 (README): compare on one rank against that.
    c = comm.Split(comm.rank, 0) if dtype == "float16" else comm
    n = int(rng.integers(1, (600_000 if dtype == "float16" else 3_000_000) // comm.size + 2))  # several CPU chunks
    for shift in (1, -1):
        # float16: sums stay below its largest finite value
        buf = (rng.random(n + 1) < 0.05 if dtype == "float16" else rng.integers(0, 3, n + 1)).astype(dtype)
        x, out = (buf[:-1], buf[1:]) if shift == 1 else (buf[1:], buf[:-1])
        local = np.cumsum(x.astype(np.float64))  # small integers: exact
        before = c.exscan(int(local[-1])) or 0
        res = distscan.cumsum(x, out=out, dtype=dtype, comm=c)
        assert res is out
        want = (local + before).astype(dtype)
        all_ranks_ok(comm, lambda: np.testing.assert_array_equal(out, want))


def test_in_place_and_reversed_views(comm):
    single = comm.Split(comm.rank, 0)
    x = np.arange(1, 21, dtype=np.int64)
    distscan.cumsum(x, out=x, comm=single)
    np.testing.assert_array_equal(x, np.cumsum(np.arange(1, 21)))
    y = np.arange(1, 21, dtype=np.int64)
    expected = np.cumsum(y[::-1].copy())
    distscan.cumsum(y[::-1], out=y, comm=single)
    np.testing.assert_array_equal(y, expected)


# --- 4. results of a local axis are C-contiguous and can be sent ----------------------------

@pytest.mark.parametrize("axis", [1, 2, -1])
def test_local_axis_results_are_c_contiguous(axis, comm):
    x = np.arange(2 * 3 * 4, dtype=np.float64).reshape(2, 3, 4)
    got = distscan.cumsum(x, axis=axis, comm=comm)
    assert got.flags.c_contiguous
    np.testing.assert_array_equal(got, np.cumsum(x, axis=axis))
    back = np.empty_like(got)
    comm.Sendrecv(got, dest=comm.rank, recvbuf=back, source=comm.rank)  # raised BufferError before
    np.testing.assert_array_equal(back, got)


# --- 5. np.matrix and masked arrays ------------------------------------------------------------

def test_matrix_follows_numpy(comm):
    single = comm.Split(comm.rank, 0)
    m = np.matrix([[1, 2], [3, 4]])
    for axis in (None, 0, 1):
        got = distscan.cumsum(m, axis=axis, comm=single)
        expected = np.cumsum(m, axis=axis)
        assert type(got) is type(expected) and got.shape == expected.shape
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("opname,ma_func", [("sum", np.ma.cumsum), ("prod", np.ma.cumprod)])
def test_masked_arrays_follow_numpy_ma(opname, ma_func, comm):
    rng = shared_rng(comm)
    n = 40
    data = rng.integers(1, 4, n)
    mask = rng.random(n) < 0.3
    g = np.ma.array(data, mask=mask)
    expected = ma_func(g)
    counts = np.diff(np.linspace(0, n, comm.size + 1).astype(int))
    part = local_part(g, counts, comm.rank)
    got = distscan.scan(part, opname, comm=comm)

    def check():
        assert isinstance(got, np.ma.MaskedArray)
        exp = local_part(expected, counts, comm.rank)
        np.testing.assert_array_equal(np.ma.getmaskarray(got), np.ma.getmaskarray(exp))
        np.testing.assert_array_equal(got.compressed(), exp.compressed())
    all_ranks_ok(comm, check)
    # The case: a masked 3 must not count.
    single = comm.Split(comm.rank, 0)
    r = distscan.cumsum(np.ma.array([1, 3, 2, 4], mask=[0, 1, 0, 0]), comm=single)
    assert r[-1] == 7 and r.mask.tolist() == [False, True, False, False]


# --- 14. scalars: the write-offset idiom -----------------------------------------------------

@pytest.mark.manyranks
@pytest.mark.parametrize("make", [int, np.int64, np.int32, float])
def test_scalar_parts_give_scalars(make, comm):
    n_local = make(comm.rank + 3)
    off = distscan.exclusive_scan(n_local, comm=comm)
    total = distscan.reduce(n_local, comm=comm)
    incl = distscan.cumsum(n_local, comm=comm)

    def check():
        counts = [r + 3 for r in range(comm.size)]
        assert np.ndim(off) == 0 and np.ndim(total) == 0 and np.ndim(incl) == 0
        assert isinstance(off, np.generic) and isinstance(total, np.generic)
        assert off == sum(counts[:comm.rank]) and incl == sum(counts[:comm.rank + 1])
        assert total == sum(counts)
    all_ranks_ok(comm, check)


# --- 15. and / or / xor are bitwise on integers ------------------------------------------------

@pytest.mark.parametrize("alias,ufunc", [("and", np.bitwise_and), ("or", np.bitwise_or), ("xor", np.bitwise_xor),
                                         ("^", np.bitwise_xor)])
def test_and_or_xor_are_bitwise_on_integers(alias, ufunc, comm):
    rng = shared_rng(comm)
    g = rng.integers(0, 1 << 40, 50)
    counts = np.diff(np.linspace(0, 50, comm.size + 1).astype(int))
    got = distscan.scan(local_part(g, counts, comm.rank), alias, comm=comm)
    all_ranks_ok(comm, lambda: np.testing.assert_array_equal(got, local_part(ufunc.accumulate(g), counts, comm.rank)))
    b = g % 3 == 0
    got = distscan.scan(local_part(b, counts, comm.rank), alias, comm=comm)
    assert got.dtype == bool
    all_ranks_ok(comm, lambda: np.testing.assert_array_equal(got, local_part(ufunc.accumulate(b), counts, comm.rank)))


# --- 16. backend="cuda" without CuPy says how to install it --------------------------------------

def test_cuda_backend_without_cupy_says_how_to_install(monkeypatch, comm):
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy -> ImportError
    with pytest.raises(RuntimeError, match=r"pip install"):
        distscan.cumsum(np.arange(5), backend="cuda", comm=comm)
