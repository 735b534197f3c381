// distscan/kernels/scan_kernels.cu -- thin __global__ entry points, templates on the item
// types, the operator and the tile shape.  The host (distscan/backends/_cuda_compile.py)
// compiles this file with NVRTC through cupy.RawModule and picks the instantiations it
// needs by name expression, e.g.
//   distscan::scan_tiles_kernel<int, long long, long long, distscan::Sum, false, 256, 32, 1024, 4, 0, 0, 0, 0, 0>
// (CuPy keeps the compiled module on disk, name expressions included, from CuPy 14.2).
//
// Kernels:
//   scan_tiles_kernel        single-pass scan of a 1-D array (decoupled look-back, or the
//                            domino chain; or each tile alone for "hierarchical")
//   add_tile_prefix_kernel   "hierarchical": add each tile's prefix back
//   reduce_partials_kernel   per-block partial reductions (vectorised loads)
//   reduce_final_kernel      one block reduces the partials
//   add_offset_kernel        y[i] = offset op y[i], in place (one column)
//   add_offset_columns_kernel  same with one offset per column of a (n, w) array
//   scan_columns_kernel      one thread per column of a (n, w) array (for wide w)
//
// Tile shape (template arguments of scan_tiles_kernel; the host picks them per item size):
//   BLOCK_THREADS  threads per scan block
//   ITEMS          items per thread (ITEMS * sizeof(item) must be a multiple of 16)
//   WINDOW         look-back window in tiles, 32 * (1..32)
//   MIN_BLOCKS     scan blocks per SM the register allocation must allow
//   BLOCK_ALGO     the scan inside a tile (block_scan.cuh: BlockAlgorithm)
//   DEVICE         how tiles learn what came before them (agent_scan.cuh: DeviceAlgorithm)
//   STAGES, DEPTH  "lookahead" only: shared-memory stages per block, and how many of its own
//                  tiles a block reduces ahead of its scan (STAGES - DEPTH tiles' loads in
//                  flight); the launch gives AgentLookahead::SMEM_BYTES of dynamic shared
//                  memory and a persistent grid of BLOCK_THREADS + 32 threads per block (a service
//                  warp); the other strategies launch one block of BLOCK_THREADS per tile
//   BEHIND         "lookahead" only: how the service warp publishes window words
//                  (agent_lookahead.cuh); 0 for the other strategies
#include "agent/agent_lookahead.cuh"
#include "agent/agent_scan.cuh"

