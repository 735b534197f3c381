"""The names of the scan algorithms (distscan.algorithms.names): which exist, their levels, spellings."""

from __future__ import annotations

import numpy as np
import pytest

from distscan import algorithms as A


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
