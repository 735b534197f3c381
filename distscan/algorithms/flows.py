"""The data flows of the scan algorithms in NumPy, step by step as the kernels take them: the
tile scans (Kogge-Stone, its double-buffered form, Brent-Kung, Blelloch, the coarsened scan) and
the ways tiles learn what came before them (hierarchical, domino, decoupled look-back and
look-ahead).  The teaching path of ``algorithm=`` on the CPU (:mod:`distscan.algorithms`)."""

from __future__ import annotations

import numpy as np

from .names import DEFAULT_TILE, ITEMS, SUB_WINDOW, WINDOW  # noqa: F401 - as the kernels call them


def _nothing():
    pass


def _check_block(block: int) -> None:
    if not isinstance(block, (int, np.integer)) or block < 2 or block & (block - 1):
        raise ValueError(f"block must be a power of two >= 2, not {block!r}")


def _kogge_stone_tile(t, ufunc, identity, sync=_nothing):
    """Hillis-Steele / Kogge-Stone, in place: step d adds the element d before.

        x0  x1  x2  x3  x4  x5  x6  x7
        |  \\|  \\|  \\|  \\|  \\|  \\|  \\|      d = 1: x[i] = x[i-1] op x[i]   (i >= 1)
        |   |\\  |\\  |\\  |\\  |\\  |\\  |      d = 2: x[i] = x[i-2] op x[i]   (i >= 2)
        |   | \\ | \\ | \\ | \\ | \\ | \\ |      d = 4: x[i] = x[i-4] op x[i]   (i >= 4)
        s0  s1  s2  s3  s4  s5  s6  s7

    A thread reads its left partner, everyone waits, then writes: 2 barriers a step.
    """
    B = t.shape[1]
    d = 1
    while d < B:
        left = t[:, :-d].copy()           # every thread i >= d reads x[i-d] ...
        sync()                            # ... before anyone overwrites it
        ufunc(left, t[:, d:], out=t[:, d:])
        sync()                            # writes done before the next step reads
        d *= 2
    return t, t[:, -1]


def _kogge_stone_double_buffer_tile(t, ufunc, identity, sync=_nothing):
    """Kogge-Stone reading buffer a and writing buffer b (then swapping): no thread
    overwrites what another still has to read, so one barrier a step.

        a: x0  x1  x2  x3 ...      b[i] = a[i-d] op a[i]  (i >= d)
             \\   \\   \\             b[i] = a[i]           (i <  d)
        b: y0  y1  y2  y3 ...      then swap a, b
    """
    B = t.shape[1]
    a, b = t, np.empty_like(t)
    d = 1
    while d < B:
        b[:, :d] = a[:, :d]
        ufunc(a[:, :-d], a[:, d:], out=b[:, d:])
        sync()
        a, b = b, a
        d *= 2
    return a, a[:, -1]


def _up_sweep(t, ufunc, sync):
    """Reduction tree, in place: stride s = 1, 2, ..., B/2 -> x[2s*k + 2s-1] op= x[2s*k + s-1].
    Afterwards x[B-1] is the tile total and x[2s*k + 2s-1] the total of its 2s-run."""
    B = t.shape[1]
    s = 1
    while s < B:
        ufunc(t[:, s - 1::2 * s], t[:, 2 * s - 1::2 * s], out=t[:, 2 * s - 1::2 * s])
        sync()
        s *= 2


