"""The CPU teaching path of the classic scan algorithms (distscan/algorithms.py).

Every algorithm x every operator x dtypes (bool, int8, uint16, int32, int64, float32,
float64, complex128 where the operator is defined) x sizes around the tile boundaries and
over many tiles x w in (1, 3), inclusive and exclusive: integers, bool and max/min exact
against ``ufunc.accumulate``; float and complex sums and products within the bound of the
module's docstring.  A non-commutative operator (string concatenation) checks the order of
every combination; counted ufunc applications and barriers check ``count_ops`` and
``count_device``.  Random data is seeded: the seed is printed, reported on failure, and
``DISTSCAN_TEST_SEED`` repeats it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.support.seeds import draw_seed
from distscan import algorithms as A
from distscan._dtypes import scan_types
from distscan.ops import OPS

DTYPES = [np.bool_, np.int8, np.uint16, np.int32, np.int64, np.float32, np.float64, np.complex128]
SIZES = [0, 1, 2, 3, 31, 32, 33, 1000, 1023, 1024, 1025, 4097]
MANY_TILES = [(2000, 16), (700, 2)]    # (n, block): 125 and 350 tiles
NAMES = [a for a in A.ALGORITHMS if a != "auto"]


def _rng():
    seed = draw_seed()
    print(f"random seed {seed} (repeat with DISTSCAN_TEST_SEED={seed})")
    return np.random.default_rng(seed)


def _cases():
    """(op, input dtype, accumulator dtype) for every operator and the dtypes it is defined on."""
    out = []
    for op in OPS.values():
        for dt in DTYPES:
            try:
                types = scan_types(op, np.dtype(dt))
            except TypeError:
                continue
            out.append((op, np.dtype(dt), types.acc))
    return out


CASES = _cases()


def _data(rng, op, dt, shape):
    """Data that keeps each scan interesting: running ands stay mostly true, products near 1,
    integer products odd (never wrapping to 0), a few NaNs for float max/min."""
    n = shape[0]
    if dt.kind == "b":
        p = {"logical_and": 0.995, "bitwise_and": 0.995, "logical_or": 0.005, "bitwise_or": 0.005}.get(op.name, 0.5)
        return rng.random(shape) < p
    if dt.kind in "iu":
        info = np.iinfo(dt)
        bits = lambda: rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True)  # noqa: E731
        if op.name in ("bitwise_and", "logical_and"):
            return ~(bits() & bits() & bits() & bits()) | (rng.random(shape) > 0.002).astype(dt)
        if op.name in ("bitwise_or", "logical_or"):
            return np.where(rng.random(shape) < 0.01, bits() & bits(), dt.type(0))
        if op.name == "prod":
            return bits() | dt.type(1)
        return bits()
    real = rng.standard_normal(shape)
    if op.name == "prod":
        mag = rng.uniform(0.9, 1.1, shape)
        x = mag * np.exp(2j * np.pi * rng.random(shape)) if dt.kind == "c" else mag * np.sign(real)
    elif dt.kind == "c":
        x = real + 1j * rng.standard_normal(shape)
    else:
        x = real
    if op.name in ("logical_and", "logical_or"):
        keep = rng.random(shape) < (0.998 if op.name == "logical_and" else 0.002)
        x = np.where(keep, x, 0)
    x = x.astype(dt)
    if op.name in ("max", "min") and n > 100:
        x[rng.integers(0, n, 2)] = np.nan
    return x


def _gamma(k, u):
    return k * u / (1 - k * u)


def _check(result, x, op, acc, exclusive):
    ref = op.ufunc.accumulate(x, axis=0, dtype=acc) if len(x) else np.empty(x.shape, acc)
    if exclusive:
        ref = np.concatenate([np.full((1,) + x.shape[1:], op.identity(acc), acc), ref[:-1]]) if len(x) else ref
    assert result.dtype == acc and result.shape == x.shape, (result.dtype, result.shape)
    if acc.kind in "biu" or op.name in ("max", "min"):
        np.testing.assert_array_equal(result, ref)
        return
    # Sums and products: each result and NumPy's within the docstring's bound of the exact value.
    u = np.finfo(acc).eps / 2
    i = np.arange(len(x), dtype=np.float64)[:, None]
    if exclusive:
        x = np.concatenate([np.zeros((1,) + x.shape[1:], x.dtype), x[:-1]]) if len(x) else x
    mag = np.abs(x.astype(np.complex128))
    if op.name == "sum":
        bound = 2 * _gamma(i, u) * np.cumsum(mag, axis=0)
    elif acc.kind == "c":
        bound = 2 * ((1 + math.sqrt(2) * _gamma(2, u)) ** i - 1) * np.cumprod(np.where(mag == 0, 1, mag), axis=0)
    else:
        bound = 2 * _gamma(i, u) * np.cumprod(np.where(mag == 0, 1, mag), axis=0)
    err = np.abs(result.astype(np.complex128) - ref.astype(np.complex128))
    bad = err > bound * (1 + 1e-6) + np.finfo(np.float64).tiny
    assert not bad.any(), f"outside the bound at {np.argwhere(bad)[:5].tolist()}: {err[bad][:5]} > {bound[bad][:5]}"


@pytest.mark.parametrize("opname", sorted(OPS))
@pytest.mark.parametrize("name", NAMES)
def test_every_algorithm_operator_dtype_size(name, opname):
    rng = _rng()
    for op, dt, acc in (c for c in CASES if c[0].name == opname):
        identity = op.identity(acc)
        for n, block in [(n, 1024) for n in SIZES] + MANY_TILES:
            for w in (1, 3):
                x = _data(rng, op, dt, (n, w)).astype(acc)  # the caller casts to the accumulator dtype
                before = x.copy()
                for exclusive in (False, True):
                    got = A.scan(name, x, op.ufunc, identity, exclusive=exclusive, block=block)
                    _check(got, x, op, acc, exclusive)
                np.testing.assert_array_equal(x, before)  # the input is left alone


def _concat():
    """String concatenation: associative, NOT commutative -- any combination out of order shows."""
    return np.frompyfunc(lambda a, b: a + b, 2, 1)


def _strings(n, w):
    return np.array([[f"{chr(65 + c)}{i}." for c in range(w)] for i in range(n)], dtype=object).reshape(n, w)


@pytest.mark.parametrize("name", NAMES)
def test_order_of_combination_with_a_non_commutative_operator(name):
    cat = _concat()
    for n, block in [(1, 2), (5, 2), (37, 4), (300, 2), (1000, 16), (1025, 1024)]:
        x = _strings(n, 2)
        want = cat.accumulate(x, axis=0)
        got = A.scan(name, x, cat, "", block=block)
        assert (got == want).all(), (name, n, block)
        got = A.scan(name, x, cat, "", exclusive=True, block=block)
        assert got[0, 0] == "" and (got[1:] == want[:-1]).all(), (name, n, block)


@pytest.mark.parametrize("device", sorted(A.DEVICE_LEVEL))
@pytest.mark.parametrize("tile", sorted(A.TILE_SCANS))
def test_every_tile_scan_under_every_device_level(tile, device):
    """Any tile scan combined by any device level; look-back over several windows and sub-windows."""
    cat = _concat()
    fn = getattr(A, device)
    for n, block, window in [(300, 2, 32), (700, 2, 64), (2100, 2, 1024)]:
        x = _strings(n, 1)
        kw = {"window": window} if device == "lookback" else {}
        got = fn(x, cat, "", block=block, tile_scan=tile, **kw)
        want = cat.accumulate(x, axis=0)
        if tile == "blelloch_exclusive":
            assert got[0, 0] == "" and (got[1:] == want[:-1]).all(), (tile, device, n)
        else:
            assert (got == want).all(), (tile, device, n)


def test_coarsened_run_lengths():
    rng = _rng()
    x = rng.integers(-1000, 1000, (3000, 2))
    for items in (1, 2, 4, 8, 32, 1024):
        for block in (2, 64, 1024):
            np.testing.assert_array_equal(A.coarsened(x, np.add, 0, block=block, items=items), np.cumsum(x, 0))


# -- operation counts ------------------------------------------------------------------------------------

class Counting:
    """A ufunc that counts its applications: ``ops`` (elements produced) and ``steps`` (calls)."""

    def __init__(self, ufunc):
        self.ufunc, self.ops, self.steps = ufunc, 0, 0

    def __call__(self, *args, **kwargs):
        r = self.ufunc(*args, **kwargs)
        size = np.asarray(r).size
        if size:
            self.ops += size
            self.steps += 1
        return r


class Barriers:
    def __init__(self):
        self.count = 0

    def __call__(self):
        self.count += 1


@pytest.mark.parametrize("name", sorted(A.TILE_SCANS))
def test_count_ops_matches_counted_applications(name):
    rng = _rng()
    for n in [1 << k for k in range(11)]:
        for items in ((1, 2, 4, 8, 32) if name == "coarsened" else (A.ITEMS,)):
            t = rng.integers(-9, 9, (1, n, 1))
            f, sync = Counting(np.add), Barriers()
            if name == "coarsened":
                scanned, total = A.TILE_SCANS[name](t.copy(), f, 0, sync, items=items)
            else:
                scanned, total = A.TILE_SCANS[name](t.copy(), f, 0, sync)
            exclusive = name == "blelloch_exclusive"
            want = A.count_ops(name.replace("_exclusive", ""), n, exclusive=exclusive, items=items)
            assert (f.ops, f.steps, sync.count) == tuple(want), (name, n, items, want)
            assert total[0, 0] == t.sum()


@pytest.mark.parametrize("name", sorted(A.DEVICE_LEVEL))
def test_count_device_matches_counted_applications(name):
    """Whole scan of T tiles = T tile scans + (T - 1) * B folded prefixes + the device-level work."""
    for tiles, block, window in [(2, 8, 1024), (5, 8, 1024), (33, 4, 32), (100, 2, 64), (1500, 2, 1024),
                                 (3000, 2, 32)]:
        f = Counting(np.add)
        kw = {"window": window} if name in ("lookback", "lookahead") else {}
        x = np.ones((tiles * block, 1), np.int64)
        got = getattr(A, name)(x, f, 0, block=block, **kw)
        assert got[-1, 0] == tiles * block
        dev = A.count_device(name, tiles, block=block, window=window)
        assert f.ops == tiles * A.count_ops(name, block).ops + (tiles - 1) * block + dev.ops, (tiles, block)
        windows = -(-tiles // window)
        assert dev.steps == {"domino": tiles, "lookback": windows, "lookahead": windows}.get(name, dev.steps)


def test_count_formulas_examples():
    assert A.count_ops("kogge_stone", 8) == (8 * 3 - 7, 3, 6)
    assert A.count_ops("kogge_stone_double_buffer", 8) == (17, 3, 3)
    assert A.count_ops("brent_kung", 8) == (2 * 7 - 3, 5, 5)
    assert A.count_ops("blelloch", 8, exclusive=True) == (14, 6, 7)
    assert A.count_ops("blelloch", 8) == (22, 7, 7)
    # 1024 items, runs of 8: 128 threads
    assert A.count_ops("coarsened", 1024) == ((1024 - 128) + (128 * 7 - 127) + (1024 - 8), 7 + 7 + 1, 8)
    assert A.count_device("hierarchical", 4, block=2) == (A.count_ops("coarsened", 2).ops * 2 + 2 + 1, 5, 4)


# -- names -------------------------------------------------------------------------------------------------

def test_names_and_levels():
    assert A.ALGORITHMS[0] == "auto" and "lookahead" in A.DEVICE_LEVEL
    assert set(A.ALGORITHMS) == {"auto"} | A.BLOCK_LEVEL | A.DEVICE_LEVEL
    assert A.resolve_algorithm("Brent-Kung") == "brent_kung"
    assert A.resolve_algorithm(" KOGGE_STONE_double-buffer ") == "kogge_stone_double_buffer"
    assert A.levels("brent_kung") == ("brent_kung", "lookback")
    assert A.levels("domino") == ("coarsened", "domino")
    assert A.levels("auto") == (None, None)
    with pytest.raises(ValueError, match=r"unknown algorithm 'sklansky'; choose one of auto, kogge_stone, "):
        A.resolve_algorithm("sklansky")
    assert A.levels("LookAhead") == ("coarsened", "lookahead")
    with pytest.raises(ValueError, match="unknown algorithm"):
        A.resolve_algorithm(None)
    for bad in (0, 1, 3, 1000):
        with pytest.raises(ValueError, match="power of two"):
            A.kogge_stone(np.ones((5, 1)), np.add, 0.0, block=bad)


def test_auto_is_the_sequential_scan():
    x = np.arange(10, dtype=np.int64).reshape(5, 2)
    np.testing.assert_array_equal(A.scan("auto", x, np.add, 0), np.cumsum(x, 0))
    np.testing.assert_array_equal(A.scan("auto", x, np.add, 0, exclusive=True)[1:], np.cumsum(x, 0)[:-1])
