"""What a kernel module is instantiated for, besides its types and operator: the ``algorithm=``
names the kernels implement, the dtype they accumulate in, and the tile shape (:class:`Tuning`,
chosen by :func:`choose_tuning` from the item and state sizes, as measured)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def kernel_acc_dtype(acc) -> np.dtype:
    """The dtype the kernels accumulate in for accumulator dtype ``acc``.

    float16 is a storage type only: float16 data is combined in float32 (for
    max/min this gives the same float16 values; for sum/prod float32 *is* the
    accumulator dtype, see ``distscan._dtypes``).
    """
    acc = np.dtype(acc)
    return np.dtype(np.float32) if acc == np.float16 else acc


@dataclass(frozen=True)
class Tuning:
    """Tile shape of the scan kernel (``scan_tiles_kernel``'s policy: ``TilePolicy``, and for the
    look-ahead ``LookaheadPolicy``, in kernels/agent/agent_policy.cuh)."""

    block_threads: int
    items: int
    window: int
    min_blocks: int
    stages: int = 7  # "lookahead": shared-memory stages per block
    depth: int = 5   # "lookahead": tiles a block reduces ahead of its scan (stages - depth loads in flight)
    behind: int = 2  # "lookahead": iterations from a tile's reduction to its window words (BEHIND, agent_lookahead.cuh)

    @property
    def tile_items(self) -> int:
        return self.block_threads * self.items

    def launch_threads(self, device: str) -> int:
        """Threads per block of the scan kernel: the look-ahead one adds its service warp
        (LOOKAHEAD_SERVICE_THREADS in kernels/agent/agent_policy.cuh)."""
        return self.block_threads + (32 if device == "lookahead" else 0)

    def lookahead_smem(self, in_dtype, out_dtype, aux: tuple = ()) -> int:
        """Dynamic shared memory of the look-ahead kernel (AgentLookahead::SMEM_BYTES); ``aux``: the
        bytes per item of the auxiliary inputs its ring stages beside the items (flags,
        coefficients: ``extended.staged_aux``)."""
        stride = max(_lane_stride(np.dtype(in_dtype).itemsize, self.items, swizzle=True),
                     _lane_stride(np.dtype(out_dtype).itemsize, self.items, swizzle=True))
        stride += sum(_lane_stride(size, self.items, swizzle=True) for size in aux)
        return self.stages * (self.block_threads // 32) * 32 * stride


# The `algorithm=` names the kernels implement, each with its C++ enumerator: block-level names
# pick the scan inside a tile (BlockAlgorithm, kernels/block/block_scan.cuh), device-level names
# how tiles learn what came before them (DeviceAlgorithm, kernels/agent/agent_scan.cuh).  Each
# level keeps its default when the other is named.
BLOCK_ALGORITHMS = {
    "coarsened": "distscan::BLOCK_COARSENED",
    "kogge_stone": "distscan::BLOCK_KOGGE_STONE",
    "kogge_stone_double_buffer": "distscan::BLOCK_KOGGE_STONE_DOUBLE_BUFFER",
    "brent_kung": "distscan::BLOCK_BRENT_KUNG",
    "blelloch": "distscan::BLOCK_BLELLOCH",
}
DEVICE_ALGORITHMS = {
    "lookback": "distscan::DEVICE_LOOKBACK",
    "domino": "distscan::DEVICE_DOMINO",
    "hierarchical": "distscan::DEVICE_TILES",
    "lookahead": "distscan::DEVICE_LOOKAHEAD",
}
# The device level unless one is named: look-back ("auto" switches to the look-ahead kernel for
# large arrays: distscan/backends/cuda/plans.py, uses_lookahead).
DEFAULT_DEVICE = "lookback"


def kernel_algorithm(name: str) -> tuple:
    """``(block, device)`` names of the kernels for an ``algorithm=`` name (``auto``: the defaults)."""
    if name in BLOCK_ALGORITHMS:
        return name, DEFAULT_DEVICE
    if name in DEVICE_ALGORITHMS:
        return "coarsened", name
    if name == "auto":
        return "coarsened", DEFAULT_DEVICE
    raise ValueError(f"the CUDA kernels do not implement algorithm {name!r}")


def _block_temp_bytes(block: str, threads: int, acc_size: int) -> int:
    """Shared memory of a block scan's TempStorage (kernels/block/block_scan_*.cuh)."""
    return {"coarsened": threads // 32, "kogge_stone_double_buffer": 2 * threads, "blelloch": threads + 1}.get(
        block, threads) * acc_size


