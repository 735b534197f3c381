// distscan/kernels/tile/tile_agent.cuh -- what the two tile-consuming agents (agent_scan.cuh,
// agent_lookahead.cuh) share: the types of a tile of the policy's shape (its I/O, its block
// scan), where a warp's segment of a tile lies, reading a staged segment into the accumulator
// type, and folding a tile's prefix into its scanned items on the way out.
//
// REVERSE (suffix scans): the tiles, the warps' segments in a tile, the lanes' runs in a segment
// and the items of a run are all taken in mirrored order, so that logical item i is physical
// item n-1-i.  Physical tiles stay where they are (aligned: the same 16-byte vector loads and
// stores); the partial tile, physically the last, is logically the first, and its missing
// items are the identity at its front.  A warp still moves only its own shared-memory slice
// (it loads the physical segment it owns in mirrored order; each lane reads another lane's run
// of that slice), so the warp synchronises with __syncwarp only, as forwards.
//
// Operators with auxiliary inputs (segment flags, coefficients: util/states.cuh) read them
// with their items (Extra): the flags with the lane's own loads (one byte per item), the
// coefficients staged through the warp's slice after the items, as the items are.
#pragma once
#include "../block/block_scan.cuh"
#include "../util/states.cuh"
#include "tile_io.cuh"

namespace distscan {

// What a state operator's tile reads and writes besides its items (unused by plain operators).
template <typename TAcc>
struct Extra {
    const unsigned char *flags;  // segment flags, one byte per item (or null)
    const void *coef;            // coefficients, TAcc::Value per item (or null)
    bool coef_vector_ok;         // coef is 16-byte aligned
    bool has_param;              // the call's parameter (its initial) is projected
    TAcc param;
};

template <typename TAcc>
__device__ __forceinline__ Extra<TAcc> no_extra() {
    Extra<TAcc> ex;
    ex.flags = 0;
    ex.coef = 0;
    ex.coef_vector_ok = false;
    ex.has_param = false;
    return ex;
}

// The coefficient type of a state operator's items (a placeholder for the others).
template <typename TAcc, bool STATE> struct CoefOf {
    typedef TAcc type;
};
template <typename TAcc> struct CoefOf<TAcc, true> {
    typedef typename TAcc::Value type;
};

// Policy: the tile shape, a TilePolicy or a LookaheadPolicy (agent_policy.cuh).  The agents
// derive from TileAgent as `Tile` and name its types (Tile::InIO, Tile::BScan, ...) and the
// shape (Policy::WARPS, Policy::TILE_ITEMS, ...) there: one definition of each for both.
template <typename TIn, typename TAcc, typename TOut, typename Op, bool EXCLUSIVE, typename Policy,
          bool SWIZZLE = false, bool REVERSE = false>
struct TileAgent {
    static constexpr int ITEMS = Policy::ITEMS;
    typedef WarpTileIO<TIn, ITEMS, SWIZZLE> InIO;  // SWIZZLE: tile_io.cuh
    typedef WarpTileIO<TOut, ITEMS, SWIZZLE> OutIO;
    typedef typename BlockScanFor<Policy::BLOCK_ALGO, TAcc, Op, Policy::BLOCK_THREADS>::type BScan;
    // one warp's shared-memory slice: its segment, staged in or out
    static constexpr int IO_BYTES = InIO::WARP_BYTES > OutIO::WARP_BYTES ? InIO::WARP_BYTES : OutIO::WARP_BYTES;
    typedef typename CoefOf<TAcc, Op::STATE>::type TCoef;
    typedef WarpTileIO<TCoef, ITEMS, SWIZZLE> CoefIO;
    // coefficients are staged through the slice when they fit it, else read by each lane
    static constexpr bool STAGE_COEF = CoefIO::WARP_BYTES <= IO_BYTES;

    // Where the calling warp's segment of `tile` starts, and how many of its items exist (in
    // memory: REVERSE mirrors the tile and the warp).
    static __device__ __forceinline__ i64 segment(i64 n, i64 tile, int warp, int &valid) {
        if (REVERSE) {
            tile = (n + Policy::TILE_ITEMS - 1) / Policy::TILE_ITEMS - 1 - tile;
            warp = Policy::WARPS - 1 - warp;
        }
        const i64 seg_base = tile * (i64)Policy::TILE_ITEMS + (i64)warp * (32 * ITEMS);  // 64-bit: N > 2^31
        const i64 rem = n - seg_base;
        valid = rem <= 0 ? 0 : (rem >= 32 * ITEMS ? 32 * ITEMS : (int)rem);
        return seg_base;
    }

    // The lane whose run of the staged segment the calling lane scans, and where its item i
    // lies in that run.
    static __device__ __forceinline__ int run_lane(int lane) { return REVERSE ? 31 - lane : lane; }
    static __device__ __forceinline__ int run_item(int i) { return REVERSE ? ITEMS - 1 - i : i; }

