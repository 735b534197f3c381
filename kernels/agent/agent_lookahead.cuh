// distscan/kernels/agent/agent_lookahead.cuh -- "lookahead": persistent blocks that keep every tile
// in shared memory from its reduction to its scan, DEPTH of their own tiles later.
//
// WHY.  The one-tile look-back (agent_scan.cuh, lead == 0) waits for its predecessors with no
// loads in flight; the reduction-ahead kernel (lead > 0) never waits but reads every tile
// twice (DRAM, then L2), and on the H200 the L2's third pass per item is its ceiling (0.84 of
// copy; ncu: L2 throughput 95 %, benchmarks/NOTES-gpu.md).  Here each tile is read from DRAM
// once, into a ring of STAGES shared-memory stages, and a block runs DEPTH tiles ahead of its
// own scans.
//
// WARPS.  A block is BLOCK_THREADS/32 data warps and one SERVICE warp (launched with
// BLOCK_THREADS + 32 threads).  The data warps load, reduce, scan and store; the service warp
// claims tile ids, polls prefixes and publishes status words.  With that work on a data warp,
// the other data warps waited for it at every barrier (ncu on the H200: barrier stalls the
// largest share); the service warp took the H200 from 0.86-0.87 of copy to 0.90-0.92
// (benchmarks/RESULTS.md, "Issue 10, fifth pass").
//
//   iteration k (t_k: the block's k-th tile, in claim order), ONE barrier:
//     before it: data warps: the thread and warp halves of the block scan of t_{k-DEPTH} (in
//       its stage since DEPTH iterations) and of the reduction of t_k (its loads waited for);
//       service warp: the claim of t_{k+LOADS}, and t_{k-DEPTH}'s prefix (polled an
//       iteration early)
//     after it:  service warp: agg(t_k) PUBLISHED; t_{k-BEHIND}'s sub-window or window total if
//       it completes one (tile_publish_behind); the next prefix polled.  Data warps:
//       t_{k-DEPTH} stored with its prefix; the loads of t_{k+LOADS} (cp.async) go into the
//       stage t_{k-DEPTH} has freed
//
// so a tile's prefix is asked for DEPTH rounds of the grid after its reduction, when every
// tile before it has long been reduced (the lead kernel's argument, with the data kept on the
// SM instead of in L2), and while a block waits, LOADS tiles' loads stay in flight.  The
// status words and their association are the look-back's (tile_state.cuh), and the block
// scan is the same, so the results are bitwise those of the look-back kernel (operators with
// auxiliary inputs: their aggregates and totals; their floats' outputs round as RESCAN says).
//
// SHARED MEMORY.  Each data warp owns the same slice of every stage (its segment of the tile,
// transposed as tile_io.cuh describes, swizzled rather than padded), so a warp's loads, reads
// and stores sync with __syncwarp only.  t_k lives in stage k % STAGES from (d) of iteration
// k - LOADS to (c) of iteration k + DEPTH, which also stages its output on the way to global
// memory.
//
// TILE IDS come from the atomic counter, by the service warp's lane 0, each claim issued one
// iteration before its id is needed (its latency overlaps a round of work); a block stops
// claiming after its first id past the end, so a launch makes exactly num_tiles + gridDim.x
// claims.  Every tile a block waits for (agg, SUB or ANCHOR of a smaller tile) was claimed
// earlier by a running block, whose own waits are again only for smaller tiles: no deadlock
// at any grid size.
#pragma once
#include "../tile/tile_agent.cuh"
#include "../tile/tile_state.cuh"
#include "agent_policy.cuh"

