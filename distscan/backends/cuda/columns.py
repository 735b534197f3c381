"""The scan of each column of C-contiguous ``(n, w)`` rows, ``w >= 2``: three kernels whose
passes over the rows are coalesced (``kernels/agent/agent_columns.cuh``): each tile's fold per
column, the exclusive scan of each column's tile folds from its seed, each tile again from its
prefixes.  The bytes move three times (read, read, write).

Until 2026-11-28 up to 32 columns (and more with at least 32 rows a column) were transposed into
a contiguous copy, scanned a column at a time by the 1-D kernel and copied back (six passes; 1.15
to 1.9 ms for 2^27 float32 items as 2 to 64 columns on an H200, where one column of the same
bytes takes 0.28 ms), and wider arrays went through a kernel whose thread walked a column's rows
in sequence (~350 ns a row: 32 ms for 1024 columns of 131,072 rows, CuPy 7 ms).

Assumptions: ``x`` and ``out`` are C-contiguous on the current device and stream (the caller's
``general._scan`` makes them so); the seeds are the kernels' accumulators on the host, passed by
value in the carry kernel's arguments (a group of CARRY_SEED_COLUMNS columns a launch), so that
nothing is copied from the host before a launch and a CUDA graph may capture a seeded scan;
nothing is kept between calls but the compiled kernels, and the tile folds of a scan recorded
into a caller's graph (``scratch.keep_for_capture``: its replays write them).
"""

from __future__ import annotations

import ctypes
import math

import numpy as np

from .device import cp, is_capturing
from .launch import ArgBlock
from .scratch import keep_for_capture

# kernels/agent/agent_columns.cuh
COLUMN_TILE_THREADS = 256
CARRY_THREADS = 1024
CARRY_SEED_COLUMNS = 64
_MAX_SLABS = 65535  # grid.y
# Past this many tiles the tile folds are themselves scanned as rows of w columns (the carry
# kernel's threads take a share of the tiles each, in sequence: latency-bound, 0.06 ms for 35,000
# tiles of 2 float32 columns on an H200, and strided: 0.39 ms for 35,000 tiles of 256 columns).
CARRY_TILES = 2 * CARRY_THREADS
# Rows a thread folds in sequence, by accumulator size: odd (the lanes of a warp then read
# different banks), a tile's shared memory of 16-32 KB.  H200, 2^27 items (exp20,
# benchmarks/logs/2026-11-28-s49): float32 runs of 15, 23, 31 within 3 % of each other from 2 to
# 256 columns (31 slower at 4096); float64 runs of 13 2-12 % faster than 9.  States of other sizes
# (the extended module's: 3 to 48 bytes) take the longest odd run up to 15 whose tile fits in
# _STATE_TILE_BYTES (not measured apart), and at least MIN_RUN.
RUNS = {1: 15, 2: 15, 4: 15, 8: 13, 16: 5}
_STATE_TILE_BYTES = 40 * 1024
# Past 128 columns a tile is one run a column: a run of 1 row would give each row a tile, so the
# tile folds scanned again as rows (past CARRY_TILES) would be as many as the rows, level after
# level, without end (48-byte states, the segmented complex128 recurrence, took 1 until
# 2026-11-28).  A run of 3 keeps a tile of the largest state (48 bytes) within 48 KB.
MIN_RUN = 3
_TILE_LIMIT = 48 * 1024  # a launch's dynamic shared memory without an opt-in