namespace distscan {

// Threads per block of the reduce, add and column kernels.
constexpr int REDUCE_THREADS = 256;

// Block-wide reduction in a fixed order: lanes (butterfly), then warps in order.
template <typename T, typename Op>
__device__ __forceinline__ T block_reduce(T x) {
    __shared__ T s_warps[REDUCE_THREADS / 32];
    x = warp_reduce<T, Op>(x);
    if ((threadIdx.x & 31) == 0) s_warps[threadIdx.x >> 5] = x;
    __syncthreads();
    T r = s_warps[0];
#pragma unroll
    for (int w = 1; w < REDUCE_THREADS / 32; ++w) r = Op::template apply<T>(r, s_warps[w]);
    return r;  // valid in every thread
}

template <typename TIn, typename TAcc, typename Op>
__device__ __forceinline__ TAcc fold_vector(TAcc acc, uint4 v) {
    const int VEC = 16 / (int)sizeof(TIn);
    union {
        uint4 v;
        TIn t[VEC];
    } u;
    u.v = v;
#pragma unroll
    for (int i = 0; i < VEC; ++i) acc = Op::template apply<TAcc>(acc, Convert<TAcc, TIn>::apply(u.t[i]));
    return acc;
}

// Each block grid-strides over 16-byte vectors (four loads in flight per thread) and
// writes one partial.  The association depends only on n and gridDim, so float
// reductions are reproducible for a given n and GPU.  No atomics.
template <typename TIn, typename TAcc, typename Op>
__device__ __forceinline__ void reduce_partials(const TIn *d_in, i64 n, TAcc *d_partials, int vector_ok) {
    const i64 tid = (i64)blockIdx.x * REDUCE_THREADS + threadIdx.x;
    const i64 stride = (i64)gridDim.x * REDUCE_THREADS;
    TAcc acc = Op::template identity<TAcc>();
    i64 first_scalar = 0;
    if (vector_ok && sizeof(TIn) <= 16) {
        const int VEC = 16 / (int)sizeof(TIn);
        const i64 nv = n / VEC;
        const uint4 *src = reinterpret_cast<const uint4 *>(d_in);
        i64 v = tid;
        for (; v + 3 * stride < nv; v += 4 * stride) {
            uint4 a = __ldcs(src + v), b = __ldcs(src + v + stride), c = __ldcs(src + v + 2 * stride),
                  d = __ldcs(src + v + 3 * stride);
            acc = fold_vector<TIn, TAcc, Op>(acc, a);
            acc = fold_vector<TIn, TAcc, Op>(acc, b);
            acc = fold_vector<TIn, TAcc, Op>(acc, c);
            acc = fold_vector<TIn, TAcc, Op>(acc, d);
        }
        for (; v < nv; v += stride) acc = fold_vector<TIn, TAcc, Op>(acc, __ldcs(src + v));
        first_scalar = nv * VEC;
    }
    for (i64 i = first_scalar + tid; i < n; i += stride) acc = Op::template apply<TAcc>(acc, Convert<TAcc, TIn>::apply(d_in[i]));
    TAcc r = block_reduce<TAcc, Op>(acc);
    if (threadIdx.x == 0) d_partials[blockIdx.x] = r;
}

// One block: d_out[0] = d_partials[0] op ... op d_partials[count-1] (fixed order per count).
template <typename TAcc, typename Op>
__device__ __forceinline__ void reduce_final(const TAcc *d_partials, int count, TAcc *d_out) {
    TAcc acc = Op::template identity<TAcc>();
    for (int i = threadIdx.x; i < count; i += REDUCE_THREADS) acc = Op::template apply<TAcc>(acc, d_partials[i]);
    TAcc r = block_reduce<TAcc, Op>(acc);
    if (threadIdx.x == 0) d_out[0] = r;
}

// y[i] = offset op y[i] for i in [0, n), in place, computed in the accumulator type.
template <typename TOut, typename TAcc, typename Op>
__device__ __forceinline__ void add_offset(TOut *d_y, i64 n, TAcc offset, int vector_ok) {
    const i64 tid = (i64)blockIdx.x * REDUCE_THREADS + threadIdx.x;
    const i64 stride = (i64)gridDim.x * REDUCE_THREADS;
    i64 first_scalar = 0;
    if (vector_ok && sizeof(TOut) <= 16) {
        const int VEC = 16 / (int)sizeof(TOut);
        const i64 nv = n / VEC;
        uint4 *p = reinterpret_cast<uint4 *>(d_y);
        for (i64 v = tid; v < nv; v += stride) {
            union {
                uint4 v;
                TOut t[VEC];
            } u;
            u.v = p[v];
#pragma unroll
            for (int i = 0; i < VEC; ++i)
                u.t[i] = Convert<TOut, TAcc>::apply(Op::template apply<TAcc>(offset, Convert<TAcc, TOut>::apply(u.t[i])));
            p[v] = u.v;
        }
        first_scalar = nv * VEC;
    }
    for (i64 i = first_scalar + tid; i < n; i += stride)
        d_y[i] = Convert<TOut, TAcc>::apply(Op::template apply<TAcc>(offset, Convert<TAcc, TOut>::apply(d_y[i])));
}

// y[i, c] = offsets[c] op y[i, c] for a C-contiguous (n_rows, w) array of n_items items.
template <typename TOut, typename TAcc, typename Op>
__device__ __forceinline__ void add_offset_columns(TOut *d_y, i64 n_items, i64 w, const TAcc *d_offsets) {
    const i64 stride = (i64)gridDim.x * REDUCE_THREADS;
    for (i64 i = (i64)blockIdx.x * REDUCE_THREADS + threadIdx.x; i < n_items; i += stride)
        d_y[i] = Convert<TOut, TAcc>::apply(Op::template apply<TAcc>(d_offsets[i % w], Convert<TAcc, TOut>::apply(d_y[i])));
}

// Scan of each column of a C-contiguous (n, w) array, one thread per column (loads are
// coalesced across the threads of a row).  For wide arrays; narrow ones go column by
// column through scan_tiles_kernel.  d_seeds may be null (has_seed == 0).
template <typename TIn, typename TAcc, typename TOut, typename Op, bool EXCLUSIVE>
__device__ __forceinline__ void scan_columns(const TIn *d_in, TOut *d_out, i64 n, i64 w, const TAcc *d_seeds,
                                             int has_seed, TAcc *d_totals) {
    const i64 c = (i64)blockIdx.x * REDUCE_THREADS + threadIdx.x;
    if (c >= w) return;
    TAcc acc = has_seed ? d_seeds[c] : Op::template identity<TAcc>();
    for (i64 r = 0; r < n; ++r) {
        const TAcc x = Convert<TAcc, TIn>::apply(d_in[r * w + c]);
        if (EXCLUSIVE) {
            d_out[r * w + c] = Convert<TOut, TAcc>::apply(acc);
            acc = Op::template apply<TAcc>(acc, x);
        } else {
            acc = Op::template apply<TAcc>(acc, x);
            d_out[r * w + c] = Convert<TOut, TAcc>::apply(acc);
        }
    }
    if (d_totals != 0) d_totals[c] = acc;
}

// ---------------------------------------------------------------------------------------
// Entry points
// ---------------------------------------------------------------------------------------

// d_in[0, n) -> d_out[0, n); seed folded in before the first item when has_seed;
// d_total (may be null) gets seed op x[0] op ... op x[n-1] in the accumulator type.
// Tile state: see tile_state.cuh (d_launch: its LaunchWord, the same at every launch).  vector_ok: d_in and d_out are 16-byte aligned.
template <typename TIn, typename TAcc, typename TOut, typename Op, bool EXCLUSIVE, int BLOCK_THREADS, int ITEMS,
          int WINDOW, int MIN_BLOCKS, int BLOCK_ALGO, int DEVICE, int STAGES, int DEPTH, int BEHIND>
__global__ void __launch_bounds__(DEVICE == DEVICE_LOOKAHEAD ? BLOCK_THREADS + LOOKAHEAD_SERVICE_THREADS : BLOCK_THREADS, MIN_BLOCKS)
    scan_tiles_kernel(const TIn *d_in, TOut *d_out, i64 n, u64 *d_aggregates, u64 *d_subaggs, u64 *d_anchors,
                      u64 *d_launch, TAcc seed, int has_seed, TAcc *d_total, int vector_ok, i64 lead) {
    if constexpr (DEVICE == DEVICE_LOOKAHEAD) {
        typedef AgentLookahead<TIn, TAcc, TOut, Op, EXCLUSIVE, BLOCK_THREADS, ITEMS, WINDOW, BLOCK_ALGO, STAGES, DEPTH,
                               BEHIND>
            Agent;
        // a persistent block claims until its first id past the end: num_tiles + gridDim.x claims
        TileState st = TileState::begin(d_aggregates, d_subaggs, d_anchors, d_launch,
                                        (u64)((n + Agent::TILE_ITEMS - 1) / Agent::TILE_ITEMS) + gridDim.x);
        Agent::run(d_in, d_out, n, st, seed, has_seed != 0, d_total, vector_ok != 0);
        if ((int)(threadIdx.x >> 5) == BLOCK_THREADS / 32) st.retire();  // the service warp claims
    } else {
        TileState st = TileState::begin(d_aggregates, d_subaggs, d_anchors, d_launch, gridDim.x);  // one claim a block
        AgentScan<TIn, TAcc, TOut, Op, EXCLUSIVE, BLOCK_THREADS, ITEMS, WINDOW, BLOCK_ALGO, DEVICE>::consume(
            d_in, d_out, n, st, seed, has_seed != 0, d_total, vector_ok != 0, lead);
        if (threadIdx.x < 32) st.retire();  // warp 0 claims
    }
}
// "hierarchical", last step: y[i] = prefix[i / tile_items] op y[i] (the exclusive prefix of
// each tile, from the scan of the tile totals), computed in the accumulator type.
template <typename TOut, typename TAcc, typename Op>
__global__ void __launch_bounds__(REDUCE_THREADS)
    add_tile_prefix_kernel(TOut *d_y, i64 n, i64 tile_items, const TAcc *d_prefix) {
    const i64 stride = (i64)gridDim.x * REDUCE_THREADS;
    for (i64 i = (i64)blockIdx.x * REDUCE_THREADS + threadIdx.x; i < n; i += stride)
        d_y[i] = Convert<TOut, TAcc>::apply(Op::template apply<TAcc>(d_prefix[i / tile_items],
                                                                     Convert<TAcc, TOut>::apply(d_y[i])));
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
template <typename TIn, typename TAcc, typename TOut, typename Op, bool EXCLUSIVE>
__global__ void __launch_bounds__(REDUCE_THREADS)
    scan_columns_kernel(const TIn *d_in, TOut *d_out, i64 n, i64 w, const TAcc *d_seeds, int has_seed, TAcc *d_totals) {
    scan_columns<TIn, TAcc, TOut, Op, EXCLUSIVE>(d_in, d_out, n, w, d_seeds, has_seed, d_totals);
}

}  // namespace distscan

#ifndef DISTSCAN_NVRTC
// Standalone build (nvcc -arch=sm_90 -c scan_kernels.cu): a few instantiations, so that
// the compiler checks the templates and `-Xptxas -v` reports registers and spills.
namespace distscan {
template __global__ void scan_tiles_kernel<int, int, int, Sum, false, 256, 32, 1024, 4, 0, 0, 0, 0, 0>(
    const int *, int *, i64, u64 *, u64 *, u64 *, u64 *, int, int, int *, int, i64);
template __global__ void scan_tiles_kernel<float, float, float, Sum, true, 256, 32, 1024, 4, 0, 0, 0, 0, 0>(
    const float *, float *, i64, u64 *, u64 *, u64 *, u64 *, float, int, float *, int, i64);
template __global__ void scan_tiles_kernel<double, double, double, Max, false, 256, 16, 1024, 3, 0, 0, 0, 0, 0>(
    const double *, double *, i64, u64 *, u64 *, u64 *, u64 *, double, int, double *, int, i64);
template __global__ void scan_tiles_kernel<signed char, long long, long long, Sum, false, 256, 16, 1024, 3, 0, 0, 0, 0, 0>(
    const signed char *, long long *, i64, u64 *, u64 *, u64 *, u64 *, long long, int, long long *, int, i64);
template __global__ void scan_tiles_kernel<Complex<float>, Complex<float>, Complex<float>, Prod, true, 256, 16, 1024, 3, 0, 0, 0, 0, 0>(
    const Complex<float> *, Complex<float> *, i64, u64 *, u64 *, u64 *, u64 *, Complex<float>, int,
    Complex<float> *, int, i64);
template __global__ void scan_tiles_kernel<int, bool, bool, LogicalXor, false, 256, 32, 1024, 4, 0, 0, 0, 0, 0>(
    const int *, bool *, i64, u64 *, u64 *, u64 *, u64 *, bool, int, bool *, int, i64);
template __global__ void scan_tiles_kernel<int, int, int, Sum, false, 256, 32, 1024, 4, 1, 1, 0, 0, 0>(
    const int *, int *, i64, u64 *, u64 *, u64 *, u64 *, int, int, int *, int, i64);
template __global__ void scan_tiles_kernel<double, double, double, Sum, true, 256, 16, 1024, 3, 4, 2, 0, 0, 0>(
    const double *, double *, i64, u64 *, u64 *, u64 *, u64 *, double, int, double *, int, i64);
template __global__ void scan_tiles_kernel<float, float, float, Max, false, 256, 32, 1024, 4, 3, 0, 0, 0, 0>(
    const float *, float *, i64, u64 *, u64 *, u64 *, u64 *, float, int, float *, int, i64);
template __global__ void scan_tiles_kernel<long long, long long, long long, Sum, false, 256, 16, 1024, 3, 2, 0, 0, 0, 0>(
    const long long *, long long *, i64, u64 *, u64 *, u64 *, u64 *, long long, int, long long *, int, i64);
template __global__ void scan_tiles_kernel<int, int, int, Sum, false, 256, 32, 1024, 2, 0, 3, 4, 2, 1>(
    const int *, int *, i64, u64 *, u64 *, u64 *, u64 *, int, int, int *, int, i64);
template __global__ void scan_tiles_kernel<double, double, double, Sum, true, 256, 16, 1024, 2, 0, 3, 4, 2, 1>(
    const double *, double *, i64, u64 *, u64 *, u64 *, u64 *, double, int, double *, int, i64);
template __global__ void scan_tiles_kernel<signed char, long long, long long, Sum, false, 256, 16, 1024, 2, 0, 3, 4, 2, 2>(
    const signed char *, long long *, i64, u64 *, u64 *, u64 *, u64 *, long long, int, long long *, int, i64);
template __global__ void add_tile_prefix_kernel<float, float, Sum>(float *, i64, i64, const float *);
template __global__ void reduce_partials_kernel<float, float, Sum>(const float *, i64, float *, int);
template __global__ void reduce_final_kernel<float, Sum>(const float *, int, float *);
template __global__ void add_offset_kernel<long long, long long, Sum>(long long *, i64, long long, int);
template __global__ void add_offset_columns_kernel<double, double, Min>(double *, i64, i64, const double *);
template __global__ void scan_columns_kernel<int, long long, long long, BitXor, true>(const int *, long long *, i64,
                                                                                     i64, const long long *, int,
                                                                                     long long *);
}  // namespace distscan
#endif
