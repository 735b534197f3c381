"""Defects found from outside (issue 8): each case at one rank and at any rank count.

Run serially and under ``mpiexec -n K python -m pytest --with-mpi``.  Random data comes
from a seed that rank 0 draws and prints; every failure is made collective.
"""

import sys

import numpy as np
import pytest

import distscan
from distscan import DistScanError

from tests.support.data import local_part
from tests.support.ranks import all_ranks_ok
from tests.support.seeds import shared_rng

pytestmark = [pytest.mark.anyranks, pytest.mark.timeout(120)]


def splits(comm, n, rng):
    """Row counts for every rank: balanced, all on the last rank, random with empty parts, and
    the issue's [2, 0, 8] pattern (first rank small, an empty rank, the rest on the others)."""
    size = comm.size
    out = [np.diff(np.linspace(0, n, size + 1).astype(int))]
    last = np.zeros(size, int)
    last[-1] = n
    out.append(last)
    cuts = np.sort(rng.integers(0, n + 1, size - 1))
    out.append(np.diff(np.concatenate([[0], cuts, [n]])))
    if size >= 3:
        c = np.zeros(size, int)
        c[0] = min(2, n)
        rest = n - c[0]
        c[2:] = np.diff(np.linspace(0, rest, size - 1).astype(int))
        out.append(c)
    return out


def same_floats(got, expected):
    """Equal where finite (a few ulps: products associate differently across ranks), and the
    same NaN, infinities and signed zeros exactly."""
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    for g, e in ((got.real, expected.real), (got.imag, expected.imag)) if got.dtype.kind == "c" else ((got, expected),):
        nan_g, nan_e = np.isnan(g), np.isnan(e)
        assert (nan_g == nan_e).all(), f"NaN at {np.flatnonzero(nan_g != nan_e)[:5]}: got {g[nan_g != nan_e][:5]}, " \
                                       f"NumPy {e[nan_g != nan_e][:5]}"
        fin = np.isfinite(e)
        assert (np.isinf(g) == np.isinf(e)).all() and (g[np.isinf(e)] == e[np.isinf(e)]).all()
        zero = e == 0
        assert (g[zero] == 0).all()
        if got.dtype.kind == "f":
            assert (np.signbit(g[zero]) == np.signbit(e[zero])).all(), "signed zeros differ"
        np.testing.assert_allclose(g[fin], e[fin], rtol=1e-12 if e.dtype.itemsize >= 8 else 1e-5)


# --- 2. products: a zero absorbs, as in sequential order --------------------------------------

@pytest.mark.parametrize("strategy", ["reduce_then_scan", "scan_then_add"])
def test_cumprod_of_arange_is_all_zeros_at_any_split(strategy, comm):
    rng = shared_rng(comm)
    g = np.arange(1320.).reshape(10, 132)
    for counts in splits(comm, 10, rng):
        got = distscan.cumprod(local_part(g, counts, comm.rank), comm=comm, strategy=strategy)
        all_ranks_ok(comm, lambda: same_floats(got, local_part(np.cumprod(g, axis=0), counts, comm.rank)))
    flat = np.arange(1320.)
    for counts in splits(comm, flat.size, rng):
        got = distscan.cumprod(local_part(flat, counts, comm.rank), comm=comm, strategy=strategy)
        all_ranks_ok(comm, lambda: same_floats(got, local_part(np.cumprod(flat), counts, comm.rank)))
        total = distscan.reduce(local_part(flat, counts, comm.rank), "prod", comm=comm)
        all_ranks_ok(comm, lambda: same_floats(np.array(total), np.array(np.prod(flat))))


