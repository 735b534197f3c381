// distscan/kernels/agent/agent_add.cuh -- in-place passes that fold a known prefix into
// scanned items (the distributed carry, one per column, or each tile's prefix for
// "hierarchical"), grid-striding with REDUCE_THREADS threads per block.
#pragma once
#include "../util/operators.cuh"
#include "agent_policy.cuh"

namespace distscan {

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

// "hierarchical", last step: y[i] = prefix[i / tile_items] op y[i] (the exclusive prefix of
// each tile, from the scan of the tile totals), computed in the accumulator type.
template <typename TOut, typename TAcc, typename Op>
__device__ __forceinline__ void add_tile_prefix(TOut *d_y, i64 n, i64 tile_items, const TAcc *d_prefix) {
    const i64 stride = (i64)gridDim.x * REDUCE_THREADS;
    for (i64 i = (i64)blockIdx.x * REDUCE_THREADS + threadIdx.x; i < n; i += stride)
        d_y[i] = Convert<TOut, TAcc>::apply(Op::template apply<TAcc>(d_prefix[i / tile_items],
                                                                     Convert<TAcc, TOut>::apply(d_y[i])));
}

}  // namespace distscan