def run_length(acc_size: int) -> int:
    run = RUNS.get(acc_size)
    if run is None:
        run = min(15, _STATE_TILE_BYTES // (COLUMN_TILE_THREADS * acc_size) - 1)
        run = max(MIN_RUN, run - (run + 1) % 2)  # odd
    return run


def _runs(w: int) -> int:
    """Runs a column in a tile: COLUMN_TILE_THREADS threads share a slab's columns, a run each."""
    return COLUMN_TILE_THREADS // min(w, COLUMN_TILE_THREADS)


def tile_rows(w: int, acc_size: int) -> int:
    """Rows of a tile."""
    return _runs(w) * run_length(acc_size)


def error_depth(n: int, w: int, acc_size: int) -> int:
    """``L`` of the sums' accuracy bound (``backends/cuda/__init__``) for ``(n, w)`` rows: at each
    level of tiles the run, the Kogge-Stone over a tile's runs and the prefix's two applications;
    at the last the carry thread's share and the carry block's Kogge-Stone."""
    depth, count = 0, max(n, 1)
    while True:
        depth += run_length(acc_size) + math.ceil(math.log2(_runs(w))) + 2
        count = -(-count // tile_rows(w, acc_size))
        if count <= CARRY_TILES:
            return depth + -(-count // CARRY_THREADS) + int(math.log2(CARRY_THREADS))


def _geometry(n: int, w: int, size: int):
    """(run, tiles, slabs, dynamic shared memory) of the tile kernels for (n, w) rows of
    accumulators of ``size`` bytes."""
    run, rows = run_length(size), tile_rows(w, size)
    tiles, slabs = -(-n // rows), -(-w // COLUMN_TILE_THREADS)
    if tiles > (1 << 31) - 1 or slabs > _MAX_SLABS:
        raise ValueError(f"({n}, {w}) rows need more blocks than one kernel launch has")
    smem = (COLUMN_TILE_THREADS + rows * min(w, COLUMN_TILE_THREADS)) * size
    if rows < 2 or smem > _TILE_LIMIT:  # (no state of the extended module's: each level must shrink)
        raise ValueError(f"no column tile for {size}-byte states: {rows} rows, {smem} bytes")
    return run, tiles, slabs, smem


def scan_columns(plan, x, out, exclusive: bool, seeds, d_total, stream_ptr: int, acc_plan) -> None:
    """``out`` = the scan of each column of ``x``, both C-contiguous ``(n, w)``, ``n >= 1``, ``w >= 2``
    (``out`` may be ``x``: a block writes only the tile it has read).

    ``seeds``: ``w`` of the plan's accumulators (``plan.kacc``) on the host, folded in before each
    column's first row, or None; ``d_total``: ``w`` of them on the device, which get the seed and
    every row folded, or None.  ``acc_plan()``: the plan of a scan from accumulators to
    accumulators with the same operator, for the tile folds of many tiles."""
    n, w = x.shape
    size = plan.kacc.itemsize
    run, tiles, slabs, smem = _geometry(n, w, size)
    agg = cp.empty((tiles, w), plan.kacc)  # each tile's fold per column, then its prefix
    if is_capturing(stream_ptr):  # a caller's graph replays the kernels on it after this call
        keep_for_capture(agg)
    tile_args = (np.int64(n), np.int64(w), np.int32(run))
    plan.funcs["tiles_reduce"]((tiles, slabs), (COLUMN_TILE_THREADS,), (x,) + tile_args + (agg,), shared_mem=smem)
    if tiles > CARRY_TILES:
        scan_columns(acc_plan(), agg, agg, True, seeds, d_total, stream_ptr, acc_plan)
    else:
        _carry(plan.funcs["tiles_carry"], size, agg, tiles, w, seeds, d_total, stream_ptr)
    plan.funcs["tiles_excl" if exclusive else "tiles_incl"](
        (tiles, slabs), (COLUMN_TILE_THREADS,), (x, out) + tile_args + (agg,), shared_mem=smem)


def scan_state_columns(funcs, size: int, x, out, n: int, w: int, exclusive: bool, seeds, d_total, *, flags=None,
                       coef=None, params=None, stream_ptr: int, lifted: bool = False) -> None:
    """The extended module's columns scan (``compile.COLUMN_ROLES``: reverse scans, state
    operators): ``out`` = the scan of each of the ``w`` columns of ``x``, both C-contiguous rows of
    ``n >= 1`` (the module's direction: a reverse module scans from the last row up), or only
    ``d_total`` where ``out`` is None (a part's carry).

    ``size``: the bytes of the module's accumulator (a state's C struct).  ``seeds``: ``w`` of them
    on the host (a NumPy array of the kernels' state dtype), or None; ``d_total``: a device array
    of ``w`` of them, or None.  ``flags``: ``(n,)`` bytes, ``coef``: ``(n, w)`` coefficients (a
    module of one coefficient row, ``ModuleKey.coef_one``: their ``(w,)`` row),
    ``params``: ``w`` states on the device (the call's initial, projected), each or None.
    ``lifted``: ``x`` and ``out`` are the accumulators themselves (the tile folds of many tiles,
    scanned again as rows: forward, exclusive, in place)."""
    run, tiles, slabs, smem = _geometry(n, w, size)
    agg = cp.empty((tiles, w * size), np.uint8)  # each tile's fold per column, then its prefix
    grid, block = (tiles, slabs), (COLUMN_TILE_THREADS,)
    null = np.uint64(0)
    shape = (np.int64(n), np.int64(w), np.int32(run))
    reduce, scan = (("lifted_reduce", "lifted_excl") if lifted
                    else ("cols_reduce", "cols_excl" if exclusive else "cols_incl"))
    aux = (null if flags is None else flags, null if coef is None else coef)
    funcs[reduce](grid, block, (x,) + shape + (agg,) + aux, shared_mem=smem)
    if tiles > CARRY_TILES:
        scan_state_columns(funcs, size, agg, agg, tiles, w, True, seeds, d_total, stream_ptr=stream_ptr,
                           lifted=True)
    else:
        _carry(funcs["cols_carry"], size, agg, tiles, w, seeds, d_total, stream_ptr)
    if out is not None:
        funcs[scan](grid, block, (x, out) + shape + (agg,) + aux + (null if params is None else params,),
                    shared_mem=smem)


def _carry(fn, size: int, agg, tiles: int, w: int, seeds, d_total, stream_ptr: int) -> None:
    """carry_column_tiles_kernel (``fn``) over every column: one launch, or one a group of
    CARRY_SEED_COLUMNS columns when seeded (the seeds go by value: CuPy's launch cannot pass the
    struct, hence the driver's, as ``extended.ExtCall``)."""
    seed_bytes = CARRY_SEED_COLUMNS * size
    u64, i64, i32 = ctypes.c_uint64, ctypes.c_int64, ctypes.c_int32
    args = ArgBlock(u64, i64, i64, i64, seed_bytes, i32, u64)
    group = w if seeds is None else CARRY_SEED_COLUMNS
    for c0 in range(0, w, group):
        columns = min(group, w - c0)
        v = args.values
        v[0].value, v[1].value, v[2].value, v[3].value = agg.data.ptr, tiles, w, c0
        v[5].value, v[6].value = seeds is not None, 0 if d_total is None else d_total.data.ptr
        if seeds is not None:
            v[4].raw = np.ascontiguousarray(seeds[c0:c0 + columns]).tobytes().ljust(seed_bytes, b"\0")
        cp.cuda.driver.launchKernel(fn.kernel.ptr, columns, 1, 1, CARRY_THREADS, 1, 1, 0, stream_ptr, args.ptr, 0)
