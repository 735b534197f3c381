// distscan/kernels/scan_kernels.cu -- the __global__ entry points, templates on the item
// types, the operator and the launch shape; each hands its work to an agent (agent/).  The host
// (distscan/backends/cuda/compile.py) compiles this file with NVRTC through cupy.RawModule and
// picks the instantiations it needs by name expression, e.g.
//   distscan::scan_tiles_kernel<int, long long, long long, distscan::Sum, false, distscan::DEVICE_LOOKBACK,
//                               distscan::TilePolicy<256, 32, 1024, 4, distscan::BLOCK_COARSENED>>
//   distscan::scan_tiles_kernel<float, float, float, distscan::Sum, false, distscan::DEVICE_LOOKAHEAD,
//       distscan::LookaheadPolicy<distscan::TilePolicy<64, 32, 1024, 3, distscan::BLOCK_COARSENED>, 9, 7, 2>>
// (CuPy keeps the compiled module on disk, name expressions included, from CuPy 14.2).
//
// Kernels:
//   scan_tiles_kernel        single-pass scan of a 1-D array (decoupled look-back, or the
//                            domino chain; or each tile alone for "hierarchical"; or the
//                            look-ahead's persistent blocks)
//   add_tile_prefix_kernel   "hierarchical": add each tile's prefix back
//   reduce_partials_kernel   per-block partial reductions (vectorised loads)
//   reduce_final_kernel      one block reduces the partials
//   add_offset_kernel        y[i] = offset op y[i], in place (one column)
//   add_offset_columns_kernel  same with one offset per column of a (n, w) array
//   reduce_column_tiles_kernel, carry_column_tiles_kernel, scan_column_tiles_kernel
//                            the scan of each column of a (n, w) array, w >= 2, in three
//                            coalesced passes (agent_columns.cuh)
//   reduce_state_column_tiles_kernel, scan_state_column_tiles_kernel
//                            the same for reverse scans and state operators
//   scan_ext_kernel          scan_tiles_kernel for reverse scans and state operators
//                            (util/states.cuh): seed and parameter through device memory,
//                            the auxiliary inputs (segment flags, coefficients)
//   reduce_tiles_kernel      ordered reduction, tile by tile (operators that do not commute),
//   reduce_final_ordered_kernel  and its partials folded in order
//
// Launch shape of scan_tiles_kernel (the host picks it per item size):
//   DEVICE   how tiles learn what came before them (agent_scan.cuh: DeviceAlgorithm)
//   Policy   the tile shape, TilePolicy<BLOCK_THREADS, ITEMS, WINDOW, MIN_BLOCKS, BLOCK_ALGO>; for
//            DEVICE_LOOKAHEAD, LookaheadPolicy<TilePolicy<...>, STAGES, DEPTH, BEHIND>, whose
//            blocks are persistent and have a service warp (agent_policy.cuh says what each is)
// The other kernels run REDUCE_THREADS threads per block.
#include "agent/agent_add.cuh"
#include "agent/agent_columns.cuh"
#include "agent/agent_lookahead.cuh"
#include "agent/agent_reduce.cuh"
#include "agent/agent_scan.cuh"
#include "util/states.cuh"

