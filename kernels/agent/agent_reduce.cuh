// distscan/kernels/agent/agent_reduce.cuh -- the reduction of a 1-D array in two kernels:
// per-block partials (reduce_partials_kernel), then one block over the partials
// (reduce_final_kernel).  REDUCE_THREADS threads per block, no atomics, a fixed association.
#pragma once
#include "../tile/tile_agent.cuh"
#include "../warp/warp_scan.cuh"
#include "agent_policy.cuh"

namespace distscan {

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
    for (int i = 0; i < VEC; ++i) acc = Op::template apply<TAcc>(acc, Op::template lift<TAcc, TIn>(u.t[i]));
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
    for (i64 i = first_scalar + tid; i < n; i += stride) acc = Op::template apply<TAcc>(acc, Op::template lift<TAcc, TIn>(d_in[i]));
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

// Op::RESTARTS where the operator declares it (util/states.cuh: StateOpBase), else false.
template <typename Op, typename = void> struct Restarts {
    static constexpr bool value = false;
};
template <typename Op> struct Restarts<Op, decltype(void(Op::RESTARTS))> {
    static constexpr bool value = Op::RESTARTS;
};

// ---- ordered reductions: operators that are not commutative (state operators), in scan order --
// Block b reduces the tiles [b * per_block, (b + 1) * per_block) of the scan order, each loaded
// and reduced as the scan kernel does (coalesced, through shared memory; REVERSE mirrored), and
// folds their aggregates in order into d_partials[b]; reduce_final_ordered folds the partials
// in order.  The association depends on n, the tile shape and per_block only.
//
// Segmented states (Restarts): the block folds its run from the last tile back, each aggregate
// on the left of what it holds, and stops at the first that holds a segment start: r . s is s
// for any r then (util/states.cuh: restarts), so the tiles before it cannot change the partial.
// A segmented part's carry then reads about one tile a block where flags are a tile or so apart
// (2 GPUs, 2^28 items a part: benchmarks/RESULTS.md, "A segmented part's carry from its last
// segment"), and every tile, as before, where none is flagged.  The fold starts from the last
// tile's aggregate, not the identity: no identity stands on the right of a state.
template <typename TIn, typename TAcc, typename Op, typename Policy, bool REVERSE>
__device__ __forceinline__ void reduce_tiles(const TIn *d_in, i64 n, i64 per_block, TAcc *d_partials, bool vector_ok,
                                             const Extra<TAcc> &ex) {
    typedef TileAgent<TIn, TAcc, TIn, Op, false, Policy, false, REVERSE> Tile;  // nothing is written: TOut only sizes the slices
    __shared__ __align__(16) char s_io[Policy::WARPS * Tile::IO_BYTES];
    __shared__ typename Tile::BScan::TempStorage s_scan;
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    char *smem = s_io + warp * Tile::IO_BYTES;
    const i64 num_tiles = (n + Policy::TILE_ITEMS - 1) / Policy::TILE_ITEMS;
    const i64 first = (i64)blockIdx.x * per_block;
    const i64 last = first + per_block < num_tiles ? first + per_block : num_tiles;
    // one tile's aggregate (valid in thread 0), its loads and block scan as the scan kernel's
    auto aggregate_of = [&](i64 tile) {
        TAcc items[Policy::ITEMS];
        unsigned starts;
        Tile::template load_items<false>(d_in, n, tile, vector_ok, smem, warp, lane, ex, items, starts);
        Tile::BScan::reduce_up(s_scan, items);
        __syncthreads();
        TAcc aggregate;
        Tile::BScan::scan_down(s_scan, Op::template identity<TAcc>(), aggregate);
        return aggregate;
    };
    TAcc acc = Op::template identity<TAcc>();
    if constexpr (Restarts<Op>::value) {
        __shared__ int s_restarted;
        for (i64 tile = last - 1; tile >= first; --tile) {
            const TAcc aggregate = aggregate_of(tile);
            if (threadIdx.x == 0) {
                acc = tile == last - 1 ? aggregate : Op::template apply<TAcc>(aggregate, acc);
                s_restarted = Op::restarts(acc);
            }
            __syncthreads();  // s_io and s_scan are free for the next tile; s_restarted is written
            if (s_restarted) break;  // read before the next tile's first barrier, after which thread 0 writes it
        }
    } else {
        for (i64 tile = first; tile < last; ++tile) {
            acc = Op::template apply<TAcc>(acc, aggregate_of(tile));
            __syncthreads();  // s_io and s_scan are free for the next tile
        }
    }
    if (threadIdx.x == 0) d_partials[blockIdx.x] = acc;
}

// One block: d_out[0] = d_partials[0] op ... op d_partials[count-1], each thread folding a
// contiguous run of partials, then the runs in order (block_reduce's warp_reduce is ordered
// for these operators).  The runs end at count, so that the idle threads' identities stand on
// the left of the partials: a reverse state's identity is exact there alone (util/states.cuh:
// on the right it reset a segment's end, and the carry of a part whose first row is flagged
// lost it).
template <typename TAcc, typename Op>
__device__ __forceinline__ void reduce_final_ordered(const TAcc *d_partials, int count, TAcc *d_out) {
    const int per = (count + REDUCE_THREADS - 1) / REDUCE_THREADS;
    const int end = count - (REDUCE_THREADS - 1 - (int)threadIdx.x) * per;
    const int begin = end - per > 0 ? end - per : 0;
    TAcc acc = Op::template identity<TAcc>();
    for (int i = begin; i < end; ++i) acc = Op::template apply<TAcc>(acc, d_partials[i]);
    TAcc r = block_reduce<TAcc, Op>(acc);
    if (threadIdx.x == 0) d_out[0] = r;
}

}  // namespace distscan
