// distscan/kernels/tile/tile_agent.cuh -- what the two tile-consuming agents (agent_scan.cuh,
// agent_lookahead.cuh) share: the types of a tile of the policy's shape (its I/O, its block
// scan), where a warp's segment of a tile lies, reading a staged segment into the accumulator
// type, and folding a tile's prefix into its scanned items on the way out.
#pragma once
#include "../block/block_scan.cuh"
#include "tile_io.cuh"

namespace distscan {

// Policy: the tile shape, a TilePolicy or a LookaheadPolicy (agent_policy.cuh).  The agents
// derive from TileAgent as `Tile` and name its types (Tile::InIO, Tile::BScan, ...) and the
// shape (Policy::WARPS, Policy::TILE_ITEMS, ...) there: one definition of each for both.
template <typename TIn, typename TAcc, typename TOut, typename Op, bool EXCLUSIVE, typename Policy,
          bool SWIZZLE = false>
struct TileAgent {
    static constexpr int ITEMS = Policy::ITEMS;
    typedef WarpTileIO<TIn, ITEMS, SWIZZLE> InIO;  // SWIZZLE: tile_io.cuh
    typedef WarpTileIO<TOut, ITEMS, SWIZZLE> OutIO;
    typedef typename BlockScanFor<Policy::BLOCK_ALGO, TAcc, Op, Policy::BLOCK_THREADS>::type BScan;
    // one warp's shared-memory slice: its segment, staged in or out
    static constexpr int IO_BYTES = InIO::WARP_BYTES > OutIO::WARP_BYTES ? InIO::WARP_BYTES : OutIO::WARP_BYTES;

    // Where the calling warp's segment of `tile` starts, and how many of its items exist.
    static __device__ __forceinline__ i64 segment(i64 n, i64 tile, int warp, int &valid) {
        const i64 seg_base = tile * (i64)Policy::TILE_ITEMS + (i64)warp * (32 * ITEMS);  // 64-bit: N > 2^31
        const i64 rem = n - seg_base;
        valid = rem <= 0 ? 0 : (rem >= 32 * ITEMS ? 32 * ITEMS : (int)rem);
        return seg_base;
    }

    // The lane's ITEMS items of a staged segment, in the accumulator type (the identity past
    // the `valid` items that exist).
    static __device__ __forceinline__ void staged_items(const char *smem, int lane, int valid, TAcc (&items)[ITEMS]) {
        TIn raw[ITEMS];
        InIO::smem_to_regs(smem, lane, raw);
#pragma unroll
        for (int i = 0; i < ITEMS; ++i)
            items[i] = (lane * ITEMS + i < valid) ? Convert<TAcc, TIn>::apply(raw[i]) : Op::template identity<TAcc>();
    }

    // Fold `prefix` (the tile's and the thread's) into the scanned items and store them
    // through the warp's slice, which must be free (every lane past reading its input).
    static __device__ __forceinline__ void store(TOut *d_out, i64 n, i64 tile, bool vector_ok, char *smem, int warp,
                                                 int lane, TAcc prefix, const TAcc (&items)[ITEMS]) {
        int valid;
        const i64 seg_base = segment(n, tile, warp, valid);
        TOut out[ITEMS];
#pragma unroll
        for (int i = 0; i < ITEMS; ++i) {
            TAcc v;
            if (EXCLUSIVE)
                v = (i == 0) ? prefix : Op::template apply<TAcc>(prefix, items[i - 1]);
            else
                v = Op::template apply<TAcc>(prefix, items[i]);
            out[i] = Convert<TOut, TAcc>::apply(v);
        }
        OutIO::regs_to_smem(smem, lane, out);
        __syncwarp();
        OutIO::store_from_smem(d_out + seg_base, valid, vector_ok, smem, lane);
    }
};

}  // namespace distscan