def _lane_stride(itemsize: int, items: int, swizzle: bool = False) -> int:
    """Shared-memory bytes per lane of a staged segment (WarpTileIO::STRIDE in kernels/tile/tile_io.cuh;
    ``swizzle``: the look-ahead kernel's unpadded stages)."""
    lane = items * itemsize
    vecs = lane // 16
    if swizzle and vecs & (vecs - 1) == 0:
        return lane
    return lane + (16 if vecs % 2 == 0 else 0)


def choose_tuning(in_dtype, acc_dtype, out_dtype, override=None, block: str = "coarsened",
                  device: str = DEFAULT_DEVICE, state: str = "") -> Tuning:
    """Tile shape for one combination of item sizes (``state``: the state kind of a state
    operator, distscan.ops.state; "" for values).

    ``override`` (a ``Tuning`` or a tuple) replaces the choice; its ITEMS is still
    raised, if needed, so that ITEMS*itemsize is a multiple of 16 bytes.
    """
    s_in, s_acc, s_out = np.dtype(in_dtype).itemsize, kernel_acc_dtype(acc_dtype).itemsize, np.dtype(out_dtype).itemsize
    stages, depth, behind = Tuning.stages, Tuning.depth, Tuning.behind
    if override is not None:
        t = Tuning(*override) if not isinstance(override, Tuning) else override
        threads, items, window, min_blocks, stages, depth, behind = (t.block_threads, t.items, t.window, t.min_blocks,
                                                                     t.stages, t.depth, t.behind)
        behind = min(behind, depth)  # an override's depth below the default publication distance
    elif device == "lookahead" and state.split("_")[0] in ("segmented", "affine"):
        # flags and coefficients staged in the ring beside the items (kernels/agent/agent_lookahead.cuh):
        # runs of 16 items (the flags' 16-byte vectors), fewer stages than the plain sums' so
        # that two blocks' rings fit an SM with the coefficients in them.  16-byte states in
        # 64-thread blocks, two an SM: against (128, 16, 1 block, 5 stages, depth 3), on the H100
        # at 2^27, the float64 recurrence 0.914 of copy against 0.720, segmented int64 0.869
        # against 0.826, the complex64 recurrence 0.330 against 0.342 (RESULTS.md, "Each thread's
        # run scanned again from the stage"); the others (the 12-byte segmented float32 maps: 0.499
        # against 0.538, and larger states) one block of 128 an SM; of 3 stages for the complex128
        # maps, whose 16-byte items and coefficients took a ring of 5 to 330 KB (an H100 gives a
        # block 227; 198 KB; not timed: "auto" runs them on the look-back, plans.aux_looks_ahead)
        # Three blocks an SM for the segmented states of up to 8 bytes: their inclusive kernels fit
        # three (115-120 registers) where two were asked for; the exclusive float32 sum and product
        # took 139, which fits two, and the exclusive sum ran 0.82x the inclusive's speed (the
        # product was not timed; H200, 2^27, benchmarks/RESULTS.md, "Exclusive segmented scans").
        # The loss is the occupancy, not the grid: blocks claim tiles in order, so blocks beyond
        # the SMs' room only start late and find none left.  Capped for three they take 114, no
        # spill.  The float32 maps stay at two: three would cap them at 136 (they take 168).
        window, items = 1024, 16
        if s_acc <= 8:
            threads, min_blocks, stages, depth = 128, (3 if state.startswith("segmented") else 2), 6, 4
        elif s_acc == 16:
            threads, min_blocks, stages, depth = 64, 2, 6, 4
        elif state.startswith("affine") and max(s_in, s_out) > 8:  # (RESCAN: 2 stages' loads in flight)
            threads, min_blocks, stages, depth, behind = 128, 1, 3, 1, 1
        else:
            threads, min_blocks, stages, depth = 128, 1, 5, 3
    elif device == "lookahead":  # persistent blocks, shared memory for STAGES tiles each
        window = 1024
        if max(s_in, s_acc, s_out) <= 4:
            # 64 threads x 32 items, 3 blocks/SM, 9 stages of 8 KB, depth 7: against the 16 KB
            # tiles below, 0.987-0.995 of copy against 0.932-0.952 on the H100 and 0.898-0.916
            # against 0.888-0.909 on the H200, 4-byte sums at 2^27-2^29 (benchmarks/RESULTS.md,
            # "Issue 10, eighth pass"); items of 8 or 16 bytes would not fit 9 stages
            threads, items, min_blocks, stages, depth = 64, 32, 3, 9, 7
        else:
            # (128, 32 | 16 | 8 items by the accumulator's size, 2 blocks/SM, 7 stages, depth 5):
            # for 8-byte items the best of 8 shapes on the H200 ("fifth pass") and of 7 on the
            # H100 ("seventh pass"); two blocks' 7 unpadded stages of 16 KB fill an SM's 228 KB
            threads, items, min_blocks = 128, (32 if s_acc <= 4 else 16 if s_acc <= 8 else 8), 2
    elif state.split("_")[0] in ("segmented", "affine") and s_acc <= 16:
        # Scans with flags or coefficients (the look-back; kernels/tile/tile_agent.cuh's load_aux):
        # 128-thread blocks, more of them per SM.  Measured on the H200 at 2^27
        # (benchmarks/sweep_state_tiles.py; RESULTS.md, "State scans' tiles"), as a ratio to
        # copy against (256, 16, 3) | (256, 8, 1), the value sizes' shapes: segmented float32
        # 0.75 against 0.59, recurrence float32 0.67 against 0.57 (the best of 6 shapes each, 32
        # items for segments, 16 for the maps' two products per combine), and for 16-byte
        # states segmented int64 0.69 against 0.41, recurrence float64 0.57 against 0.47.
        # 32 items for the 16-byte segmented states and the 12-byte segmented maps (AffStartsState<float>,
        # AffEndsState<float>, no lead: extended._lead_share), measured at 2^27 against (128, 16, 2)
        # (RESULTS.md, "Segmented recurrences and 16-byte segmented sums: 32 items"): segmented int64
        # (128, 32, 3) 1.05x on the H200, 1.07x on the H100; the segmented recurrence float32
        # (128, 32, 2) without a lead 1.32x | 1.21x forwards, 1.28x | 1.20x reversed; the 16-byte maps
        # (float64, complex64) lose 3-10 % with 32 items.
        window = 1024
        segmented = state.startswith("segmented")
        if s_acc <= 8:
            threads, items, min_blocks = (128, 32, 4) if segmented else (128, 16, 6)
        elif segmented:
            threads, items, min_blocks = 128, 32, 3
        elif s_acc <= 12:
            threads, items, min_blocks = 128, 32, 2
        else:
            threads, items, min_blocks = 128, 16, 2
    elif state.split("_")[0] == "segmented" and s_acc <= 32:
        # The segmented complex128 values (SegState of 32 bytes; H200, 2^27, of copy; RESULTS.md,
        # "Segmented complex128 tiles"): 64 x 32, 2 blocks an SM, 0.721 against the fallback
        # (256, 8, 1)'s 0.334; 64 x 16 (3 or 4 blocks) 0.590, 128 x 16 0.564, 128 x 8 0.503.
        window, threads, items, min_blocks = 1024, 64, 32, 2
    elif state.startswith("affine") and s_acc <= 48:
        # Maps over 16 bytes (H200, 2^27, of copy; RESULTS.md, "Linear recurrences of states over 16 bytes"):
        # segmented float64 and complex64 (24 bytes) 128 x 32: 0.575 and 0.510 against the fallback (256, 8,
        # 1)'s 0.254 and 0.230 (reversed 0.467 against 0.356); complex128 (32 bytes) 128 x 16: 0.611 against 0.415;
        # segmented complex128 (48 bytes; "Segmented complex128 tiles") 128 x 16: 0.379 against 0.323
        # (64 x 16 0.366, 128 x 8 0.306, 64 x 32 0.245).
        window, min_blocks = 1024, 2
        threads, items = (128, 16) if state == "affine" or s_acc > 32 else (128, 32)
    elif state == "compensated" and s_acc <= 16:
        # The compensated sum (its runs in the run state, Neumaier's: kernels/util/states.cuh) on
        # the look-back, as "auto" runs it (plans.ext_device): 128 threads of 32 items, 4 blocks an
        # SM.  Measured on the H200 at 2^27 (benchmarks/sweep_costly_tiles.py; RESULTS.md, "Run
        # states"), time over the plain cumsum's of the dtype: float32 1.25 against 1.69 with the
        # 8-byte values' (256, 16, 3) and 1.58 with the look-ahead; float64 1.45 (no lead) against
        # 3.27 with (256, 8, 1) and 2.30 with the look-ahead (the best of 10 shapes each).
        window, threads, items, min_blocks = 1024, 128, 32, 4
    else:
        window = 1024
        if s_acc <= 4:  # 8192-item tiles: measured 2490 GB/s vs 2120 with 4096 (H100, 2^29 int32)
            threads, items, min_blocks = 256, 32, 4
        elif s_acc <= 8:
            threads, items, min_blocks = 256, 16, 3
        else:
            threads, items, min_blocks = 256, 8, 1
    items = max(items, 16 // min(s_in, s_out))
    # static shared memory (< 48 KB): one padded lane stride per thread (input or output, the
    # larger), and the block scan's own storage
    while threads > 64 and (threads * max(_lane_stride(s_in, items), _lane_stride(s_out, items))
                            + _block_temp_bytes(block, threads, s_acc)) > 46 * 1024:
        threads //= 2
    return Tuning(threads, items, window, min_blocks, stages, depth, behind)