def test_chunked_carries_absorb_zeros(comm):
    # dtype= and initial= take the chunked path of the CPU backend (carry folded per chunk).
    x = np.where(np.arange(300000) == 0, 0., 2.).astype(np.float32)
    got = distscan.cumprod(x, dtype=np.float64, comm=comm.Split(comm.rank, 0))
    same_floats(got, np.cumprod(x, dtype=np.float64))
    assert not np.isnan(got).any()
    got = distscan.cumprod(np.full(300000, 2.0), initial=0.0, comm=comm.Split(comm.rank, 0))
    assert (got == 0).all()


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("exclusive", [False, True])
def test_products_with_zeros_infs_and_nans_match_numpy(dtype, exclusive, comm):
    rng = shared_rng(comm)
    dt = np.dtype(dtype)
    big = float(np.finfo(dt).max) ** 0.5 * 4  # two of these overflow
    for _ in range(6):
        n = int(rng.integers(0, 200))
        # Magnitudes never below 1 (but zeros): overflow is then the same in any order.
        values = np.array([0.0, -0.0, big, -big, 2.0, -3.0, 1.0, np.inf, -np.inf, np.nan])
        p = np.array([4, 1, 20, 5, 20, 10, 20, 0.5, 0.3, 0.2])
        if dt.kind == "c":
            # Complex infinities give NaN parts that depend on the grouping, in NumPy too
            # ((inf+0j)*2 is inf+nanj): complex cases keep products finite, or start at 0.
            p[[2, 3, 7, 8, 9]] = 0
        g = rng.choice(values, n, p=p / p.sum()).astype(dt)
        if dt.kind == "c":
            g = g * np.where(rng.random(n) < 0.5, 1, 1j).astype(dt)
            if rng.random() < 0.5 and n:
                g[0] = 0
                g[1:] = np.where(rng.random(n - 1) < 0.5, big, g[1:])  # a zero, then overflow
        with np.errstate(all="ignore"):
            acc = np.float32 if dt == np.float16 else dt
            ref = np.multiply.accumulate(g.astype(acc))
            if exclusive:
                ref = np.concatenate([np.ones(1, acc), ref[:-1]])[:n]
            ref = ref.astype(dt)
        for counts in splits(comm, n, rng):
            with np.errstate(all="ignore"):
                got = distscan.cumprod(local_part(g, counts, comm.rank), exclusive=exclusive, comm=comm)
            all_ranks_ok(comm, lambda: same_floats(got, local_part(ref, counts, comm.rank)))


def test_an_initial_zero_absorbs_but_an_inf_after_it_does_not(comm):
    g = np.array([1e300, 1e300, np.inf, 5.0])
    counts = np.diff(np.linspace(0, g.size, comm.size + 1).astype(int))
    with np.errstate(all="ignore"):
        got = distscan.cumprod(local_part(g, counts, comm.rank), initial=0.0, comm=comm)
    expected = np.array([0.0, 0.0, np.nan, np.nan])
    all_ranks_ok(comm, lambda: same_floats(got, local_part(expected, counts, comm.rank)))


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


# --- 12. mismatches named in words -----------------------------------------------------------

@pytest.mark.mpi(min_size=2)
def test_dtype_mismatch_from_an_empty_part_is_named(comm):
    part = np.array([]) if comm.rank == 1 else np.arange(3)
    with pytest.raises(ValueError) as info:
        distscan.cumsum(part, comm=comm)
    msg = str(info.value)
    assert msg.startswith("dtype differs across ranks: ")
    assert "rank 1 has float64" in msg and "int64" in msg and "empty part" in msg


@pytest.mark.mpi(min_size=2)
def test_operator_mismatch_is_named(comm):
    with pytest.raises(ValueError, match=r"operator differs across ranks: .*rank 0 has sum.*prod"):
        distscan.scan(np.arange(3), "sum" if comm.rank == 0 else "prod", comm=comm)
    with pytest.raises(ValueError, match=r"trailing shape differs across ranks"):
        distscan.cumsum(np.ones((2, 3 if comm.rank == 0 else 4)), comm=comm)


# --- 13. standard exceptions keep their type on every rank --------------------------------------

