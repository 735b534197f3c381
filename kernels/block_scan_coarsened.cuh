// distscan/kernels/block_scan_coarsened.cuh -- "coarsened" (the default): three phases.
// Each thread scans its own run of ITEMS sequentially; the run totals are scanned by
// warp shuffles (Kogge-Stone over 32 lanes, no shared memory) and the warp totals in
// shared memory; each thread's run gets its offset.  One __syncthreads per tile.
// Work: n ops in the runs + 32*5 - 31 per warp + WARPS per thread; depth: ITEMS + 5 + WARPS.
#pragma once
#include "warp_scan.cuh"

namespace distscan {

template <typename T, typename Op, int BLOCK_THREADS>
struct BlockScanCoarsened {
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
