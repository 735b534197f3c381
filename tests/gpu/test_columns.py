"""Scans of ``(n, w)`` rows along axis 0, ``w >= 2``, on the GPU (``backends/cuda/columns.py``:
three coalesced kernels over tiles of rows): NumPy's results (integers, maxima and exact products
bit for bit; float sums within ``columns.error_depth``) at every edge of the tiling (one row, a
tile's rows and one more, more tiles than the carry kernel takes, slabs of 256 columns and the last narrower
one), inclusive and exclusive, seeded (more than one carry launch of seeds by value) and with the
totals; views, ``out=`` of another layout, float16 and complex; a seeded scan inside a caller's
CUDA graph (the seeds go by value: nothing is copied from the host), replayed, its temporaries
kept (arrays made after the capture keep their values)."""

from __future__ import annotations

import numpy as np
import pytest

from distscan._dtypes import scan_types
from distscan.ops import OPS

from tests.support.devices import require_gpu
from tests.support.reference import reference_scan

cp = require_gpu()
pytestmark = pytest.mark.gpu

import distscan  # noqa: E402
from distscan.backends import cuda as gpu  # noqa: E402
from distscan.backends.cuda import columns  # noqa: E402
from mpi4py import MPI  # noqa: E402

COMM = MPI.COMM_SELF


def _rows(rng, opname, dtype, shape):
    dt = np.dtype(dtype)
    if opname == "prod":  # halves, twos, signs and a few zeros: exact in any order
        return rng.choice(np.array([0.5, 2.0, -1.0, 1.0, 0.0]), shape, p=[0.3, 0.3, 0.2, 0.19, 0.01]).astype(dt)
    if dt.kind in "iub":
        return rng.integers(-100, 100, shape).astype(dt)
    if dt.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)
    return rng.standard_normal(shape).astype(dt)


def _check(got, total, x, opname, types, exclusive, seed):
    # the seed as a row before, in the accumulator's dtype (reference_scan takes types: it casts the rest)
    full = x if seed is None else np.concatenate([seed.astype(types.acc)[None], x.astype(types.acc)])
    cut = 0 if seed is None else 1
    exact = types.acc.kind not in "fc" or opname != "sum"
    acc = None if exact else (np.complex128 if types.acc.kind == "c" else np.float64)
    ref = reference_scan(full, opname, exclusive=exclusive, acc=acc, types=types)[cut:]
    ref_total = reference_scan(full, opname, acc=acc, types=types)[-1]
    where = f"{x.shape} exclusive={exclusive} seeded={seed is not None}"
    if exact:
        np.testing.assert_array_equal(got, ref, err_msg=where)
        np.testing.assert_array_equal(total, ref_total.astype(types.acc), err_msg=where)
        return
    n, w = x.shape
    u = np.finfo(types.acc).eps / 2
    scale = reference_scan(np.abs(full.astype(acc)), "sum", acc=np.float64)  # sum of |x| up to each row
    tol = (columns.error_depth(n, w, np.dtype(types.acc).itemsize) + 2) * u * scale
    if types.result.itemsize < types.acc.itemsize:  # float16 results: one more rounding, of half
        # an ulp, which is half the subnormals' spacing near 0 (a seed of -1.0e-5 at seed
        # 4568541052705108012, record BK: |error| 3e-8 against eps*scale's 1e-8)
        tol = tol + np.finfo(types.result).eps * np.abs(scale) + float(np.finfo(types.result).smallest_subnormal)
    tol_rows = tol[cut:] if not exclusive else np.concatenate([np.zeros_like(tol[:1]), tol[:-1]])[cut:]
    assert (np.abs(got.astype(acc) - ref) <= tol_rows).all(), where
    assert (np.abs(total.astype(acc) - ref_total) <= tol[-1]).all(), where


CASES = [("sum", np.int64), ("sum", np.int8), ("max", np.float32), ("prod", np.float64), ("sum", np.float32),
         ("sum", np.complex64), ("sum", np.float16), ("bitwise_xor", np.int32)]


@pytest.mark.parametrize("opname,dtype", CASES, ids=[f"{o}-{np.dtype(d).name}" for o, d in CASES])
def test_columns_at_the_edges_of_the_tiling(opname, dtype, rng):
    op = OPS[opname]
    types = scan_types(op, dtype)
    size = types.acc.itemsize  # (the kernels' accumulator: float16 sums accumulate in float32 already)
    for w in (2, 3, 5, 32, 33, 255, 256, 257, 600):
        rows = columns.tile_rows(w, size)
        heights = [1, rows - 1, rows, rows + 1, 3 * rows + 5]
        if w in (2, 257) and opname == "sum" and dtype in (np.int64, np.float32):
            heights.append(rows * columns.CARRY_TILES + 1)  # the tile folds scanned as rows again
        for n in heights:
            x = _rows(rng, opname, dtype, (n, w))
            for seeded in (False, True):
                seed = _rows(rng, opname, types.acc, (w,)) if seeded else None
                for exclusive in (False, True):
                    got, total = gpu.scan(cp.asarray(x), op, types, exclusive=exclusive, seed=seed, want_total=True)
                    assert got.shape == (n, w) and got.dtype == types.result
                    _check(cp.asnumpy(got), np.asarray(total), x, opname, types, exclusive, seed)


