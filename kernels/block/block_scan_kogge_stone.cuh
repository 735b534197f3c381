// distscan/kernels/block/block_scan_kogge_stone.cuh -- Hillis-Steele / Kogge-Stone over the
// threads' run totals in shared memory: log2(THREADS) steps; in step d every thread
// combines the value d places before it.  In place, so each step needs two barriers
// (all reads before any write).  Work: THREADS*log2(THREADS) - (THREADS-1) ops.
//
//   x0  x1    x2    x3     (d=1)  x0 x01  x12   x23     (d=2)  x0 x01 x012 x0123
#pragma once
#include "block_scan_runs.cuh"

namespace distscan {

template <typename T, typename Op, int BLOCK_THREADS>
struct BlockScanKoggeStone {
    struct TempStorage {
        T s[BLOCK_THREADS];
    };

    template <int ITEMS>
    static __device__ __forceinline__ T scan(TempStorage &tmp, T (&items)[ITEMS], T &block_aggregate) {
        const int t = threadIdx.x;
        tmp.s[t] = runs_inclusive<T, Op, ITEMS>(items);
        __syncthreads();
#pragma unroll
        for (int d = 1; d < BLOCK_THREADS; d <<= 1) {
            const T before = t >= d ? tmp.s[t - d] : Op::template identity<T>();
            __syncthreads();  // every read of this step before any write
            if (t >= d) tmp.s[t] = Op::template apply<T>(before, tmp.s[t]);
            __syncthreads();
        }
        return runs_result<T, Op, BLOCK_THREADS>(tmp.s, block_aggregate);
    }
};

}  // namespace distscan
