"""The data flows of the classic scan algorithms (distscan.algorithms.flows), the CPU teaching path.

Every algorithm x every operator x dtypes (bool, int8, uint16, int32, int64, float32,
float64, complex128 where the operator is defined) x sizes around the tile boundaries and
over many tiles x w in (1, 3), inclusive and exclusive: integers, bool and max/min exact
against ``ufunc.accumulate``; float and complex sums and products within the bound of the
module's docstring.  A non-commutative operator (string concatenation) checks the order of
every combination.  Random data is seeded: the seed is printed, reported on failure, and
``DISTSCAN_TEST_SEED`` repeats it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from distscan import algorithms as A
from distscan._dtypes import scan_types
from distscan.ops import OPS

from tests.support.reference import reference_scan
from tests.support.seeds import seeded_rng


DTYPES = [np.bool_, np.int8, np.uint16, np.int32, np.int64, np.float32, np.float64, np.complex128]
SIZES = [0, 1, 2, 3, 31, 32, 33, 1000, 1023, 1024, 1025, 4097]
MANY_TILES = [(2000, 16), (700, 2)]    # (n, block): 125 and 350 tiles
NAMES = [a for a in A.ALGORITHMS if a != "auto"]


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
    ref = reference_scan(x, op, exclusive=exclusive, acc=acc)
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
    rng = seeded_rng()
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
    rng = seeded_rng()
    x = rng.integers(-1000, 1000, (3000, 2))
    for items in (1, 2, 4, 8, 32, 1024):
        for block in (2, 64, 1024):
            np.testing.assert_array_equal(A.coarsened(x, np.add, 0, block=block, items=items), np.cumsum(x, 0))


def test_auto_is_the_sequential_scan():
    x = np.arange(10, dtype=np.int64).reshape(5, 2)
    np.testing.assert_array_equal(A.scan("auto", x, np.add, 0), np.cumsum(x, 0))
    np.testing.assert_array_equal(A.scan("auto", x, np.add, 0, exclusive=True)[1:], np.cumsum(x, 0)[:-1])


@pytest.mark.parametrize("name", sorted(set(A.ALGORITHMS) - {"auto"}))
@pytest.mark.parametrize("kw", [{}, {"exclusive": True}, {"reverse": True}])
def test_gcd_and_lcm_keep_a_raw_first_item_with_every_named_algorithm(name, kw):
    """NumPy's gcd/lcm accumulate copies the first item as it is (-6, not gcd(0, -6) == 6).  Every
    named algorithm keeps it; "blelloch", whose inclusive scan is its exclusive one op the item,
    dropped it until the CPU backend wrote it back (found by the fuzzer on 2026-11-25)."""
    import distscan

    for op, x, identity in ((np.gcd, np.array([-6, 12, 4, 9, -3]), 0), (np.lcm, np.array([-2, 3, 4, -6]), 1)):
        got = distscan.scan(x, op, algorithm=name, **kw)
        order = slice(None, None, -1) if kw.get("reverse") else slice(None)
        want = op.accumulate(x[order])
        if kw.get("exclusive"):
            want = np.concatenate([[identity], want[:-1]])
        np.testing.assert_array_equal(got, want[order])