@pytest.mark.mpi(min_size=2)
def test_floating_point_error_keeps_its_type_everywhere(comm):
    x = np.array([1e308, 1e308]) if comm.rank == 0 else np.array([1.0])
    with np.errstate(all="raise"):
        with pytest.raises(FloatingPointError):
            distscan.cumsum(x, comm=comm)


@pytest.mark.mpi(min_size=2)
def test_floating_point_error_in_one_ranks_finish_is_agreed(comm):
    """Only the last rank asks NumPy to raise, and only its seeded scan overflows (the offset from
    the ranks before meets its own large values): every rank raises, in every call of a row, and
    the communicator is whole afterwards."""
    last = comm.rank == comm.size - 1
    x = np.array([1e308, 1e308]) if last else np.array([1.0e308 if comm.rank == 0 else 0.0])
    for _ in range(3):
        with np.errstate(over="raise" if last else "ignore", invalid="ignore"):
            with pytest.raises(FloatingPointError, match=f"rank {comm.size - 1}"):
                distscan.cumsum(x, comm=comm)
    np.testing.assert_array_equal(distscan.cumsum(np.ones(3), comm=comm), 3 * comm.rank + np.arange(1, 4))


@pytest.mark.mpi(min_size=2)
def test_zero_d_array_on_one_rank_raises_axis_error_everywhere(comm):
    x = np.array(5) if comm.rank == 0 else np.arange(3)
    with pytest.raises(np.exceptions.AxisError):
        distscan.cumsum(x, comm=comm)


def test_rebuild_by_module_and_name():
    from distscan.dist.agree import _rebuild, describe
    e = _rebuild(describe(FloatingPointError("x")), "overflow")
    assert type(e) is FloatingPointError and str(e) == "overflow"
    e = _rebuild(describe(np.exceptions.AxisError("bad axis")), "bad axis")
    assert type(e) is np.exceptions.AxisError
    e = _rebuild("os:system", "no")  # not an exception class: never called
    assert type(e) is DistScanError
    e = _rebuild("evil_module:Thing", "no")  # untrusted module: not imported
    assert type(e) is DistScanError and "evil_module" not in sys.modules


# --- 14. scalars: the write-offset idiom -----------------------------------------------------

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


# --- the GPU's zero fix-up, on the CPU: the same array code with NumPy ----------------------

def _tiled_cumprod(x, seed, tile):
    """What a tile-parallel kernel computes: each tile in order from the product of the tile
    aggregates before it (so a tile's own overflow can meet an earlier zero)."""
    out, prefix = np.empty_like(x), seed
    with np.errstate(all="ignore"):
        for s in range(0, x.size, tile):
            c = np.multiply.accumulate(x[s:s + tile])
            out[s:s + tile] = prefix * c
            prefix = prefix * c[-1]
    return out


def test_gpu_zero_fix_up_logic_on_the_cpu(comm):
    from distscan.backends.absorb import absorb_zeros
    rng = shared_rng(comm)
    big = 1e300
    values = np.array([0.0, -0.0, big, -big, 2.0, -3.0, 0.5, np.inf, -np.inf, np.nan])
    p = np.array([0.05, 0.02, 0.3, 0.1, 0.2, 0.1, 0.19, 0.02, 0.01, 0.01])
    for _ in range(3000):
        n = int(rng.integers(1, 60))
        x = rng.choice(values, n, p=p / p.sum())
        seed = float(rng.choice([1.0, 0.0, -0.0, big, -2.0, np.inf]))
        with np.errstate(all="ignore"):
            ref = np.multiply.accumulate(np.concatenate([[seed], x]))[1:]
        out = _tiled_cumprod(x, seed, tile=int(rng.integers(1, 9))).reshape(-1, 1)
        absorb_zeros(np, x.reshape(-1, 1), out, np.array([seed]), False)
        got = out[:, 0]
        assert ((np.isnan(got) & np.isnan(ref)) | ((got == ref) & (np.signbit(got) == np.signbit(ref)))
                | (np.isfinite(ref) & (ref != 0) & np.isclose(got, ref, rtol=1e-12))).all(), (seed, x, got, ref)

