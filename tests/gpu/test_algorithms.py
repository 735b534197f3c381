"""Every `algorithm=` name on the GPU (skipped without one): block-level scans inside a tile
(kogge_stone, kogge_stone_double_buffer, brent_kung, blelloch, coarsened) and device-level
strategies (lookback, lookahead, domino, hierarchical, which recurses over its tile totals), inclusive
and exclusive, seeded, at sizes around the warp and tile boundaries and over many tiles,
exact against NumPy for integers; float sums within the backend's bound; bitwise
run-to-run determinism for floats."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.devices import require_gpu
from tests.support.reference import reference_scan
from tests.support.seeds import draw_seed

cp = require_gpu()
pytestmark = pytest.mark.gpu

from distscan._dtypes import scan_types  # noqa: E402
from distscan.backends.cuda import compile as cc  # noqa: E402
from distscan.backends import cuda as gpu  # noqa: E402
from distscan.ops import get_op  # noqa: E402

NAMES = ["coarsened", "kogge_stone", "kogge_stone_double_buffer", "brent_kung", "blelloch",
         "lookback", "lookahead", "domino", "hierarchical"]
CASES = [("sum", np.int32), ("sum", np.int64), ("sum", np.int8, np.int64), ("sum", np.float32),
         ("max", np.float64), ("bitwise_xor", np.uint16), ("logical_or", np.bool_), ("prod", np.complex64),
         ("min", np.float16)]


def _types(case):
    op = get_op(case[0])
    return op, scan_types(op, np.dtype(case[1]), case[2] if len(case) > 2 else None)


@pytest.fixture(scope="module", autouse=True)
def _precompiled():
    keys = []
    for name in NAMES:
        for case in CASES:
            op, t = _types(case)
            keys.append(gpu.module_key(t.input, t, op, name))
            kacc = cc.kernel_acc_dtype(t.acc)
            if name == "hierarchical":  # the scan of the tile totals
                keys.append(gpu.module_key(kacc, scan_types(op, kacc, kacc), op, name))
    cc.precompile(keys)
    yield


def _data(rng, dtype, n):
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.random(n) < 0.01
    if dt.kind == "c":
        return (1 + 1e-3 * (rng.standard_normal(n) + 1j * rng.standard_normal(n))).astype(dt)
    if dt.kind == "f":
        return rng.standard_normal(n).astype(dt)
    return rng.integers(np.iinfo(dt).min // 2 if dt.kind == "i" else 0, np.iinfo(dt).max // 2, n, dtype=dt)


def _exact_products(rng, dtype, n):
    """Complex factors whose products are exact in any association: units (1, -1, i, -i) and,
    rarely, 1+i and (1-i)/2, so every partial product is i^k (1+i)^m 2^j (components 0 or
    +-2^e, within range here).  Long products of random factors near 1 are not a test of the
    scan's structure: a tree of them rounds with a bias (float32 products of two factors near 1
    err by -0.012 u on average; the GPU's complex64 products of 2^24 such factors drift by
    -22 u sqrt(n), linearly in i, on every algorithm; NumPy's sequential product by 0.65 u sqrt(n)),
    so their tolerance would hide a missing or doubled factor (about 1e-3)."""
    factors = np.array([1, -1, 1j, -1j, 1 + 1j, (1 - 1j) / 2], dtype)
    p = np.array([1, 1, 1, 1, 1.6e-4, 1.6e-4])
    return rng.choice(factors, n, p=p / p.sum())


def _reference(x, op, t, exclusive, seed):
    """NumPy's sequential scan; float and complex sums and products in double precision (a
    float32 reference would bring its own rounding walk into the comparison)."""
    wide = {"f": np.float64, "c": np.complex128}.get(t.acc.kind) if op.name in ("sum", "prod") else None
    ref = reference_scan(x, op, exclusive=exclusive, initial=seed, types=t, acc=wide)
    return ref.astype(np.complex128 if ref.dtype.kind == "c" else np.float64 if ref.dtype.kind == "f" else ref.dtype)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(np.dtype(v).name if not isinstance(v, str) else v
                                                                 for v in c))
def test_algorithm_matches_numpy(name, case):
    seed_ = draw_seed()
    print(f"seed={seed_}")
    rng = np.random.default_rng(seed_)
    op, t = _types(case)
    tile = gpu.tuning(t.input, t, name).tile_items
    sizes = [1, 31, 33, 255, 257, tile - 1, tile, tile + 1, 5 * tile + 3, 1_000_003]
    if name == "hierarchical":
        sizes.append(tile * tile + 7)  # the tile totals need a second level of recursion
    for n in sizes:
        # products over more than ~1e6 factors: exact ones, compared exactly (see _exact_products)
        exact = op.name == "prod" and t.acc.kind == "c" and n > 1_000_003
        draw = (lambda dt, k: _exact_products(rng, dt, k)) if exact else (lambda dt, k: _data(rng, dt, k))
        x = draw(case[1], n)
        for exclusive in (False, True):
            for seed in (None, np.asarray(draw(t.acc, 1)[0], t.acc)):
                got, total = gpu.scan(cp.asarray(x), op, t, exclusive=exclusive,
                                      seed=None if seed is None else seed.reshape(1), want_total=True, algorithm=name)
                got = cp.asnumpy(got)
                ref = _reference(x, op, t, exclusive, seed)
                if exact:
                    np.testing.assert_array_equal(got, ref.astype(t.result), err_msg=f"{name} n={n} excl={exclusive}")
                elif t.result.kind in "fc" and op.name in ("sum", "prod"):
                    component = t.result.itemsize // (2 if t.result.kind == "c" else 1)
                    tol = 2e-3 if component <= 4 else 1e-9
                    if op.name == "prod":
                        # a product's relative error: a random walk of its n roundings (about 2u
                        # each for complex; 10 standard deviations) and their bias near 1
                        # (-0.012 u per product of two factors near 1; _exact_products)
                        u = np.finfo(np.dtype(f"f{component}")).eps / 2
                        tol = max(tol, 10 * 2 * u * np.sqrt(n) + 0.025 * u * n)
                    np.testing.assert_allclose(got.astype(ref.dtype), ref, rtol=tol, atol=tol * np.sqrt(n),
                                               err_msg=f"{name} n={n} excl={exclusive} seed={seed_}")
                else:
                    np.testing.assert_array_equal(got.astype(ref.dtype), ref, err_msg=f"{name} n={n} excl={exclusive}")
                assert total is not None and total.shape == (1,)


@pytest.mark.parametrize("name", NAMES)
def test_float_results_are_reproducible(name):
    op = get_op("sum")
    t = scan_types(op, np.float32)
    x = cp.asarray(np.random.default_rng(7).standard_normal(3_000_017).astype(np.float32))
    first, _ = gpu.scan(x, op, t, algorithm=name)
    side = cp.cuda.Stream(non_blocking=True)
    with side:
        noise = cp.random.random(1 << 24)
    for _ in range(3):
        again, _ = gpu.scan(x, op, t, algorithm=name)
        noise *= 1.0001
        assert cp.array_equal(first.view(cp.uint32), again.view(cp.uint32))
    side.synchronize()


def test_wide_columns_and_the_api():
    import distscan
    from mpi4py import MPI
    x = cp.asarray(np.arange(3 * 100_003, dtype=np.int32).reshape(100_003, 3) % 7)
    for name in NAMES:
        got = distscan.cumsum(x, algorithm=name, comm=MPI.COMM_SELF)
        np.testing.assert_array_equal(cp.asnumpy(got), np.cumsum(cp.asnumpy(x), axis=0))
