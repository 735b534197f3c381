// distscan/kernels/block/block_scan_brent_kung.cuh -- Brent-Kung over the threads' run totals:
// a reduction tree up (log2 T steps), then a distribution tree down (log2 T - 1 steps)
// that completes the inclusive prefixes in place.  Work: 2(T-1) - log2 T ops; depth
// 2 log2 T - 1 steps, one barrier each.
//
//   up:    x0 x01 x2 x0123    (pairs, then quads ...)
//   down:  x0 x01 x012 x0123  (each left-over position takes the prefix to its left)
#pragma once
#include "block_scan_runs.cuh"

namespace distscan {

template <typename T, typename Op, int BLOCK_THREADS>
struct BlockScanBrentKung {
    struct TempStorage {
        T s[BLOCK_THREADS];
    };

    template <int ITEMS>
    static __device__ __forceinline__ T scan(TempStorage &tmp, T (&items)[ITEMS], T &block_aggregate) {
        const int t = threadIdx.x;
        tmp.s[t] = runs_inclusive<T, Op, ITEMS>(items);
        __syncthreads();
        up_sweep<T, Op, BLOCK_THREADS>(tmp.s);
#pragma unroll
        for (int d = BLOCK_THREADS / 4; d >= 1; d >>= 1) {  // down-sweep: fill in the right children
            const int k = (t + 1) * 2 * d - 1;
            if (k + d < BLOCK_THREADS) tmp.s[k + d] = Op::template apply<T>(tmp.s[k], tmp.s[k + d]);
            __syncthreads();
        }
        return runs_result<T, Op, BLOCK_THREADS>(tmp.s, block_aggregate);
    }
};

}  // namespace distscan
