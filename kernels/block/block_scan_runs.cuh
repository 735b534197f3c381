// distscan/kernels/block/block_scan_runs.cuh -- what the shared-memory block scans have in
// common: each thread first scans its own run of ITEMS sequentially (the thread level of
// the hierarchy), so the block algorithm runs over one value per thread, the run total.
#pragma once
#include "../util/operators.cuh"

namespace distscan {

// The thread's run total, the items untouched: applications in order, or the operator's run
// state (Op::RUN_STATE, operators.cuh).
template <typename T, typename Op, int ITEMS>
__device__ __forceinline__ T run_total(const T (&items)[ITEMS]) {
    if constexpr (Op::RUN_STATE) {
        typename Op::template Run<T> r = Op::template run_begin<T>(items[0]);
#pragma unroll
        for (int i = 1; i < ITEMS; ++i) Op::template run_add<T>(r, items[i]);
        return Op::template run_value<T>(r);
    } else {
        T run = items[0];
        by_tameness<Op, T>(all_tame<Op>(items), [&](auto tame) {  // operators.cuh, tames
#pragma unroll
            for (int i = 1; i < ITEMS; ++i) run = apply_run<Op, T, decltype(tame)::value>(run, items[i]);
        });
        return run;
    }
}

// items[] becomes the inclusive scan of the thread's run; returns the run total.  An operator
// with a run state keeps its items as lifted: the store scans them from the thread's prefix
// (tile_agent.cuh), one pass where prefix-then-fold would be two.
template <typename T, typename Op, int ITEMS>
__device__ __forceinline__ T runs_inclusive(T (&items)[ITEMS]) {
    if constexpr (Op::RUN_STATE) {
        return run_total<T, Op, ITEMS>(items);
    } else {
        by_tameness<Op, T>(all_tame<Op>(items), [&](auto tame) {  // operators.cuh, tames
#pragma unroll
            for (int i = 1; i < ITEMS; ++i) items[i] = apply_run<Op, T, decltype(tame)::value>(items[i - 1], items[i]);
        });
        return items[ITEMS - 1];
    }
}

// From the inclusive scan of the run totals in shared memory: the block aggregate, and
// this thread's exclusive prefix.  Ends with a barrier, so the caller may reuse s.
template <typename T, typename Op, int BLOCK_THREADS>
__device__ __forceinline__ T runs_result(const T *s, T &block_aggregate) {
    const int t = threadIdx.x;
    const T exclusive = t > 0 ? s[t - 1] : Op::template identity<T>();
    block_aggregate = s[BLOCK_THREADS - 1];
    __syncthreads();
    return exclusive;
}

// Up-sweep of Brent-Kung and Blelloch: a reduction tree in place over s[0, BLOCK_THREADS);
// afterwards s[k] holds the total of the subtree that ends at k (the root: s[BLOCK_THREADS-1]).
// One barrier per level.
template <typename T, typename Op, int BLOCK_THREADS>
__device__ __forceinline__ void up_sweep(T *s) {
    const int t = threadIdx.x;
#pragma unroll
    for (int d = 1; d < BLOCK_THREADS; d <<= 1) {
        const int k = (t + 1) * 2 * d - 1;
        if (k < BLOCK_THREADS) s[k] = Op::template apply<T>(s[k - d], s[k]);
        __syncthreads();
    }
}

}  // namespace distscan
