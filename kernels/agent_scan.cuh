// distscan/kernels/agent_scan.cuh -- one thread block consumes one tile of a single-pass
// scan: claim a tile id, load (coalesced, through shared memory), scan in the block,
// look back for the tile's exclusive prefix, fold it in, store.
#pragma once
#include "block_scan.cuh"
#include "tile_io.cuh"
#include "tile_state.cuh"

namespace distscan {

// TIn: item type read; TAcc: accumulator (operator applied in it); TOut: item type
// written; Op: functor from operators.cuh; EXCLUSIVE: exclusive or inclusive scan;
// BLOCK_THREADS x ITEMS: tile shape; WINDOW: look-back window (tiles).
template <typename TIn, typename TAcc, typename TOut, typename Op, bool EXCLUSIVE, int BLOCK_THREADS, int ITEMS,
          int WINDOW>
struct AgentScan {
    static const int WARPS = BLOCK_THREADS / 32;
    static const int TILE_ITEMS = BLOCK_THREADS * ITEMS;
    typedef WarpTileIO<TIn, ITEMS> InIO;
    typedef WarpTileIO<TOut, ITEMS> OutIO;
    typedef BlockScan<TAcc, Op, BLOCK_THREADS> BScan;
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
#ifdef DS_DIAG_NO_LOOKBACK  // diagnostic build (benchmarks only): wrong results, no inter-tile waiting
            TAcc p = Op::template identity<TAcc>();
#else
            TAcc p = tile_lookback<TAcc, Op, WINDOW>(st, tile, num_tiles, aggregate, seed, has_seed, d_total);
#endif
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
#ifdef DS_DIAG_NO_STORE  // diagnostic build (benchmarks only): store only what a test can never hit
        if (n < 0)
#endif
        OutIO::store_from_smem(d_out + seg_base, valid, vector_ok, smem, lane);
    }

    // ---------------------------------------------------------------------------------
    // PERSISTENT variant (DS_PERSIST): a grid of about (resident blocks) that loops over
    // tiles claimed from the same counter, with two shared-memory stages.  Before it scans
    // tile t (already in flight into `stage`), the block claims the next tile t' and
    // issues its loads (cp.async into the other stage), so that while warp 0
    // waits in t's look-back the SM still has t' bytes in flight.
    //
    // No deadlock: every block makes progress on its smallest unfinished tile, which waits
    // only for smaller tiles; the smallest unfinished tile overall therefore always
    // completes (its owner is running: it claimed it).  Each block makes exactly one
    // claim that fails (>= num_tiles) and stops there: the host advances the counter base
    // by num_tiles + gridDim.x per launch.
    // Shared memory: 2 * DYN_BYTES of dynamic shared memory (host sets the attribute).
    static const int DYN_BYTES = WARPS * IO_BYTES;  // one stage

    static __device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
    static __device__ __forceinline__ void cp_async_wait1() { asm volatile("cp.async.wait_group 1;" ::: "memory"); }

    static __device__ __forceinline__ bool issue(const TIn *d_in, i64 n, i64 tile, bool vector_ok, char *smem, int warp,
                                                 int lane) {
        const i64 seg_base = tile * (i64)TILE_ITEMS + (i64)warp * (32 * ITEMS);
        const i64 rem = n - seg_base;
        const int valid = rem <= 0 ? 0 : (rem >= 32 * ITEMS ? 32 * ITEMS : (int)rem);
        return InIO::load_to_smem_async(d_in + seg_base, valid, vector_ok, smem, lane);
    }

    static __device__ __forceinline__ void consume_persistent(const TIn *d_in, TOut *d_out, i64 n, const TileState &st,
                                                              TAcc seed, bool has_seed, TAcc *d_total, bool vector_ok) {
        extern __shared__ __align__(16) char s_dyn[];
        __shared__ typename BScan::TempStorage s_scan;
        __shared__ i64 s_next;
        __shared__ TAcc s_prefix;

        const int lane = threadIdx.x & 31;
        const int warp = threadIdx.x >> 5;
        const i64 num_tiles = (n + TILE_ITEMS - 1) / TILE_ITEMS;

        if (threadIdx.x == 0) s_next = (i64)(atomicAdd(st.d_tile_counter, 1ull) - st.counter_base);
        __syncthreads();
        i64 tile = s_next;
        int stage = 0;
        bool async_cur = false;
        if (tile < num_tiles) async_cur = issue(d_in, n, tile, vector_ok, s_dyn + warp * IO_BYTES, warp, lane);
        cp_async_commit();

        while (tile < num_tiles) {
            // Claim the next tile.  The barrier also orders every warp's reads of the other
            // stage (previous tile's stores) and of s_next before they are overwritten.
            if (threadIdx.x == 0) s_next = (i64)(atomicAdd(st.d_tile_counter, 1ull) - st.counter_base);
            __syncthreads();
            const i64 next = s_next;
            char *smem = s_dyn + stage * DYN_BYTES + warp * IO_BYTES;
            char *smem_next = s_dyn + (stage ^ 1) * DYN_BYTES + warp * IO_BYTES;
            bool async_next = false;
            if (next < num_tiles) async_next = issue(d_in, n, next, vector_ok, smem_next, warp, lane);
            cp_async_commit();
            cp_async_wait1();  // this thread's copies of `tile` (the older group) have landed

            const i64 seg_base = tile * (i64)TILE_ITEMS + (i64)warp * (32 * ITEMS);
            const i64 rem = n - seg_base;
            const int valid = rem <= 0 ? 0 : (rem >= 32 * ITEMS ? 32 * ITEMS : (int)rem);
            if (!async_cur) InIO::load_to_smem(d_in + seg_base, valid, vector_ok, smem, lane);
            __syncwarp();  // the warp's copies (its own segment only) are visible to all its lanes
            TIn raw[ITEMS];
            InIO::smem_to_regs(smem, lane, raw);
            TAcc items[ITEMS];
#pragma unroll
            for (int i = 0; i < ITEMS; ++i)
                items[i] = (lane * ITEMS + i < valid) ? Convert<TAcc, TIn>::apply(raw[i]) : Op::template identity<TAcc>();

            TAcc aggregate;
            const TAcc thread_exclusive = BScan::scan(s_scan, items, aggregate);  // has __syncthreads

            if (warp == 0) {
#ifdef DS_DIAG_NO_LOOKBACK
                TAcc p = Op::template identity<TAcc>();
#else
                TAcc p = tile_lookback<TAcc, Op, WINDOW>(st, tile, num_tiles, aggregate, seed, has_seed, d_total);
#endif
                if (lane == 0) s_prefix = p;
            }
            __syncthreads();
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

            tile = next;
            async_cur = async_next;
            stage ^= 1;
        }
        asm volatile("cp.async.wait_all;" ::: "memory");
    }
};

}  // namespace distscan
