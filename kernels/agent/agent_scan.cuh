// distscan/kernels/agent/agent_scan.cuh -- one thread block consumes one tile of a single-pass
// scan: claim a tile id, load (coalesced, through shared memory), scan in the block,
// look back for the tile's exclusive prefix, fold it in, store.
#pragma once
#include "../tile/device_domino.cuh"
#include "../tile/tile_agent.cuh"
#include "../tile/tile_state.cuh"
#include "agent_policy.cuh"

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
// written; Op: functor from operators.cuh; EXCLUSIVE: exclusive or inclusive scan; DEVICE:
// a DeviceAlgorithm other than DEVICE_LOOKAHEAD; Policy: the tile shape, a TilePolicy
// (agent_policy.cuh).
// REVERSE: a suffix scan (tile_agent.cuh).  `ex`: what a state operator reads and writes besides
// its items (tile_agent.cuh, Extra; no_extra() for the plain operators).
template <typename TIn, typename TAcc, typename TOut, typename Op, bool EXCLUSIVE, DeviceAlgorithm DEVICE,
          typename Policy, bool REVERSE = false>
struct AgentScan : TileAgent<TIn, TAcc, TOut, Op, EXCLUSIVE, Policy, false, REVERSE> {
    typedef TileAgent<TIn, TAcc, TOut, Op, EXCLUSIVE, Policy, false, REVERSE> Tile;

    // Load the warp's segment of `tile` (through its shared-memory slice; KEEP: leave the
    // lines in L2 for a second read, else read them as streamed) and scan the tile in the
    // block (barriers).  Returns the thread's exclusive prefix within the tile.
    template <bool KEEP>
    static __device__ __forceinline__ TAcc load_scan(const TIn *d_in, i64 n, i64 tile, bool vector_ok, char *smem,
                                                     int warp, int lane, typename Tile::BScan::TempStorage &s_scan,
                                                     TAcc (&items)[Policy::ITEMS], TAcc &aggregate,
                                                     const Extra<TAcc> &ex, unsigned &starts) {
        Tile::template load_items<KEEP>(d_in, n, tile, vector_ok, smem, warp, lane, ex, items, starts);
        return Tile::BScan::scan(s_scan, items, aggregate);  // has __syncthreads
    }