namespace distscan {

// Bytes of a warp's staged slice of an auxiliary input of type T (0 where it is not staged, so
// that plain operators never instantiate its I/O: its ITEMS need not be a multiple of 16 bytes).
template <typename T, int ITEMS, bool STAGED> struct StagedSliceBytes {
    static constexpr int value = 0;
};
template <typename T, int ITEMS> struct StagedSliceBytes<T, ITEMS, true> {
    static constexpr int value = WarpTileIO<T, ITEMS, true>::WARP_BYTES;
};

// Whether AgentLookahead rescans (RESCAN below): only state operators with auxiliary inputs
// (STATE_AUX) say, per state type (StateOpBase::rescans, util/states.cuh); the others have no say.
template <typename Op, typename TAcc, bool STATE_AUX> struct RescanFor {
    static constexpr bool value = false;
};
template <typename Op, typename TAcc> struct RescanFor<Op, TAcc, true> {
    static constexpr bool value = Op::template rescans<TAcc>();
};

// Policy: a LookaheadPolicy (agent_policy.cuh): the tile shape, STAGES, DEPTH and BEHIND.
// REVERSE: a suffix scan (tile_agent.cuh).
//
// AUXILIARY INPUTS (state operators with segment flags or coefficients: util/states.cuh).  A
// tile's flags and coefficients travel with its items: each warp's slice of a stage holds its
// segment of the items, then of the flags (1 byte an item), then of the coefficients, loaded by
// the same cp.async group and read back with the same swizzled lanes, so that the reduction of
// t_k and the scan of t_{k-DEPTH} lift their states from shared memory alone.  On the look-back
// with its reduction lead these inputs were read twice, the second time from L2, whose third
// pass per item is that kernel's ceiling (0.84 of copy on the H200, WHY above).
template <typename TIn, typename TAcc, typename TOut, typename Op, bool EXCLUSIVE, typename Policy,
          bool REVERSE = false>
struct AgentLookahead : TileAgent<TIn, TAcc, TOut, Op, EXCLUSIVE, Policy, true, REVERSE> {
    static constexpr int STAGES = Policy::STAGES, DEPTH = Policy::DEPTH, BEHIND = Policy::BEHIND;
    static_assert(DEPTH >= 1 && STAGES >= DEPTH + 1, "STAGES - DEPTH stages must be left for loads in flight");
    // The service warp publishes the window words (SUB, ANCHOR) a tile completes BEHIND
    // iterations after the tile's reduction, waiting for the aggregates they sum; it must do so
    // before its loop ends (DEPTH iterations after the reduction).  BEHIND 2 rather than 1:
    // those aggregates, reduced by other blocks at about the same time, are then there, and the
    // warp does not spin on them while its block waits at the next barrier (H100, 2^27-2^29:
    // 0.99 of copy against 0.93-0.98; benchmarks/RESULTS.md, "Issue 10, eighth pass").
    static_assert(BEHIND >= 1 && BEHIND <= DEPTH, "a tile's window words must be published within DEPTH iterations");
    typedef TileAgent<TIn, TAcc, TOut, Op, EXCLUSIVE, Policy, true, REVERSE> Tile;  // unpadded stages
    typedef typename Tile::TCoef TCoef;
    // COEF_ONE (tile_agent.cuh): the one coefficient is read where the items are lifted, not staged
    static constexpr bool STAGE_FLAGS = Op::AUX >= 1, STAGE_COEF = Op::AUX >= 2 && !COEF_ONE;
    static_assert(!STAGE_FLAGS || Policy::ITEMS % 16 == 0, "staged flags need 16-byte runs: ITEMS a multiple of 16");
    typedef WarpTileIO<unsigned char, Policy::ITEMS, true> FlagIO;  // instantiated only where STAGE_FLAGS
    typedef WarpTileIO<TCoef, Policy::ITEMS, true> CoefIO;          // only where STAGE_COEF
    // A data warp's slice of a stage: its items (staged in, then its output staged out), its flags, its coefficients
    static constexpr int FLAG_OFFSET = Tile::IO_BYTES;
    static constexpr int COEF_OFFSET = FLAG_OFFSET + StagedSliceBytes<unsigned char, Policy::ITEMS, STAGE_FLAGS>::value;
    // Policy::WARPS data warps, each with its slice of every stage; warp Policy::WARPS is the service warp
    static constexpr int WARP_STAGE_BYTES = COEF_OFFSET + StagedSliceBytes<TCoef, Policy::ITEMS, STAGE_COEF>::value;
    static constexpr int STAGE_BYTES = Policy::WARPS * WARP_STAGE_BYTES;
    static constexpr int SMEM_BYTES = STAGES * STAGE_BYTES;  // dynamic shared memory per block
    static constexpr int LOADS = STAGES - DEPTH;             // tiles whose loads are in flight
    static constexpr int IDS = STAGES + 2;                   // ring of claimed tile ids
    // RESCAN (operators with auxiliary inputs or a run state): a tile's reduction keeps, in its
    // stage's s_lanes/s_warps slots, what the scan DEPTH iterations later needs of the block scan (each
    // lane's exclusive prefix in its warp, each warp's total), and the scan lifts the staged
    // items again and scans each thread's run from its prefix (store_rescanned).  A warp then
    // holds one tile's states at a time, not the scanned tile's across the barrier beside the
    // reduced one's (129-168 registers, 10 warps an SM: latency-bound, benchmarks/NOTES-gpu.md),
    // and applies the operator twice an item, not three times.  The aggregates, prefixes and
    // totals are the other path's bit for bit; a float sum's or product's outputs round in the
    // order of a sequential run from the thread's prefix (tile_agent.cuh, store_rescanned).
    // Operators with a run state (the compensated sum, logaddexp: operators.cuh, RUN_STATE) keep
    // their items as lifted in either path, and their store scans each run from its prefix
    // (Tile::store): so under RESCAN the reduction's warp parts serve the scan, whose store is the
    // same, and the outputs are the other path's bit for bit, with one run pass an item fewer (H200,
    // 2^27: the compensated float32 sum 1.31x the plain sum's time against 1.47x, logcumsumexp f32
    // 2.40x against 3.20x; the look-back, which "auto" keeps for them, 1.16x and 1.60x: RESULTS.md,
    // "The run-state operators on the look-ahead's RESCAN path").  Their static shared memory grows
    // by the slots (7.5 KB for the compensated float32 sum's ring of 7), so they take it only where
    // the slots leave room for the blocks an SM the shape was tuned for (Policy::MIN_BLOCKS;
    // tuning.choose_tuning), as one block an SM where two were tuned is slower: the compensated
    // complex128 sum (32-byte states, the one run-state scan "auto" sends here) 4.41x the plain
    // sum's time with the slots against 2.72x without (H200, 2^26; RESULTS.md, "Run states keep
    // the look-ahead's blocks an SM").  tests/gpu/test_kernels_lookahead.py checks every shape's
    // blocks an SM against the driver's occupancy.
    // run()'s static shared memory, declared here so that the room test below takes its sizeof.
    // By iteration parity: a slow reader of iteration k's never meets iteration k+1's writes.
    struct IterationSlots {
        typename Tile::BScan::TempStorage red[2], scn[2];
        TAcc prefix[2];
        i64 ids[IDS];
    };
    // RESCAN: by stage, from a tile's reduction to its scan (one of each where unused)
    template <int SLOT_STAGES, int SLOT_THREADS>
    struct RescanSlots {
        typename Tile::BScan::TempStorage warps[SLOT_STAGES];
        TAcc lanes[SLOT_STAGES][SLOT_THREADS];
    };
    static constexpr int RUN_STATE_SLOT_BYTES = int(sizeof(RescanSlots<STAGES, Policy::BLOCK_THREADS>));
    static constexpr int OTHER_STATIC_BYTES = int(sizeof(IterationSlots));
    static constexpr bool RUN_STATE_RESCAN =
        Op::RUN_STATE && Policy::MIN_BLOCKS * (SMEM_BYTES + RUN_STATE_SLOT_BYTES + OTHER_STATIC_BYTES
                                               + BLOCK_RESERVED_SHARED_BYTES) <= sm_shared_bytes();
    static constexpr bool RESCAN = RUN_STATE_RESCAN || RescanFor<Op, TAcc, (Op::AUX > 0)>::value;
    // The scan of t_{k-DEPTH} reads its stage's s_warps after iteration k's barrier; a warp already
    // in iteration k+1 writes stage (k+1) % STAGES's, another one while LOADS >= 2.
    static_assert(!RESCAN || LOADS >= 2, "RESCAN's s_warps need two stages' loads in flight");
    static constexpr int RESCAN_STAGES = RESCAN ? STAGES : 1;  // the slots' size where unused
    static constexpr int RESCAN_THREADS = RESCAN ? Policy::BLOCK_THREADS : 1;

