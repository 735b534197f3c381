// distscan/kernels/agent_lookahead.cuh -- "lookahead": persistent blocks that publish
// ahead of their look-back and keep loads in flight while they wait.
//
// WHY.  In the one-tile-per-block kernel (agent_scan.cuh) a block loads its tile, publishes
// the aggregate, then waits for its predecessors; while it waits it has no loads in
// flight, and 16-22 % of the copy bandwidth is lost (benchmarks/NOTES-gpu.md: the same
// kernel without the wait runs at 93-98 % of copy).  An earlier persistent version
// (v4a there) prefetched the next tile but published its aggregate only after the current
// tile's look-back, so every round of tiles waited for the previous round's waits: 35 %
// slower.  Here a block runs one tile AHEAD of its look-back:
//
//   iteration k (the block's k-th tile t_k is scanned in registers, agg(t_k) published):
//     (a) issue the loads of t_{k+STAGES} (cp.async into shared memory; they land later)
//     (b) wait for t_{k+1}'s data, scan it into registers, PUBLISH agg(t_{k+1})
//     (c) look back for t_k's prefix (warp 0), add it, store t_k
//
// so (1) a tile's aggregate never waits for its own block's look-back of the same round:
// only for its loads and the block's previous step (c); and (2) during the wait of (c) the
// loads of STAGES-1 later tiles are in flight.
//
// NO PREFIX CHAIN.  The status words hold totals only (tile_state.cuh: aggregates, 32-tile
// sub-window totals SUB, window totals W), each published by the block that reduces the
// tile completing it, as soon as it has (step (b)); warp 0 keeps the block's running
// prefix over the window totals it has passed.  So no block ever waits for another
// block's look-back.  The association is the one tile_state.cuh defines for both device
// strategies, and the block scan is the same: for the same tile shape the results are
// bitwise those of the look-back kernel, and just as reproducible run to run.
//
// SHARED MEMORY.  A ring of STAGES stages (dynamic shared memory, SMEM_BYTES); each warp
// owns the same slice of every stage, so a warp's loads, transposes and stores sync with
// __syncwarp only.  Tile t_k's input lands in stage k % STAGES; after (b) has read t_{k+1}
// into registers, stage (k+1) % STAGES stages t_k's output on its way to global memory;
// at (a) of the next iteration that stage receives the loads of t_{k+1+STAGES}.
//
// TILE IDS come from the atomic counter, one claim ahead of use, by thread 0; a block stops
// claiming after its first id past the end, so a launch makes exactly num_tiles + gridDim.x
// claims (the host advances counter_base by that).  Every tile a block waits for was
// claimed earlier by a running block, whose waits are only for still earlier tiles: no
// deadlock at any grid size or residency.
#pragma once
#include "tile_agent.cuh"
#include "tile_state.cuh"

namespace distscan {

template <typename TIn, typename TAcc, typename TOut, typename Op, bool EXCLUSIVE, int BLOCK_THREADS, int ITEMS,
          int WINDOW, int BLOCK_ALGO, int STAGES>
struct AgentLookahead : TileAgent<TIn, TAcc, TOut, Op, EXCLUSIVE, BLOCK_THREADS, ITEMS, BLOCK_ALGO> {
    static_assert(STAGES >= 2, "the look-ahead needs at least two shared-memory stages");
    typedef TileAgent<TIn, TAcc, TOut, Op, EXCLUSIVE, BLOCK_THREADS, ITEMS, BLOCK_ALGO> Base;
    typedef typename Base::InIO InIO;
    typedef typename Base::BScan BScan;
    static const int WARPS = Base::WARPS;
    static const int TILE_ITEMS = Base::TILE_ITEMS;
    static const int WARP_STAGE_BYTES = Base::IO_BYTES;
    static const int STAGE_BYTES = WARPS * WARP_STAGE_BYTES;
    static const int SMEM_BYTES = STAGES * STAGE_BYTES;  // dynamic shared memory per block
    static const int IDS = STAGES + 2;                   // ring of claimed tile ids

    // One tile scanned in registers.
    struct Tile {
        i64 id;
        TAcc items[ITEMS];      // inclusive scan of the thread's own run
        TAcc thread_exclusive;  // the thread's prefix within the tile
        TAcc aggregate;         // the tile's total
    };

    static __device__ __forceinline__ int segment_valid(i64 n, i64 tile, int warp) {
        int valid;
        Base::segment(n, tile, warp, valid);
        return valid;
    }

    static __device__ __forceinline__ i64 claim(const TileState &st) {
        return (i64)(atomicAdd(st.d_tile_counter, 1ull) - st.counter_base);
    }

    // (a): the warp's segment of tile `id` into its slice of a stage.  One cp.async group per
    // tile, empty past the end, so that every wait counts the same groups.
    static __device__ __forceinline__ void issue_loads(const TIn *d_in, i64 n, i64 id, i64 num_tiles, bool vector_ok,
                                                       char *slice, int warp, int lane) {
        if (id < num_tiles) {
            const i64 seg = id * (i64)TILE_ITEMS + (i64)warp * (32 * ITEMS);
            InIO::load_to_smem_async(d_in + seg, segment_valid(n, id, warp), vector_ok, slice, lane);
        }
        cp_async_commit();
    }

