// distscan/kernels/agent/agent_reduce.cuh -- the reduction of a 1-D array in two kernels:
// per-block partials (reduce_partials_kernel), then one block over the partials
// (reduce_final_kernel).  REDUCE_THREADS threads per block, no atomics, a fixed association.
#pragma once
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

}  // namespace distscan