def test_column_views_and_out_of_another_layout(rng):
    """A strided view in; ``out=`` in Fortran order and a strided view out (written through a copy)."""
    base = rng.integers(-1000, 1000, (30001, 70)).astype(np.int64)
    x = cp.asarray(base)[::3, 1::2]  # (10001, 35), neither C- nor F-contiguous
    want = np.cumsum(base[::3, 1::2], axis=0)
    np.testing.assert_array_equal(cp.asnumpy(distscan.cumsum(x, comm=COMM)), want)
    for out in (cp.empty((35, 10001), np.int64).T, cp.empty((10001, 70), np.int64)[:, ::2]):
        got = distscan.cumsum(x, out=out, comm=COMM)
        assert got is out
        np.testing.assert_array_equal(cp.asnumpy(out), want)
    half = rng.standard_normal((4099, 6)).astype(np.float16)
    got = cp.asnumpy(distscan.cumsum(cp.asarray(half), comm=COMM))
    np.testing.assert_allclose(got.astype(np.float64), np.cumsum(half.astype(np.float64), axis=0),
                               rtol=2e-3, atol=2e-2 * np.sqrt(4099))


@pytest.mark.parametrize("w", [5, 100, 300])
def test_a_seeded_scan_of_columns_in_a_capture_replays(w, rng):
    """Seeds by value in the carry kernel's arguments (two and more launches of them past 64
    columns): a caller's CUDA graph captures the seeded scan; each replay gives the same rows."""
    op = OPS["sum"]
    types = scan_types(op, np.int64)
    n = 2 * columns.tile_rows(w, 8) + 3
    host = rng.integers(-1000, 1000, (n, w)).astype(np.int64)
    seed = rng.integers(-1000, 1000, w).astype(np.int64)
    x = cp.asarray(host)
    gpu.scan(x, op, types, seed=seed)  # warm: the module is loaded before the capture
    cp.cuda.Device().synchronize()
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        try:
            y, _ = gpu.scan(x, op, types, seed=seed)
        finally:
            graph = stream.end_capture()
    want = np.cumsum(np.concatenate([seed[None], host]), axis=0)[1:]
    with stream:  # arrays that would take the memory of the call's temporaries, were they freed
        decoys = [cp.full(size, 7, np.int64) for size in (w * 3, w * 8, w * 64, n * w) for _ in range(2)]
    for _ in range(3):
        with stream:
            y[...] = -1
        graph.launch(stream)
        stream.synchronize()
        np.testing.assert_array_equal(cp.asnumpy(y), want)
    assert all(bool((d == 7).all()) for d in decoys)  # the replays wrote only memory of their own


@pytest.mark.parametrize("w", [3, 300])
def test_columns_are_bitwise_reproducible_beside_a_racing_copy(w, rng):
    """The association of a float result depends on w, the run and the row only (fixed trees): the
    same input gives the same bits run after run, also while a copy on another stream competes for
    bandwidth, through the tile folds scanned as rows again (more tiles than CARRY_TILES)."""
    op = OPS["sum"]
    types = scan_types(op, np.float32)
    n = columns.tile_rows(w, 4) * (columns.CARRY_TILES + 3) + 7
    x = cp.asarray(rng.standard_normal((n, w)).astype(np.float32))
    seed = rng.standard_normal(w).astype(np.float32)
    first, t0 = gpu.scan(x, op, types, seed=seed, want_total=True)
    first = first.copy()
    junk = cp.empty(1 << 28, dtype=cp.uint8)
    side = cp.cuda.Stream(non_blocking=True)
    for i in range(6):
        if i % 2:
            with side:
                junk.fill(i)
        got, t = gpu.scan(x, op, types, seed=seed, want_total=True)
        assert cp.array_equal(got.view(cp.uint8), first.view(cp.uint8)), f"run {i} differs"
        assert t.tobytes() == t0.tobytes()
    side.synchronize()


def test_columns_from_threads_on_streams_of_their_own(rng):
    """Four host threads, each on a stream of its own, scan arrays of different widths at once
    (the carry's seeds and the tile folds are per call: nothing shared between them)."""
    import threading

    hosts = [rng.integers(-1000, 1000, (50_001 + 17 * i, w)).astype(np.int64) for i, w in enumerate((2, 7, 64, 300))]
    seeds = [rng.integers(-1000, 1000, h.shape[1]).astype(np.int64) for h in hosts]
    op = OPS["sum"]
    types = scan_types(op, np.int64)
    got, errors = [None] * 4, []

    def work(i):
        try:
            stream = cp.cuda.Stream(non_blocking=True)
            with stream:
                x = cp.asarray(hosts[i])
                for _ in range(5):
                    y, _ = gpu.scan(x, op, types, seed=seeds[i])
                stream.synchronize()
                got[i] = cp.asnumpy(y)
        except Exception as e:  # noqa: BLE001 - reported below, on the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for h, s, g in zip(hosts, seeds, got):
        np.testing.assert_array_equal(g, np.cumsum(np.concatenate([s[None], h]), axis=0)[1:])
