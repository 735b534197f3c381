// distscan/kernels/block/block_scan_kogge_stone_double_buffer.cuh -- Kogge-Stone reading one
// buffer and writing the other: the same log2(THREADS) steps and work as in place, but
// one barrier per step (no thread writes what another still has to read this step).
//
//   buf0: x0 x1  x2  x3   ->  buf1: x0 x01 x12  x23   ->  buf0: x0 x01 x012 x0123
#pragma once
#include "block_scan_runs.cuh"

namespace distscan {

template <typename T, typename Op, int BLOCK_THREADS>
struct BlockScanKoggeStoneDoubleBuffer {
    struct TempStorage {
        T s[2][BLOCK_THREADS];
    };

    template <int ITEMS>
    static __device__ __forceinline__ T scan(TempStorage &tmp, T (&items)[ITEMS], T &block_aggregate) {
        const int t = threadIdx.x;
        int src = 0;
        tmp.s[0][t] = runs_inclusive<T, Op, ITEMS>(items);
        __syncthreads();
#pragma unroll
        for (int d = 1; d < BLOCK_THREADS; d <<= 1) {
            const T mine = tmp.s[src][t];
            tmp.s[src ^ 1][t] = t >= d ? Op::template apply<T>(tmp.s[src][t - d], mine) : mine;
            src ^= 1;
            __syncthreads();
        }
        return runs_result<T, Op, BLOCK_THREADS>(tmp.s[src], block_aggregate);
    }
};

}  // namespace distscan