def _brent_kung_tile(t, ufunc, identity, sync=_nothing):
    """Brent-Kung: reduction tree up, distribution tree down (inclusive).

        x0  x1  x2  x3  x4  x5  x6  x7
         \\->1      \\->3      \\->5      \\->7     up, s=1: pairs
                 \\----->3          \\----->7     up, s=2
                         \\------------->7     up, s=4: x7 = total
                         \\----->5             down, s=2: x5 = x3 op x5
             \\->2      \\->4      \\->6         down, s=1: x[2k] = x[2k-1] op x[2k]
        s0  s1  s2  s3  s4  s5  s6  s7

    Down-sweep step s: x[2s*k + 3s-1] = x[2s*k + 2s-1] op x[2s*k + 3s-1].
    """
    B = t.shape[1]
    _up_sweep(t, ufunc, sync)
    s = B // 4
    while s >= 1:
        ufunc(t[:, 2 * s - 1:-s:2 * s], t[:, 3 * s - 1::2 * s], out=t[:, 3 * s - 1::2 * s])
        sync()
        s //= 2
    return t, t[:, -1]


def _blelloch_exclusive_tile(t, ufunc, identity, sync=_nothing):
    """Blelloch: up-sweep, clear the root, down-sweep -> the EXCLUSIVE scan.

        up-sweep as Brent-Kung: x7 = total (saved as the aggregate), then x7 = identity
        down-sweep, s = B/2 .. 1, for each pair (left = x[2s*k + s-1], right = x[2s*k + 2s-1]):
            left, right = right, right op left
            (right holds the prefix before the pair; left's subtree comes first)

        s=4:  [.  .  .  a  .  .  .  e]  ->  [.  .  .  e  .  .  .  e+a]   (e: identity)
    """
    _up_sweep(t, ufunc, sync)
    total = t[:, -1].copy()
    t[:, -1] = identity                   # the root's prefix: nothing comes before the tile
    sync()
    s = t.shape[1] // 2
    while s >= 1:
        left = t[:, s - 1::2 * s].copy()
        right = t[:, 2 * s - 1::2 * s]
        t[:, s - 1::2 * s] = right        # the left child gets the parent's prefix
        ufunc(right, left, out=right)     # the right child: parent's prefix op left subtree
        sync()
        s //= 2
    return t, total


_blelloch_exclusive_tile.exclusive = True


def _blelloch_tile(t, ufunc, identity, sync=_nothing):
    """Blelloch's inclusive scan, derived: inclusive[i] = exclusive[i] op x[i] (one more step)."""
    x = t.copy()
    excl, total = _blelloch_exclusive_tile(t, ufunc, identity, sync)
    return ufunc(excl, x, out=excl), total


