// distscan/kernels/agent_scan.cuh -- one thread block consumes one tile of a single-pass
// scan: claim a tile id, load (coalesced, through shared memory), scan in the block,
// look back for the tile's exclusive prefix, fold it in, store.
#pragma once
#include "block_scan.cuh"
#include "device_domino.cuh"
#include "tile_io.cuh"
#include "tile_state.cuh"

namespace distscan {

// Device-level strategies: how a tile learns the total of the tiles before it.
enum DeviceAlgorithm {
    DEVICE_LOOKBACK = 0,  // decoupled look-back over aligned windows (tile_state.cuh; the default)
    DEVICE_DOMINO = 1,    // wait for the previous tile's inclusive prefix (device_domino.cuh)
    DEVICE_TILES = 2,     // no wait: each tile alone, its total to d_total[tile] ("hierarchical",
                          // whose host side scans the totals and adds them back)
    DEVICE_LOOKAHEAD = 3, // persistent blocks, aggregates published a tile ahead of the look-back,
                          // loads in flight while waiting (agent_lookahead.cuh)
};

// TIn: item type read; TAcc: accumulator (operator applied in it); TOut: item type
// written; Op: functor from operators.cuh; EXCLUSIVE: exclusive or inclusive scan;
// BLOCK_THREADS x ITEMS: tile shape; WINDOW: look-back window (tiles); BLOCK_ALGO: a
// BlockAlgorithm (block_scan.cuh); DEVICE: a DeviceAlgorithm.
template <typename TIn, typename TAcc, typename TOut, typename Op, bool EXCLUSIVE, int BLOCK_THREADS, int ITEMS,
          int WINDOW, int BLOCK_ALGO = BLOCK_COARSENED, int DEVICE = DEVICE_LOOKBACK>
struct AgentScan {
    static const int WARPS = BLOCK_THREADS / 32;
    static const int TILE_ITEMS = BLOCK_THREADS * ITEMS;
    typedef WarpTileIO<TIn, ITEMS> InIO;
    typedef WarpTileIO<TOut, ITEMS> OutIO;
    typedef typename BlockScanFor<BLOCK_ALGO, TAcc, Op, BLOCK_THREADS>::type BScan;
    static const int IO_BYTES = InIO::WARP_BYTES > OutIO::WARP_BYTES ? InIO::WARP_BYTES : OutIO::WARP_BYTES;

    static __device__ __forceinline__ void consume(const TIn *d_in, TOut *d_out, i64 n, const TileState &st,
                                                   TAcc seed, bool has_seed, TAcc *d_total, bool vector_ok) {
        __shared__ __align__(16) char s_io[WARPS * IO_BYTES];
        __shared__ typename BScan::TempStorage s_scan;
        __shared__ i64 s_tile;
        __shared__ TAcc s_prefix;

        const int lane = threadIdx.x & 31;
        const int warp = threadIdx.x >> 5;

        // Tile ids in claim order, never blockIdx: a block waits only for tiles claimed
        // before its own, whose blocks are therefore already resident (no deadlock).
        if (threadIdx.x == 0) s_tile = (i64)(atomicAdd(st.d_tile_counter, 1ull) - st.counter_base);
        __syncthreads();
        const i64 tile = s_tile;
        const i64 num_tiles = (n + TILE_ITEMS - 1) / TILE_ITEMS;

        const i64 seg_base = tile * (i64)TILE_ITEMS + (i64)warp * (32 * ITEMS);  // 64-bit: N > 2^31
        const i64 rem = n - seg_base;
        const int valid = rem <= 0 ? 0 : (rem >= 32 * ITEMS ? 32 * ITEMS : (int)rem);
        char *smem = s_io + warp * IO_BYTES;

        InIO::load_to_smem(d_in + seg_base, valid, vector_ok, smem, lane);
        __syncwarp();
        TIn raw[ITEMS];
        InIO::smem_to_regs(smem, lane, raw);
        TAcc items[ITEMS];
#pragma unroll
        for (int i = 0; i < ITEMS; ++i)
            items[i] = (lane * ITEMS + i < valid) ? Convert<TAcc, TIn>::apply(raw[i]) : Op::template identity<TAcc>();

        TAcc aggregate;
        const TAcc thread_exclusive = BScan::scan(s_scan, items, aggregate);  // has __syncthreads

        if (warp == 0) {
            TAcc p;
            if constexpr (DEVICE == DEVICE_LOOKBACK) {
                p = tile_lookback<TAcc, Op, WINDOW>(st, tile, num_tiles, aggregate, seed, has_seed, d_total);
            } else if constexpr (DEVICE == DEVICE_DOMINO) {
                p = tile_domino<TAcc, Op>(st, tile, num_tiles, aggregate, seed, has_seed, d_total);
            } else {
                p = Op::template identity<TAcc>();
                if (lane == 0) d_total[tile] = aggregate;
            }
            if (lane == 0) s_prefix = p;
        }
        __syncthreads();  // s_prefix visible; every warp is also past reading its input from s_io
        const TAcc prefix = Op::template apply<TAcc>(s_prefix, thread_exclusive);

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