    // lead == 0: one tile per block (claim, load, scan, look back, store).  lead > 0 (look-back only, large n): the
    // block of claim c REDUCES tile c (publishes its aggregate; the lines stay in L2) and
    // SCANS tile c - lead (read again, from L2), so the words its look-back needs were
    // published lead claims ago and it never waits for another block's loads: the wait
    // that costs the one-tile kernel 16-27 % of copy (benchmarks/NOTES-gpu.md) leaves the
    // loop, for one extra read from L2 (not DRAM while lead tiles fit in it).  The launch
    // makes num_tiles + lead claims.  Same words, same association, same bits as lead == 0.
    static __device__ __forceinline__ void consume(const TIn *d_in, TOut *d_out, i64 n, TileState &st,
                                                   TAcc seed, bool has_seed, TAcc *d_total, bool vector_ok, i64 lead,
                                                   const Extra<TAcc> &ex = no_extra<TAcc>()) {
        __shared__ __align__(16) char s_io[Policy::WARPS * Tile::IO_BYTES];
        __shared__ typename Tile::BScan::TempStorage s_scan;
        __shared__ i64 s_tile;
        __shared__ TAcc s_prefix;

        const int lane = threadIdx.x & 31;
        const int warp = threadIdx.x >> 5;
        char *smem = s_io + warp * Tile::IO_BYTES;

        // Tile ids in claim order, never blockIdx: a block waits only for tiles claimed
        // before its own, whose blocks are therefore already resident (no deadlock).
        if (threadIdx.x == 0) s_tile = st.claim();
        __syncthreads();
        if (warp == 0) st.epoch = shfl_idx(st.epoch, 0);  // warp 0 reads and writes status words
        const i64 claim = s_tile;
        const i64 num_tiles = (n + Policy::TILE_ITEMS - 1) / Policy::TILE_ITEMS;
        TAcc items[Policy::ITEMS];
        TAcc aggregate;
        unsigned starts = 0u;  // the scanned items' segment flags (state operators with flags)

        if (DEVICE == DEVICE_LOOKBACK && lead > 0) {
            if (claim < num_tiles) {  // the reduction of tile `claim` (its scan is not kept)
                load_scan<true>(d_in, n, claim, vector_ok, smem, warp, lane, s_scan, items, aggregate, ex, starts);
                if (threadIdx.x == 0 && claim != num_tiles - 1)
                    StatusWord<TAcc>::store(st.d_aggregates + claim * StatusWord<TAcc>::K, aggregate, st.epoch);
                __syncthreads();  // s_io and s_scan are free for the scan below
            }
            const i64 behind = claim - lead / 2;
            if (warp == 0 && behind >= 0 && behind < num_tiles)
                tile_publish_behind<TAcc, Op, Policy::WINDOW>(st, behind, num_tiles, seed, has_seed);
            const i64 tile = claim - lead;
            if (tile < 0 || tile >= num_tiles) return;  // the whole block: nothing to scan
            // Where warp 0 takes the tile's prefix is the operator's (operators.cuh,
            // PREFIX_UNDER_LOAD).  Under the load: the prefix's words were published lead/2 claims
            // ago or more, so warp 0 needs no aggregate of this scan to find it; it issues their
            // loads before its segment's and takes the prefix once its segment is staged (one
            // round trip for both, and none after the block scan, whose barrier makes s_prefix
            // visible).  That held the recurrences' and the compensated sum's registers down
            // (affine float64 135 -> 124, 3 -> 4 blocks an SM) for +5-14 % on the H200.  The
            // segmented sums poll after the scan, behind a second barrier: under the load they
            // lost 6-7 % on the H100 (benchmarks/RESULTS.md, "The prefix under the load" and "The
            // segmented scans' prefix after the scan again").  Same words, association and bits.
            PrefixPoll<TAcc, Op, Policy::WINDOW> poll;
            const auto take_prefix = [&]() {
                if (warp == 0) {
                    const TAcc p = poll.finish(st, tile, seed, has_seed);
                    if (lane == 0) s_prefix = p;
                }
            };
            if constexpr (Op::PREFIX_UNDER_LOAD) {
                if (warp == 0) poll.issue(st, tile);
            }
            Tile::template load_items<false>(d_in, n, tile, vector_ok, smem, warp, lane, ex, items, starts, [&]() {
                if constexpr (Op::PREFIX_UNDER_LOAD) take_prefix();
            });
            const TAcc thread_exclusive = Tile::BScan::scan(s_scan, items, aggregate);  // has __syncthreads
            if constexpr (!Op::PREFIX_UNDER_LOAD) {
                if (warp == 0) poll.issue(st, tile);
                take_prefix();
                __syncthreads();  // s_prefix visible
            }
            const TAcc prefix = s_prefix;
            if (threadIdx.x == 0) tile_total<TAcc, Op>(tile, num_tiles, prefix, aggregate, d_total);
            Tile::store(d_out, n, tile, vector_ok, smem, warp, lane, Op::template apply<TAcc>(prefix, thread_exclusive),
                        items, ex, starts);
            return;
        }

        const i64 tile = claim;
        const TAcc thread_exclusive =
            load_scan<false>(d_in, n, tile, vector_ok, smem, warp, lane, s_scan, items, aggregate, ex, starts);
        if (warp == 0) {
            TAcc p;
            if constexpr (DEVICE == DEVICE_LOOKBACK) {
                p = tile_lookback<TAcc, Op, Policy::WINDOW>(st, tile, num_tiles, aggregate, seed, has_seed, d_total);
            } else if constexpr (DEVICE == DEVICE_DOMINO) {
                p = tile_domino<TAcc, Op>(st, tile, num_tiles, aggregate, seed, has_seed, d_total);
            } else {
                p = Op::template identity<TAcc>();
                if (lane == 0) d_total[tile] = aggregate;
            }
            if (lane == 0) s_prefix = p;
        }
        __syncthreads();  // s_prefix visible; every warp is also past reading its input from s_io
        Tile::store(d_out, n, tile, vector_ok, smem, warp, lane, Op::template apply<TAcc>(s_prefix, thread_exclusive),
                    items, ex, starts);
    }
};

}  // namespace distscan