    // The service warp's lane 0's claims, one in flight: take() returns the claim issued by
    // the previous take() and issues the next one while the ids are valid.
    struct Claims {
        i64 pending;
        bool open;
        __device__ __forceinline__ void start(TileState &st) {
            pending = st.claim();
            open = true;
        }
        __device__ __forceinline__ i64 take(TileState &st, i64 num_tiles) {
            if (!open) return num_tiles;
            const i64 id = pending;
            if (id < num_tiles)
                pending = st.claim();
            else
                open = false;
            return id < num_tiles ? id : num_tiles;
        }
    };

    // The warp's segment of tile `id` (and of its flags and coefficients) into its slice of a
    // stage: one cp.async group per tile, empty past the end, so that every wait counts the
    // same groups.  flags_vector_ok: ex.flags is 16-byte aligned (ex.coef_vector_ok: ex.coef).
    static __device__ __forceinline__ void issue_loads(const TIn *d_in, i64 n, i64 id, i64 num_tiles, bool vector_ok,
                                                       char *slice, int warp, int lane, const Extra<TAcc> &ex,
                                                       bool flags_vector_ok) {
        if (id < num_tiles) {
            int valid;
            const i64 seg = Tile::segment(n, id, warp, valid);
            Tile::InIO::load_to_smem_async(d_in + seg, valid, vector_ok, slice, lane);
            if constexpr (STAGE_FLAGS) {
                if (ex.flags != 0)
                    FlagIO::load_to_smem_async(ex.flags + seg, valid, flags_vector_ok, slice + FLAG_OFFSET, lane);
            }
            if constexpr (STAGE_COEF) {
                if (ex.coef != 0)
                    CoefIO::load_to_smem_async(reinterpret_cast<const TCoef *>(ex.coef) + seg, valid,
                                               ex.coef_vector_ok, slice + COEF_OFFSET, lane);
            }
        }
        cp_async_commit();
    }

