// distscan/kernels/block/block_scan_blelloch.cuh -- Blelloch's work-efficient scan over the
// threads' run totals: the same up-sweep as Brent-Kung, then the root is cleared to the
// identity and a down-sweep pushes prefixes to the leaves, which gives the EXCLUSIVE scan
// (inclusive = exclusive op own value).  Work: 2(T-1) ops; depth 2 log2 T steps.
//
//   up:    x0 x01 x2 x0123    clear root: x0 x01 x2 I
//   down:  x0 I x2 x01  ->  I x0 x01 x012           (left child <- parent; right <- parent op left)
#pragma once
#include "block_scan_runs.cuh"

namespace distscan {

template <typename T, typename Op, int BLOCK_THREADS>
struct BlockScanBlelloch {
    struct TempStorage {
        T s[BLOCK_THREADS];
        T total;
    };

    template <int ITEMS>
    static __device__ __forceinline__ T scan(TempStorage &tmp, T (&items)[ITEMS], T &block_aggregate) {
        const int t = threadIdx.x;
        tmp.s[t] = runs_inclusive<T, Op, ITEMS>(items);
        __syncthreads();
        up_sweep<T, Op, BLOCK_THREADS>(tmp.s);
        if (t == 0) {
            tmp.total = tmp.s[BLOCK_THREADS - 1];
            tmp.s[BLOCK_THREADS - 1] = Op::template identity<T>();
        }
        __syncthreads();
#pragma unroll
        for (int d = BLOCK_THREADS / 2; d >= 1; d >>= 1) {  // down-sweep: prefixes move to the leaves
            const int k = (t + 1) * 2 * d - 1;
            if (k < BLOCK_THREADS) {
                const T left = tmp.s[k - d];
                tmp.s[k - d] = tmp.s[k];
                tmp.s[k] = Op::template apply<T>(tmp.s[k], left);
            }
            __syncthreads();
        }
        block_aggregate = tmp.total;
        return tmp.s[t];  // exclusive by nature
    }
};

}  // namespace distscan