    // (b): the tile whose data is in `slice` into registers, scanned (contains a barrier).
    static __device__ __forceinline__ void scan_slice(Tile &t, const char *slice, i64 n, int warp, int lane,
                                                      typename BScan::TempStorage &tmp) {
        Base::staged_items(slice, lane, segment_valid(n, t.id, warp), t.items);
        t.thread_exclusive = BScan::scan(tmp, t.items, t.aggregate);
    }

    // What a scanned tile owes at once: its aggregate (thread 0), and the sub-window or
    // window total that it completes (warp 0; waits for earlier tiles' aggregates only).
    static __device__ __forceinline__ void publish(const TileState &st, const Tile &t, i64 num_tiles, int warp) {
        if (threadIdx.x == 0) tile_publish_aggregate<TAcc>(st, t.id, num_tiles, t.aggregate);
        if (warp == 0) tile_publish_ahead<TAcc, Op, WINDOW>(st, t.id, num_tiles, t.aggregate);
    }

    // (c): fold the tile's prefix in and store through `slice` (free: its input was read).
    static __device__ __forceinline__ void store(const Tile &t, TAcc tile_prefix, TOut *d_out, i64 n, bool vector_ok,
                                                 char *slice, int warp, int lane) {
        Base::store(d_out, n, t.id, vector_ok, slice, warp, lane,
                    Op::template apply<TAcc>(tile_prefix, t.thread_exclusive), t.items);
    }

    static __device__ __forceinline__ void run(const TIn *d_in, TOut *d_out, i64 n, const TileState &st, TAcc seed,
                                               bool has_seed, TAcc *d_total, bool vector_ok) {
        extern __shared__ __align__(16) char s_stages[];
        __shared__ typename BScan::TempStorage s_scan;
        __shared__ i64 s_ids[IDS];
        __shared__ TAcc s_prefix[2];  // by iteration parity: a late reader of one never meets the next write

        const int lane = threadIdx.x & 31;
        const int warp = threadIdx.x >> 5;
        const i64 num_tiles = (n + TILE_ITEMS - 1) / TILE_ITEMS;
        char *my_slices = s_stages + warp * WARP_STAGE_BYTES;  // + stage * STAGE_BYTES

        // Prologue: claim STAGES + 1 tiles, load the first STAGES, scan and publish the first.
        bool claiming = true;  // thread 0's: no id past the end seen yet
        if (threadIdx.x == 0) {
            for (int k = 0; k <= STAGES; ++k) {
                i64 id = num_tiles;
                if (claiming) {
                    id = claim(st);
                    claiming = id < num_tiles;
                }
                s_ids[k] = id;
            }
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < STAGES; ++k)
            issue_loads(d_in, n, s_ids[k], num_tiles, vector_ok, my_slices + k * STAGE_BYTES, warp, lane);
        Tile cur;
        cur.id = s_ids[0];
        if (cur.id >= num_tiles) return;  // the whole block: no tile left for it
        cp_async_wait<STAGES - 1>();
        __syncwarp();
        scan_slice(cur, my_slices, n, warp, lane, s_scan);
        publish(st, cur, num_tiles, warp);
        WindowCursor<TAcc> cursor;  // warp 0's running PREFIX(g)
        cursor.g = 0;
        cursor.prefix = has_seed ? seed : Op::template identity<TAcc>();

        // The loop condition is the tile id (uniform across the block), not a break.
        for (int k = 0; cur.id < num_tiles; ++k) {
            // (a) loads of t_{k+STAGES} into t_k's stage (read at the previous (b); it staged
            // t_{k-1}'s output, whose reads every lane of the warp has finished).
            __syncwarp();
            issue_loads(d_in, n, s_ids[(k + STAGES) % IDS], num_tiles, vector_ok,
                        my_slices + (k % STAGES) * STAGE_BYTES, warp, lane);

            // (b) t_{k+1}: wait for its data, scan, publish its aggregate; claim t_{k+STAGES+1}
            // (its slot held t_{k-1}'s id, which nobody reads any more; the scan's barrier
            // publishes it).
            Tile next;
            next.id = s_ids[(k + 1) % IDS];
            char *next_slice = my_slices + ((k + 1) % STAGES) * STAGE_BYTES;
            if (next.id < num_tiles) {
                if (threadIdx.x == 0) {
                    i64 id = num_tiles;
                    if (claiming) {
                        id = claim(st);
                        claiming = id < num_tiles;
                    }
                    s_ids[(k + STAGES + 1) % IDS] = id;
                }
                cp_async_wait<STAGES - 1>();
                __syncwarp();
                scan_slice(next, next_slice, n, warp, lane, s_scan);
                publish(st, next, num_tiles, warp);
            }

            // (c) t_k: its prefix (warp 0 waits; the loads issued above stay in flight), then
            // store it through t_{k+1}'s stage, which (b) has read.
            if (warp == 0) {
                const TAcc p = tile_lookahead<TAcc, Op, WINDOW>(st, cur.id, num_tiles, cur.aggregate, cursor, d_total);
                if (lane == 0) s_prefix[k & 1] = p;
            }
            __syncthreads();
            store(cur, s_prefix[k & 1], d_out, n, vector_ok, next_slice, warp, lane);
            cur = next;
        }
    }
};

}  // namespace distscan