    // The warp's part of staged tile `id`, in the accumulator type; with auxiliary inputs,
    // lifted with its flags and coefficients (`starts`: Tile::lift_aux's).
    static __device__ __forceinline__ void stage_items(const char *slice, i64 n, i64 id, int warp, int lane,
                                                       const Extra<TAcc> &ex, TAcc (&items)[Policy::ITEMS],
                                                       unsigned &starts) {
        int valid;
        Tile::segment(n, id, warp, valid);
        if constexpr (STAGE_FLAGS) {
            typename Tile::AuxRun aux;
            const int src = Tile::run_lane(lane);  // the lane whose run this lane lifts, as staged_items
            if (ex.flags != 0) {
                FlagIO::smem_to_regs(slice + FLAG_OFFSET, src, aux.f.flags);
            } else {
#pragma unroll
                for (int k = 0; k < Policy::ITEMS; ++k) aux.f.flags[k] = 0;
            }
            if constexpr (STAGE_COEF) {
                if (ex.coef != 0) CoefIO::smem_to_regs(slice + COEF_OFFSET, src, aux.c.coef);
            } else if constexpr (Op::AUX >= 2) {
                if (ex.coef != 0) Tile::fill_coef(ex, aux);
            }
            Tile::template lift_aux<Op::RUN_BITS>(slice, lane, valid, ex, aux, items, starts);
        } else {
            Tile::staged_items(slice, lane, valid, items);
        }
    }

