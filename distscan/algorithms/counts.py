"""How many combine operations and barriers each algorithm makes (verified against counted
ufunc applications in tests/algorithms/test_counts.py)."""

from __future__ import annotations

from typing import NamedTuple

from .names import BLOCK_LEVEL, DEFAULT_TILE, DEVICE_LEVEL, ITEMS, SUB_WINDOW, WINDOW, resolve_algorithm


class OpCount(NamedTuple):
    """ops: operator applications (work); steps: parallel steps (depth, in operator
    applications on the critical path); barriers: block-wide barriers (``__syncthreads``)
    for a tile scan, grid-wide ones (kernel boundaries) for a device-level count."""

    ops: int
    steps: int
    barriers: int


def _log2(n: int) -> int:
    if n < 1 or n & (n - 1):
        raise ValueError(f"n must be a power of two >= 1, not {n!r}")
    return n.bit_length() - 1


def count_ops(name, n: int, *, exclusive: bool = False, items: int = ITEMS) -> OpCount:
    """Work, depth and barriers of the scan of ONE tile of ``n`` items (a power of two).

    ====================================  =============================  ================  ===========
    name                                  ops (work)                     steps (depth)     barriers
    ====================================  =============================  ================  ===========
    kogge_stone                           n log2 n - (n - 1)             log2 n            2 log2 n
    kogge_stone_double_buffer             n log2 n - (n - 1)             log2 n            log2 n
    brent_kung                            2 (n - 1) - log2 n             2 log2 n - 1      2 log2 n - 1
    blelloch (exclusive=True)             2 (n - 1)                      2 log2 n          2 log2 n + 1
    blelloch (inclusive: + excl op x)     2 (n - 1) + n                  2 log2 n + 1      2 log2 n + 1
    coarsened (r = min(items, n),         (n - t) + (t log2 t - t + 1)   (r - 1) + log2 t  1 + log2 t
    t = n / r threads)                    + (n - r)                      + [t > 1]
    ====================================  =============================  ================  ===========

    ``exclusive`` matters for Blelloch only (every other exclusive scan is the inclusive one
    shifted, at no cost).  A device-level name gives the count of its tile scan, the default
    ``coarsened``; :func:`count_device` counts the work between tiles.
    """
    name = resolve_algorithm(name)
    k = _log2(n)
    if name in ("kogge_stone", "kogge_stone_double_buffer"):
        return OpCount(n * k - (n - 1), k, 2 * k if name == "kogge_stone" else k)
    if name == "brent_kung":
        return OpCount(2 * (n - 1) - k, max(2 * k - 1, 0), max(2 * k - 1, 0))
    if name == "blelloch":
        if exclusive:
            return OpCount(2 * (n - 1), 2 * k, 2 * k + 1)
        return OpCount(2 * (n - 1) + n, 2 * k + 1, 2 * k + 1)
    if name in ("coarsened",) or name in DEVICE_LEVEL:
        r = min(items, n)
        _log2(r)
        t = n // r
        kt = _log2(t)
        return OpCount((n - t) + (t * kt - t + 1) + (n - r), (r - 1) + kt + (t > 1), 1 + kt)
    raise ValueError(f"count_ops: {name!r} has no single tile scan (it is the backend's choice)")


def count_device(name, tiles: int, *, block: int = 1024, window: int = WINDOW) -> OpCount:
    """Work between tiles for ``tiles`` tiles of ``block`` rows (``tiles >= 2``): ops on the tile
    aggregates and prefixes, not counting the scans inside tiles nor the final
    ``prefix op tile`` fold (``(tiles - 1) * block`` ops for every name); ``steps``: the serial
    chain between tiles (hops a tile may wait through); ``barriers``: grid-wide barriers
    (extra kernel boundaries).

    =============  ==========================================  =====================  ==========
    name           ops                                         steps (serial hops)    barriers
    =============  ==========================================  =====================  ==========
    domino         tiles                                       tiles                  0
    lookback       31*32*S + 31*G*subs + 32*S + 2*S + 32*G   G = windows            0
                   S = ceil(tiles/32) sub-windows, subs =
                   window/32, G = ceil(S/subs)
    hierarchical   count of the totals' scan, recursively:     2*levels - 1 launches  2*levels-2
                   its tiles' scans + fold + deeper levels     (in sequence)
    =============  ==========================================  =====================  ==========

    For lookback, as the CPU computes it: per tile (padded to whole sub-windows) a 32-lane
    butterfly tree (31 ops) and its prefix (1 op); per sub-window its total (1 op), the tree of
    the sub-window totals before it (31 ops, padded to whole windows) and anchor op that (1 op);
    per window its total W (a 31-op tree) and the anchor hop (1 op).  The GPU kernel computes
    the second tree and the anchor op in every tile's warp instead of once per sub-window:
    31 + 31 + 2 ops per tile.
    """
    name = resolve_algorithm(name)
    if tiles < 2:
        raise ValueError("count_device needs at least 2 tiles")
    if name == "domino":
        return OpCount(tiles, tiles, 0)
    if name in BLOCK_LEVEL or name in ("lookback", "lookahead"):
        S = -(-tiles // SUB_WINDOW)
        subs = window // SUB_WINDOW
        G = -(-S // subs)
        L = SUB_WINDOW
        ops = (L - 1) * L * S + S + (L - 1) * G * subs + 32 * G + S + L * S
        return OpCount(ops, G, 0)
    if name == "hierarchical":
        ops, levels_ = _hierarchical_ops(tiles, block)
        return OpCount(ops, 2 * (levels_ + 1) - 1, 2 * (levels_ + 1) - 2)
    raise ValueError(f"count_device: {name!r} is not a device-level algorithm")


def _hierarchical_ops(m: int, block: int) -> tuple:
    """(ops, levels) of hierarchical's scan of m tile totals with the default tile scan."""
    B = min(block, 1 << max(m - 1, 0).bit_length())
    T = -(-m // B)
    ops = T * count_ops(DEFAULT_TILE, B).ops
    if T == 1:
        return ops, 1
    deeper, levels_ = _hierarchical_ops(T, block)
    return ops + deeper + (T - 1) * B, levels_ + 1
