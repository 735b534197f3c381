"""How many combine operations and barriers each algorithm makes (distscan.algorithms.counts), checked
against counted ufunc applications and barriers of the data flows."""

from __future__ import annotations

import numpy as np
import pytest

from distscan import algorithms as A

from tests.support.seeds import seeded_rng


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
    rng = seeded_rng()
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