    static __device__ __forceinline__ void run(const TIn *d_in, TOut *d_out, i64 n, TileState &st, TAcc seed,
                                               bool has_seed, TAcc *d_total, bool vector_ok,
                                               const Extra<TAcc> &ex = no_extra<TAcc>()) {
        static_assert(Policy::BLOCK_ALGO == BLOCK_COARSENED,
                      "the look-ahead splits the coarsened block scan at its barrier");
        // Aligned to 128 bytes whatever the static size above it: the swizzle (tile_io.cuh)
        // keys 128-byte rows (a start 16 bytes off cost the 4-byte kernel 5 %: NOTES-gpu.md).
        extern __shared__ __align__(128) char s_stages[];
        __shared__ IterationSlots s_iteration;
        __shared__ RescanSlots<RESCAN_STAGES, RESCAN_THREADS> s_rescan;
        auto &s_red = s_iteration.red;
        auto &s_scn = s_iteration.scn;
        auto &s_prefix = s_iteration.prefix;
        auto &s_ids = s_iteration.ids;
        auto &s_warps = s_rescan.warps;
        auto &s_lanes = s_rescan.lanes;

        const int lane = threadIdx.x & 31;
        const int warp = threadIdx.x >> 5;
        const bool service = warp == Policy::WARPS;  // claims, prefixes, publishing; the others: data
        const bool leader = service && lane == 0;
        const i64 num_tiles = (n + Policy::TILE_ITEMS - 1) / Policy::TILE_ITEMS;
        char *my_slices = s_stages + warp * WARP_STAGE_BYTES;  // + stage * STAGE_BYTES (data warps)
        const bool flags_vector_ok = (reinterpret_cast<unsigned long long>(ex.flags) & 15) == 0;

        Claims claims;
        if (leader) {
            claims.start(st);
            for (int k = 0; k < LOADS; ++k) s_ids[k] = claims.take(st, num_tiles);
        }
        __syncthreads();
        if (service) st.epoch = shfl_idx(st.epoch, 0);  // the leader's claims set it
        if (s_ids[0] >= num_tiles) return;  // the whole block: no tile left for it
        if (!service) {
#pragma unroll
            for (int k = 0; k < LOADS; ++k)
                issue_loads(d_in, n, s_ids[k], num_tiles, vector_ok, my_slices + k * STAGE_BYTES, warp, lane, ex,
                            flags_vector_ok);
        }

        PrefixPoll<TAcc, Op, Policy::WINDOW> poll;  // the service warp's: the prefix of the next tile to scan
        // The loop condition is uniform across the block (ids in shared memory).
        for (int k = 0;; ++k) {
            const int par = k & 1;
            const i64 t_scan = k >= DEPTH ? s_ids[(k - DEPTH) % IDS] : -1;
            if (t_scan >= num_tiles) break;  // it and every later id: past the end
            const i64 t_red = s_ids[k % IDS];
            const i64 t_behind = k >= BEHIND ? s_ids[(k - BEHIND) % IDS] : num_tiles;
            // t_{k+LOADS}'s id, seen by every thread after the barrier; its slot last held
            // t_{k+LOADS-IDS}, which no thread reads any more.
            if (leader) s_ids[(k + LOADS) % IDS] = claims.take(st, num_tiles);
            char *scan_slice = my_slices + ((k + LOADS) % STAGES) * STAGE_BYTES;  // = stage (k - DEPTH) % STAGES

            TAcc items[Policy::ITEMS], lane_exclusive;
            unsigned starts = 0u, red_starts;  // the scanned items' segment flags (Tile::lift_aux)
            if constexpr (RESCAN) {
                if (!service && t_red < num_tiles) {
                    const int red_stage = k % STAGES;
                    TAcc red[Policy::ITEMS];
                    cp_async_wait<LOADS - 1>();
                    __syncwarp();
                    stage_items(my_slices + red_stage * STAGE_BYTES, n, t_red, warp, lane, ex, red, red_starts);
                    // scan_up's run total and warp scan: reduce_up's aggregate, scan_down's prefixes
                    if constexpr (Op::RUN_BITS) {
                        int valid;
                        Tile::segment(n, t_red, warp, valid);
                        s_lanes[red_stage][threadIdx.x] = Tile::BScan::scan_up_total(
                            s_warps[red_stage], Tile::run_total_bits(red, red_starts, valid));
                    } else {
                        s_lanes[red_stage][threadIdx.x] = Tile::BScan::scan_up(s_warps[red_stage], red);
                    }
                }
            } else if (Op::INTERLEAVE && !service && t_scan >= 0 && t_red < num_tiles) {
                // The steady state of operators with long chains (operators.cuh, INTERLEAVE): both
                // halves in one block, so that the scan's and the reduction's chains overlap (the
                // loads of t_red are waited for first: issued LOADS - 1 iterations ago, they are in
                // by then when the chains are the bound).  Same values, bit for bit.
                TAcc red[Policy::ITEMS];
                stage_items(scan_slice, n, t_scan, warp, lane, ex, items, starts);
                cp_async_wait<LOADS - 1>();
                __syncwarp();
                stage_items(my_slices + (k % STAGES) * STAGE_BYTES, n, t_red, warp, lane, ex, red, red_starts);
                lane_exclusive = Tile::BScan::scan_up_reduce_up(s_scn[par], items, s_red[par], red);
            } else if (!service) {
                if (t_scan >= 0) {
                    stage_items(scan_slice, n, t_scan, warp, lane, ex, items, starts);
                    lane_exclusive = Tile::BScan::scan_up(s_scn[par], items);
                }
                if (t_red < num_tiles) {
                    TAcc red[Policy::ITEMS];
                    cp_async_wait<LOADS - 1>();
                    __syncwarp();
                    stage_items(my_slices + (k % STAGES) * STAGE_BYTES, n, t_red, warp, lane, ex, red, red_starts);
                    Tile::BScan::reduce_up(s_red[par], red);
                }
            }
            if (service && t_scan >= 0) {
                const TAcc p = poll.finish(st, t_scan, seed, has_seed);
                if (lane == 0) s_prefix[par] = p;
            }
            __syncthreads();

            if (t_red < num_tiles && leader && t_red != num_tiles - 1) {
                TAcc aggregate;
                Tile::BScan::scan_down(RESCAN ? s_warps[k % RESCAN_STAGES] : s_red[par], Op::template identity<TAcc>(),
                                       aggregate);
                StatusWord<TAcc>::store(st.d_aggregates + t_red * StatusWord<TAcc>::K, aggregate, st.epoch);
            }
            if (!service && t_scan >= 0) {
                TAcc aggregate;
                const TAcc prefix = s_prefix[par];
                if constexpr (RESCAN) {
                    const int scan_stage = (k + LOADS) % STAGES;  // = (k - DEPTH) % STAGES
                    const TAcc thread_exclusive =
                        Tile::BScan::scan_down(s_warps[scan_stage], s_lanes[scan_stage][threadIdx.x], aggregate);
                    if (threadIdx.x == 0) tile_total<TAcc, Op>(t_scan, num_tiles, prefix, aggregate, d_total);
                    stage_items(scan_slice, n, t_scan, warp, lane, ex, items, starts);
                    __syncwarp();  // every lane past reading the stage the outputs go through
                    if constexpr (Op::RUN_STATE) {
                        Tile::store(d_out, n, t_scan, vector_ok, scan_slice, warp, lane,
                                    Op::template apply<TAcc>(prefix, thread_exclusive), items, ex, starts);
                    } else {
                        Tile::store_rescanned(d_out, n, t_scan, vector_ok, scan_slice, warp, lane,
                                              Op::template apply<TAcc>(prefix, thread_exclusive), items, ex, starts);
                    }
                } else {
                    const TAcc thread_exclusive = Tile::BScan::scan_down(s_scn[par], lane_exclusive, aggregate);
                    if (threadIdx.x == 0) tile_total<TAcc, Op>(t_scan, num_tiles, prefix, aggregate, d_total);
                    Tile::store(d_out, n, t_scan, vector_ok, scan_slice, warp, lane,
                                Op::template apply<TAcc>(prefix, thread_exclusive), items, ex, starts);
                }
            }
            if (service) {
                if (t_behind < num_tiles)
                    tile_publish_behind<TAcc, Op, Policy::WINDOW>(st, t_behind, num_tiles, seed, has_seed);
                // The next scan's prefix: its words were published rounds ago, so this one L2
                // round trip, which overlaps the next iteration's work, usually finds them all.
                if (k + 1 >= DEPTH) {
                    const i64 t_next = s_ids[(k + 1 - DEPTH) % IDS];
                    if (t_next < num_tiles) poll.issue(st, t_next);
                }
            }
            if (!service) {
                __syncwarp();  // every lane past reading the stage the store went through
                issue_loads(d_in, n, s_ids[(k + LOADS) % IDS], num_tiles, vector_ok, scan_slice, warp, lane, ex,
                            flags_vector_ok);
            }
        }
    }
};

}  // namespace distscan