namespace distscan {

// d_in[0, n) -> d_out[0, n); seed folded in before the first item when has_seed;
// d_total (may be null) gets seed op x[0] op ... op x[n-1] in the accumulator type.
// Tile state: see tile_state.cuh (d_launch: its LaunchWord, the same at every launch).  vector_ok: d_in and d_out are
// 16-byte aligned.  The launch bounds: Policy::LAUNCH_THREADS (BLOCK_THREADS, plus the look-ahead's service warp)
// and Policy::MIN_BLOCKS.
template <typename TIn, typename TAcc, typename TOut, typename Op, bool EXCLUSIVE, DeviceAlgorithm DEVICE,
          typename Policy>
__global__ void __launch_bounds__(Policy::LAUNCH_THREADS, Policy::MIN_BLOCKS)
    scan_tiles_kernel(const TIn *d_in, TOut *d_out, i64 n, u64 *d_aggregates, u64 *d_subaggs, u64 *d_anchors,
                      u64 *d_launch, TAcc seed, int has_seed, TAcc *d_total, int vector_ok, i64 lead) {
    static_assert((DEVICE == DEVICE_LOOKAHEAD) == (Policy::SERVICE_THREADS != 0),
                  "DEVICE_LOOKAHEAD takes a LookaheadPolicy, the other device algorithms a TilePolicy");
    if constexpr (DEVICE == DEVICE_LOOKAHEAD) {
        // a persistent block claims until its first id past the end: num_tiles + gridDim.x claims
        TileState st = TileState::begin(d_aggregates, d_subaggs, d_anchors, d_launch,
                                        (u64)((n + Policy::TILE_ITEMS - 1) / Policy::TILE_ITEMS) + gridDim.x);
        AgentLookahead<TIn, TAcc, TOut, Op, EXCLUSIVE, Policy>::run(d_in, d_out, n, st, seed, has_seed != 0, d_total,
                                                                    vector_ok != 0);
        if ((int)(threadIdx.x >> 5) == Policy::WARPS) st.retire();  // the service warp claims
    } else {
        TileState st = TileState::begin(d_aggregates, d_subaggs, d_anchors, d_launch, gridDim.x);  // one claim a block
        AgentScan<TIn, TAcc, TOut, Op, EXCLUSIVE, DEVICE, Policy>::consume(d_in, d_out, n, st, seed, has_seed != 0,
                                                                           d_total, vector_ok != 0, lead);
        if (threadIdx.x < 32) st.retire();  // warp 0 claims
    }
}

// "hierarchical", last step: each tile's prefix added back.
template <typename TOut, typename TAcc, typename Op>
__global__ void __launch_bounds__(REDUCE_THREADS)
    add_tile_prefix_kernel(TOut *d_y, i64 n, i64 tile_items, const TAcc *d_prefix) {
    add_tile_prefix<TOut, TAcc, Op>(d_y, n, tile_items, d_prefix);
}

template <typename TIn, typename TAcc, typename Op>
__global__ void __launch_bounds__(REDUCE_THREADS)
    reduce_partials_kernel(const TIn *d_in, i64 n, TAcc *d_partials, int vector_ok) {
    reduce_partials<TIn, TAcc, Op>(d_in, n, d_partials, vector_ok);
}

template <typename TAcc, typename Op>
__global__ void __launch_bounds__(REDUCE_THREADS) reduce_final_kernel(const TAcc *d_partials, int count, TAcc *d_out) {
    reduce_final<TAcc, Op>(d_partials, count, d_out);
}

template <typename TOut, typename TAcc, typename Op>
__global__ void __launch_bounds__(REDUCE_THREADS) add_offset_kernel(TOut *d_y, i64 n, TAcc offset, int vector_ok) {
    add_offset<TOut, TAcc, Op>(d_y, n, offset, vector_ok);
}

template <typename TOut, typename TAcc, typename Op>
__global__ void __launch_bounds__(REDUCE_THREADS)
    add_offset_columns_kernel(TOut *d_y, i64 n_items, i64 w, const TAcc *d_offsets) {
    add_offset_columns<TOut, TAcc, Op>(d_y, n_items, w, d_offsets);
}

// The scan of (n, w) rows, w >= 2 (agent_columns.cuh): grid (tiles, slabs of COLUMN_TILE_THREADS columns),
// dynamic shared memory (COLUMN_TILE_THREADS + the tile's items) accumulators.
template <typename TIn, typename TAcc, typename Op>
__global__ void __launch_bounds__(COLUMN_TILE_THREADS)
    reduce_column_tiles_kernel(const TIn *d_in, i64 n, i64 w, int run, TAcc *d_agg) {
    reduce_column_tiles<TIn, TAcc, Op>(d_in, n, w, run, d_agg);
}

// grid: one block of CARRY_THREADS a column of c0 .. c0 + gridDim.x (at most CARRY_SEED_COLUMNS where has_seed).
template <typename TAcc, typename Op>
__global__ void __launch_bounds__(CARRY_THREADS)
    carry_column_tiles_kernel(TAcc *d_agg, i64 tiles, i64 w, i64 c0, SeedColumns<TAcc> seeds, int has_seed,
                              TAcc *d_totals) {
    carry_column_tiles<TAcc, Op>(d_agg, tiles, w, c0, seeds, has_seed, d_totals);
}

template <typename TIn, typename TAcc, typename TOut, typename Op, bool EXCLUSIVE>
__global__ void __launch_bounds__(COLUMN_TILE_THREADS)
    scan_column_tiles_kernel(const TIn *d_in, TOut *d_out, i64 n, i64 w, int run, const TAcc *d_prefix) {
    scan_column_tiles<TIn, TAcc, TOut, Op, EXCLUSIVE>(d_in, d_out, n, w, run, d_prefix);
}

// The same three kernels for the extended module (reverse scans, state operators: KIND
// COLUMN_STATES; their tile folds as rows again: COLUMN_LIFTED, TIn = TOut = TAcc), with the
// auxiliary inputs (agent_columns.cuh, ColumnAux; null where absent): d_flags one byte a row,
// d_coef (n, w) coefficients, d_params one state a column.  The carry is carry_column_tiles_kernel.
template <typename TIn, typename TAcc, typename Op, int KIND, bool REVERSE>
__global__ void __launch_bounds__(COLUMN_TILE_THREADS)
    reduce_state_column_tiles_kernel(const TIn *d_in, i64 n, i64 w, int run, TAcc *d_agg,
                                     const unsigned char *d_flags, const void *d_coef) {
    ColumnAux<TAcc> aux = ColumnAux<TAcc>::none();
    aux.flags = d_flags;
    aux.coef = d_coef;
    reduce_column_tiles<TIn, TAcc, Op, KIND, REVERSE>(d_in, n, w, run, d_agg, aux);
}

template <typename TIn, typename TAcc, typename TOut, typename Op, bool EXCLUSIVE, int KIND, bool REVERSE>
__global__ void __launch_bounds__(COLUMN_TILE_THREADS)
    scan_state_column_tiles_kernel(const TIn *d_in, TOut *d_out, i64 n, i64 w, int run, const TAcc *d_prefix,
                                   const unsigned char *d_flags, const void *d_coef, const TAcc *d_params) {
    ColumnAux<TAcc> aux;
    aux.flags = d_flags;
    aux.coef = d_coef;
    aux.params = d_params;
    scan_column_tiles<TIn, TAcc, TOut, Op, EXCLUSIVE, KIND, REVERSE>(d_in, d_out, n, w, run, d_prefix, aux);
}

// scan_tiles_kernel's work for reverse scans (REVERSE) and state operators.  The seed and the
// parameter (the call's initial, which segmented and affine scans project) come by value, as
// scan_tiles_kernel's seed does (the host writes their states' bytes into the launch's
// arguments: no copy to device memory before the launch), each with its flag (0: none); d_flags
// and d_coef are the auxiliary inputs (null: none; coef_vector_ok: d_coef is 16-byte aligned).
template <typename TIn, typename TAcc, typename TOut, typename Op, bool EXCLUSIVE, DeviceAlgorithm DEVICE,
          typename Policy, bool REVERSE>
__global__ void __launch_bounds__(Policy::LAUNCH_THREADS, Policy::MIN_BLOCKS)
    scan_ext_kernel(const TIn *d_in, TOut *d_out, i64 n, u64 *d_aggregates, u64 *d_subaggs, u64 *d_anchors,
                    u64 *d_launch, TAcc seed_value, int seed_given, TAcc *d_total, int vector_ok, i64 lead,
                    const unsigned char *d_flags, const void *d_coef, int coef_vector_ok, TAcc param,
                    int param_given) {
    static_assert((DEVICE == DEVICE_LOOKAHEAD) == (Policy::SERVICE_THREADS != 0),
                  "DEVICE_LOOKAHEAD takes a LookaheadPolicy, the other device algorithms a TilePolicy");
    const bool has_seed = seed_given != 0;
    const TAcc seed = has_seed ? seed_value : Op::template identity<TAcc>();
    Extra<TAcc> ex;
    ex.flags = d_flags;
    ex.coef = d_coef;
    ex.coef_vector_ok = coef_vector_ok != 0;
    ex.has_param = param_given != 0;
    ex.param = ex.has_param ? param : Op::template identity<TAcc>();
    if constexpr (DEVICE == DEVICE_LOOKAHEAD) {
        TileState st = TileState::begin(d_aggregates, d_subaggs, d_anchors, d_launch,
                                        (u64)((n + Policy::TILE_ITEMS - 1) / Policy::TILE_ITEMS) + gridDim.x);
        AgentLookahead<TIn, TAcc, TOut, Op, EXCLUSIVE, Policy, REVERSE>::run(d_in, d_out, n, st, seed, has_seed,
                                                                             d_total, vector_ok != 0, ex);
        if ((int)(threadIdx.x >> 5) == Policy::WARPS) st.retire();
    } else {
        TileState st = TileState::begin(d_aggregates, d_subaggs, d_anchors, d_launch, gridDim.x);
        AgentScan<TIn, TAcc, TOut, Op, EXCLUSIVE, DEVICE, Policy, REVERSE>::consume(
            d_in, d_out, n, st, seed, has_seed, d_total, vector_ok != 0, lead, ex);
        if (threadIdx.x < 32) st.retire();
    }
}

template <typename TIn, typename TAcc, typename Op, typename Policy, bool REVERSE>
__global__ void __launch_bounds__(Policy::BLOCK_THREADS)
    reduce_tiles_kernel(const TIn *d_in, i64 n, i64 per_block, TAcc *d_partials, int vector_ok,
                        const unsigned char *d_flags, const void *d_coef, int coef_vector_ok) {
    Extra<TAcc> ex = no_extra<TAcc>();
    ex.flags = d_flags;
    ex.coef = d_coef;
    ex.coef_vector_ok = coef_vector_ok != 0;
    reduce_tiles<TIn, TAcc, Op, Policy, REVERSE>(d_in, n, per_block, d_partials, vector_ok != 0, ex);
}

template <typename TAcc, typename Op>
__global__ void __launch_bounds__(REDUCE_THREADS)
    reduce_final_ordered_kernel(const TAcc *d_partials, int count, TAcc *d_out) {
    reduce_final_ordered<TAcc, Op>(d_partials, count, d_out);
}

}  // namespace distscan