def _coarsened_tile(t, ufunc, identity, sync=_nothing, items=ITEMS):
    """Thread coarsening, three phases; a tile of B = threads * r rows, r = items per thread.

        thread:    0             1             2             3
        items:     x0 x1         x2 x3         x4 x5         x6 x7       (r = 2)
        phase 1:   x0 x0:1       x2 x2:3       x4 x4:5       x6 x6:7     each its run, sequentially
        phase 2:      x0:1          x0:3          x0:5          x0:7     run totals scanned (Kogge-Stone,
                                                                         double buffer)
        phase 3:   .  .          x0:1 op ..    x0:3 op ..    x0:5 op ..  add the totals before the run

    Work n - t + (t log2 t - t + 1) + n - r; depth r - 1 + log2 t + 1.
    """
    T, B, w = t.shape
    r = min(items, B)
    runs = t.reshape(T, B // r, r, w)
    for i in range(1, r):                 # phase 1: registers, no barrier
        ufunc(runs[:, :, i - 1], runs[:, :, i], out=runs[:, :, i])
    totals = runs[:, :, -1].copy()        # each thread publishes its run total
    sync()
    totals, aggregate = _kogge_stone_double_buffer_tile(totals, ufunc, identity, sync)  # phase 2
    ufunc(totals[:, :-1, None], runs[:, 1:], out=runs[:, 1:])                            # phase 3
    return t, aggregate


TILE_SCANS = {
    "kogge_stone": _kogge_stone_tile,
    "kogge_stone_double_buffer": _kogge_stone_double_buffer_tile,
    "brent_kung": _brent_kung_tile,
    "blelloch": _blelloch_tile,
    "blelloch_exclusive": _blelloch_exclusive_tile,
    "coarsened": _coarsened_tile,
}


def _is_exclusive(tile_scan) -> bool:
    return getattr(tile_scan, "exclusive", False)


def _tiles(x, identity, block):
    """x (n, w) -> (T, B, w), padded with the identity; B = min(block, next power of two >= n)."""
    _check_block(block)
    n, w = x.shape
    B = min(block, 1 << max(n - 1, 0).bit_length())
    T = max(1, -(-n // B))
    t = np.full((T * B, w), identity, dtype=x.dtype)
    t[:n] = x
    return t.reshape(T, B, w)


def _scan_tiles(x, ufunc, identity, block, tile_scan, prefixes):
    """Scan every tile, get each tile's exclusive prefix from ``prefixes(aggregates)``, fold it in."""
    n, w = x.shape
    if n == 0:
        return np.empty((0, w), x.dtype)
    scanned, aggregates = tile_scan(_tiles(x, identity, block), ufunc, identity)
    if scanned.shape[0] > 1:
        before = prefixes(np.ascontiguousarray(aggregates))          # (T, w)
        ufunc(before[1:, None, :], scanned[1:], out=scanned[1:])     # tile 0 has nothing before it
    return scanned.reshape(-1, w)[:n].copy()


def _tile_scan(tile_scan):
    if tile_scan is None:
        return TILE_SCANS[DEFAULT_TILE]
    if isinstance(tile_scan, str):
        return TILE_SCANS[tile_scan]
    return tile_scan


def _domino_prefixes(aggregates, ufunc, identity):
    """Adjacent synchronisation: tile i waits for tile i-1's inclusive prefix, publishes its own.

        agg:      a0      a1      a2      a3
        prefix:   e ----> p0 ---> p1 ---> p2 ---> p3      p_i = p_{i-1} op a_i  (one hop per tile)
    """
    before = np.empty_like(aggregates)
    carry = np.full(aggregates.shape[1:], identity, aggregates.dtype)
    for i in range(aggregates.shape[0]):      # a serial chain: T hops
        before[i] = carry                     # wait for tile i-1's flag, read its inclusive prefix
        carry = ufunc(carry, aggregates[i])   # publish tile i's inclusive prefix
    return before


def _tree(v, ufunc):
    """Reduce axis -2 (a power of two of lanes) with a fixed tree, in order:
    level m = 1, 2, 4, ...: lane pairs (2k, 2k+1) -> x[2k] op x[2k+1], lower lane on the left.

        lanes:  a0  a1  a2  a3  a4  a5  a6  a7
        m=1:    a01     a23     a45     a67
        m=2:    a0123           a4567
        m=4:    a01234567

    A shfl_xor butterfly with m ascending and the lower lane's value on the left computes the
    same tree (and ranges stay contiguous, so it is right for non-commutative operators too).
    """
    while v.shape[-2] > 1:
        v = ufunc(v[..., 0::2, :], v[..., 1::2, :])
    return v[..., 0, :]


def _lookback_prefixes(aggregates, ufunc, identity, window=WINDOW):
    """Decoupled look-back over aligned windows, as ``tile_lookback`` in kernels/tile/tile_state.cuh.

    Tile t = g*WINDOW + s*32 + j (window g, sub-window s, lane j):

        phase 1  in_sub(t)    = tree of agg(tile) for the j tiles before t in its sub-window
                 subagg(g, s) = in_sub(last tile of s) op agg(last tile of s)
        phase 2  before_sub   = tree of subagg(g, 0..s-1)
                 exclusive(t) = (anchor(g-1) op before_sub) op in_sub(t)
                 anchor(g)    = anchor(g-1) op W(g),  W(g) = tree of subagg(g, 0..31)

        window 0                          window 1
        [a0 a1 .. a31][a32 .. a63] ..     [ ...             ]
         \\__in_sub__/  \\__in_sub__/         anchor(0) --------> (one serial hop per window)
              subagg(0,0) -> before_sub(0,1)

    Each tile reads 32 lanes twice (trees of fixed shape, so the association depends on t
    only); the only serial chain is one anchor hop per window, which the lead and look-ahead
    kernels publish long before any scan needs it.
    """
    if window % SUB_WINDOW or not SUB_WINDOW <= window <= SUB_WINDOW * SUB_WINDOW:
        raise ValueError(f"window must be 32 * (1..32) tiles, not {window}")
    T, w = aggregates.shape
    L, subs = SUB_WINDOW, window // SUB_WINDOW
    S = -(-T // L)                # sub-windows (the last one padded with the identity)
    G = -(-S // subs)             # windows
    dt, ident = aggregates.dtype, np.asarray(identity, aggregates.dtype)
    a = np.full((S * L, w), identity, dt)
    a[:T] = aggregates
    a = a.reshape(S, L, w)
    lane_before = np.arange(L)[None, :] < np.arange(L)[:, None]       # [j, l]: lane l < j
    # phase 1: tile j of a sub-window reads lanes l < j (the aggregates before it), one tree per tile
    in_sub = _tree(np.where(lane_before[:, :, None], a[:, None, :, :], ident), ufunc)     # (S, L, w)
    subagg = np.full((G * subs, w), identity, dt)
    subagg[:S] = ufunc(in_sub[:, -1], a[:, -1])                                            # (S, w)
    # phase 2: sub-window s reads the totals of sub-windows l < s of its window (32 lanes).
    # The GPU computes this tree in every tile's warp; all tiles of a sub-window get the
    # same value, so the CPU computes it once per sub-window.
    lanes = np.full((G, L, w), identity, dt)
    lanes[:, :subs] = subagg.reshape(G, subs, w)
    before_sub = _tree(np.where(lane_before[:subs, :, None], lanes[:, None, :, :], ident), ufunc)
    before_sub = before_sub.reshape(G * subs, w)[:S]                                       # (S, w)
    window_total = _tree(lanes, ufunc)                                                      # (G, w)
    # anchors: the only serial chain, one hop per window
    anchor_of_sub = np.empty((S, w), dt)
    anchor = np.full(w, identity, dt)
    for g in range(G):
        first, last = g * subs, min((g + 1) * subs, S) - 1
        anchor_of_sub[first:last + 1] = anchor
        anchor = ufunc(anchor, window_total[g])   # anchor(g) = anchor(g-1) op W(g)
    # exclusive(t) = (anchor(g-1) op before_sub(s)) op in_sub(t)
    exclusive = ufunc(ufunc(anchor_of_sub, before_sub)[:, None, :], in_sub)
    return exclusive.reshape(S * L, w)[:T]


def lookback(x, ufunc, identity, *, block=1024, tile_scan=None, window=WINDOW) -> np.ndarray:
    """Single pass with decoupled look-back (the device-level default): scan each tile, then
    its exclusive prefix is combined from the aggregates of the tiles before it, in aligned
    windows of ``window`` tiles (32 * (1..32)), as ``kernels/tile/tile_state.cuh`` does.
    ``tile_scan`` (a name of :data:`TILE_SCANS` or a function) scans inside a tile."""
    ts = _tile_scan(tile_scan)
    return _scan_tiles(x, ufunc, identity, block, ts,
                       lambda agg: _lookback_prefixes(agg, ufunc, identity, window))


def lookahead(x, ufunc, identity, *, block=1024, tile_scan=None, window=WINDOW) -> np.ndarray:
    """Single pass with persistent blocks that keep each tile in shared memory from its
    reduction to its scan (kernels/agent_lookahead.cuh):

        block b, iteration k:  reduce tile t_k (landed in its stage), publish its aggregate
                               scan tile t_{k-DEPTH} again from its stage, add its prefix
                               (every tile before it was reduced rounds ago), store it
                               start loading tile t_{k+STAGES-DEPTH} into the freed stage

    Tiles are combined exactly as :func:`lookback` combines them (the same status words and
    fixed trees), so every result is bitwise the look-back's at the same tile shape; what
    changes is *when* a GPU block waits (almost never) and that each tile is read from memory
    once.  A sequential CPU has no latency to hide, so here the data flow is the look-back's,
    and so are its counts (:func:`count_device`)."""
    return lookback(x, ufunc, identity, block=block, tile_scan=tile_scan, window=window)


def domino(x, ufunc, identity, *, block=1024, tile_scan=None) -> np.ndarray:
    """Single pass with adjacent synchronisation: tile i waits for tile i-1's inclusive prefix
    (tile order from an atomic counter on the GPU, so no deadlock): a serial chain of T hops."""
    ts = _tile_scan(tile_scan)
    return _scan_tiles(x, ufunc, identity, block, ts, lambda agg: _domino_prefixes(agg, ufunc, identity))


def hierarchical(x, ufunc, identity, *, block=1024, tile_scan=None) -> np.ndarray:
    """Multi-kernel scan-then-propagate:

        kernel 1: scan each tile, write its total      [t0 t1 t2 t3] -> totals a0 a1 a2 a3
        kernel 2: scan the totals (this function, recursively: any length; one tile ends it)
        kernel 3: fold each tile's prefix into it       tile i op= (a0 op ... op a_{i-1})

    2 * ceil(log_B n) - 1 launches for n > 1 rows, each a grid-wide barrier.
    """
    ts = _tile_scan(tile_scan)

    def prefixes(agg):
        scanned = hierarchical(agg, ufunc, identity, block=block, tile_scan=ts)
        if _is_exclusive(ts):
            return scanned
        before = np.empty_like(scanned)
        before[0] = identity
        before[1:] = scanned[:-1]
        return before

    return _scan_tiles(x, ufunc, identity, block, ts, prefixes)


def kogge_stone(x, ufunc, identity, *, block=1024) -> np.ndarray:
    """Kogge-Stone (Hillis-Steele) inside each tile, in place; tiles combined by look-back."""
    return lookback(x, ufunc, identity, block=block, tile_scan=_kogge_stone_tile)


def kogge_stone_double_buffer(x, ufunc, identity, *, block=1024) -> np.ndarray:
    """Kogge-Stone inside each tile, double-buffered (one barrier a step); tiles by look-back."""
    return lookback(x, ufunc, identity, block=block, tile_scan=_kogge_stone_double_buffer_tile)


def brent_kung(x, ufunc, identity, *, block=1024) -> np.ndarray:
    """Brent-Kung (up-sweep, down-sweep) inside each tile; tiles combined by look-back."""
    return lookback(x, ufunc, identity, block=block, tile_scan=_brent_kung_tile)


def blelloch_exclusive(x, ufunc, identity, *, block=1024) -> np.ndarray:
    """The EXCLUSIVE scan (out[0] = identity): Blelloch inside each tile, tiles by look-back."""
    return lookback(x, ufunc, identity, block=block, tile_scan=_blelloch_exclusive_tile)


def blelloch(x, ufunc, identity, *, block=1024) -> np.ndarray:
    """Blelloch's inclusive scan, derived from its exclusive one: inclusive[i] = exclusive[i] op x[i]."""
    excl = blelloch_exclusive(x, ufunc, identity, block=block)
    return ufunc(excl, x, out=excl)


def coarsened(x, ufunc, identity, *, block=1024, items=ITEMS) -> np.ndarray:
    """Thread-coarsened scan inside each tile (runs of ``items`` rows per thread); tiles by look-back."""
    return lookback(x, ufunc, identity, block=block,
                    tile_scan=lambda t, f, e, sync=_nothing: _coarsened_tile(t, f, e, sync, items))
