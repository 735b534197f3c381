// distscan/kernels/block_scan.cuh -- one block scans one tile held in registers:
// thread (sequential over ITEMS) -> warp (shuffles) -> block (warp totals in shared
// memory).  The result is the block aggregate and, per thread, the exclusive prefix
// of its items inside the tile; the tile's own exclusive prefix (from the look-back)
// is folded in later by the caller.
#pragma once
#include "warp_scan.cuh"

namespace distscan {

template <typename T, typename Op, int BLOCK_THREADS>
struct BlockScan {
    static const int WARPS = BLOCK_THREADS / 32;

    struct TempStorage {
        T warp_totals[WARPS];
    };

    // items[] becomes the inclusive scan of the thread's own items.  Returns the
    // thread's exclusive prefix within the block ((warp prefix) op (lane prefix)) and
    // writes the block aggregate.  Contains one __syncthreads.
    template <int ITEMS>
    static __device__ __forceinline__ T scan(TempStorage &tmp, T (&items)[ITEMS], T &block_aggregate) {
        const int lane = threadIdx.x & 31;
        const int warp = threadIdx.x >> 5;
#pragma unroll
        for (int i = 1; i < ITEMS; ++i) items[i] = Op::template apply<T>(items[i - 1], items[i]);

        T lane_exclusive;
        T warp_inclusive = warp_inclusive_scan<T, Op>(items[ITEMS - 1], lane, lane_exclusive);
        if (lane == 31) tmp.warp_totals[warp] = warp_inclusive;
        __syncthreads();

        // Every thread folds the warp totals in the same fixed order (broadcast reads).
        T running = Op::template identity<T>();
        T warp_exclusive = running;
#pragma unroll
        for (int w = 0; w < WARPS; ++w) {
            if (w == warp) warp_exclusive = running;
            running = Op::template apply<T>(running, tmp.warp_totals[w]);
        }
        block_aggregate = running;
        return Op::template apply<T>(warp_exclusive, lane_exclusive);
    }
};

}  // namespace distscan