    // The lane's ITEMS items of a staged segment, in the accumulator type (the identity past
    // the `valid` items that exist).
    static __device__ __forceinline__ void staged_items(const char *smem, int lane, int valid, TAcc (&items)[ITEMS]) {
        TIn raw[ITEMS];
        const int src = run_lane(lane);
        InIO::smem_to_regs(smem, src, raw);
#pragma unroll
        for (int i = 0; i < ITEMS; ++i) {
            const int k = run_item(i);
            items[i] = (src * ITEMS + k < valid) ? Op::template lift<TAcc, TIn>(raw[k]) : Op::template identity<TAcc>();
        }
    }

    // staged_items for operators with auxiliary inputs: the segment's flags and coefficients
    // (from global memory at seg_base; the coefficients through the slice, which must be free
    // of the items: staged_items has read them).  `starts` gets bit i set where item i's flag is.
    static __device__ __forceinline__ void staged_items_aux(char *smem, int lane, int valid, i64 seg_base,
                                                            const Extra<TAcc> &ex, TAcc (&items)[ITEMS],
                                                            unsigned &starts) {
        TIn raw[ITEMS];
        TCoef coef[ITEMS];
        const int src = run_lane(lane);
        InIO::smem_to_regs(smem, src, raw);
        if (ex.coef != 0) {
            const TCoef *d_coef = reinterpret_cast<const TCoef *>(ex.coef) + seg_base;
            if constexpr (STAGE_COEF) {
                __syncwarp();  // every lane has read its items from the slice
                CoefIO::template load_to_smem<false>(d_coef, valid, ex.coef_vector_ok, smem, lane);
                __syncwarp();
                CoefIO::smem_to_regs(smem, src, coef);
                __syncwarp();  // the slice is free again (the agent stores through it later)
            } else {
#pragma unroll
                for (int k = 0; k < ITEMS; ++k) coef[k] = (src * ITEMS + k < valid) ? d_coef[src * ITEMS + k] : TCoef();
            }
        }
        unsigned char flags[ITEMS];  // the run's flags: 4-byte words where the run is whole and aligned
        if (ex.flags != 0) {
            const unsigned char *d_flags = ex.flags + seg_base + src * ITEMS;
            if (ITEMS % 4 == 0 && valid == 32 * ITEMS && (reinterpret_cast<unsigned long long>(d_flags) & 3) == 0) {
#pragma unroll
                for (int w = 0; w < ITEMS / 4; ++w) {
                    const unsigned word = reinterpret_cast<const unsigned *>(d_flags)[w];
#pragma unroll
                    for (int b = 0; b < 4; ++b) flags[4 * w + b] = (unsigned char)(word >> (8 * b));
                }
            } else {
#pragma unroll
                for (int k = 0; k < ITEMS; ++k) flags[k] = (src * ITEMS + k < valid) ? d_flags[k] : 0;
            }
        } else {
#pragma unroll
            for (int k = 0; k < ITEMS; ++k) flags[k] = 0;
        }
        starts = 0u;
#pragma unroll
        for (int i = 0; i < ITEMS; ++i) {
            const int k = run_item(i);
            const int e = src * ITEMS + k;
            if (e < valid) {
                const bool flag = flags[k] != 0;
                starts |= (flag ? 1u : 0u) << i;
                items[i] = Op::template lift<TAcc, TIn>(raw[k], flag, ex.coef != 0 ? coef[k] : TCoef());
            } else {
                items[i] = Op::template identity<TAcc>();
            }
        }
    }

    // An item's output from the state before it (exclusive) or its own prefix (inclusive).
    static __device__ __forceinline__ TOut output(const TAcc &v, const Extra<TAcc> &ex, bool start) {
        if constexpr (Op::STATE) {
            if (EXCLUSIVE && Op::fresh(v, start)) return Op::template first<TOut>(ex.param, ex.has_param);
            return Op::template project<TOut>(v, ex.param, ex.has_param);
        } else {
            return Convert<TOut, TAcc>::apply(v);
        }
    }

    // Fold `prefix` (the tile's and the thread's) into the scanned items and store them
    // through the warp's slice, which must be free (every lane past reading its input).
    static __device__ __forceinline__ void store(TOut *d_out, i64 n, i64 tile, bool vector_ok, char *smem, int warp,
                                                 int lane, TAcc prefix, const TAcc (&items)[ITEMS]) {
        store(d_out, n, tile, vector_ok, smem, warp, lane, prefix, items, no_extra<TAcc>(), 0u);
    }

    static __device__ __forceinline__ void store(TOut *d_out, i64 n, i64 tile, bool vector_ok, char *smem, int warp,
                                                 int lane, TAcc prefix, const TAcc (&items)[ITEMS],
                                                 const Extra<TAcc> &ex, unsigned starts) {
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
            out[run_item(i)] = output(v, ex, (starts >> i) & 1u);
        }
        OutIO::regs_to_smem(smem, run_lane(lane), out);
        __syncwarp();
        OutIO::store_from_smem(d_out + seg_base, valid, vector_ok, smem, lane);
    }
};

}  // namespace distscan
