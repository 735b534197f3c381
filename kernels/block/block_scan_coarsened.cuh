// distscan/kernels/block/block_scan_coarsened.cuh -- "coarsened" (the default): three phases.
// Each thread scans its own run of ITEMS sequentially; the run totals are scanned by
// warp shuffles (Kogge-Stone over 32 lanes, no shared memory) and the warp totals in
// shared memory; each thread's run gets its offset.  One __syncthreads per tile.
// Work: n ops in the runs + 32*5 - 31 per warp + WARPS per thread; depth: ITEMS + 5 + WARPS.
#pragma once
#include "../warp/warp_scan.cuh"
#include "block_scan_runs.cuh"

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
        const T lane_exclusive = scan_up(tmp, items);
        __syncthreads();
        return scan_down(tmp, lane_exclusive, block_aggregate);
    }

    // scan() in two halves around a barrier that the caller places, so that several tiles can
    // share one (agent_lookahead.cuh).  scan_up: the thread's and the warp's part; returns the
    // lane's exclusive prefix within its warp.
    template <int ITEMS>
    static __device__ __forceinline__ T scan_up(TempStorage &tmp, T (&items)[ITEMS]) {
        return warp_part(tmp, runs_inclusive<T, Op, ITEMS>(items));
    }

    // scan_up for a thread whose run total the caller folded (the look-ahead's RESCAN, whose
    // scan of the run comes later: tile_agent.cuh, run_total_bits).
    static __device__ __forceinline__ T scan_up_total(TempStorage &tmp, const T &run_total) {
        return warp_part(tmp, run_total);
    }

    // The block aggregate alone: the same association as scan()'s, the items untouched.
    template <int ITEMS>
    static __device__ __forceinline__ void reduce_up(TempStorage &tmp, const T (&items)[ITEMS]) {
        warp_part(tmp, run_total<T, Op, ITEMS>(items));
    }

    // scan_up(scan_tmp, items) and reduce_up(red_tmp, red) of two tiles at once, each bit for bit
    // as alone: one loop carries both runs' dependent chains, and one warp scan both run totals,
    // so that the two chains' latencies overlap (the look-ahead kernel's steady state, where a
    // warp scans one tile and reduces another in the same iteration).  Returns scan_up's value.
    template <int ITEMS>
    static __device__ __forceinline__ T scan_up_reduce_up(TempStorage &scan_tmp, T (&items)[ITEMS],
                                                          TempStorage &red_tmp, const T (&red)[ITEMS]) {
        T scan_total, run;
        if constexpr (Op::RUN_STATE) {  // both runs' states, the items kept as lifted (runs_inclusive)
            typename Op::template Run<T> a = Op::template run_begin<T>(items[0]);
            typename Op::template Run<T> b = Op::template run_begin<T>(red[0]);
#pragma unroll
            for (int i = 1; i < ITEMS; ++i) {
                Op::template run_add<T>(a, items[i]);
                Op::template run_add<T>(b, red[i]);
            }
            scan_total = Op::template run_value<T>(a);
            run = Op::template run_value<T>(b);
        } else {
            run = red[0];
            by_tameness<Op, T>(all_tame<Op>(items) & all_tame<Op>(red), [&](auto tame) {  // operators.cuh, tames
                constexpr bool TAME = decltype(tame)::value;
#pragma unroll
                for (int i = 1; i < ITEMS; ++i) {
                    items[i] = apply_run<Op, T, TAME>(items[i - 1], items[i]);
                    run = apply_run<Op, T, TAME>(run, red[i]);
                }
            });
            scan_total = items[ITEMS - 1];
        }
        const int lane = threadIdx.x & 31;
        T lane_exclusive;
        warp_inclusive_scan_pair<T, Op>(scan_total, run, lane, lane_exclusive);
        if (lane == 31) {
            scan_tmp.warp_totals[threadIdx.x >> 5] = scan_total;
            red_tmp.warp_totals[threadIdx.x >> 5] = run;
        }
        return lane_exclusive;
    }

    // After the barrier: the thread's exclusive prefix within the block, and the aggregate.
    // Every thread folds the warp totals in the same fixed order (broadcast reads), with the
    // run's combine (apply_run: the totals' identities come first, a reverse scan padding first);
    // lane_exclusive is lane 0's identity, on the right of a real state, so the last takes apply.
    static __device__ __forceinline__ T scan_down(const TempStorage &tmp, T lane_exclusive, T &block_aggregate) {
        const int warp = threadIdx.x >> 5;
        T running = Op::template identity<T>();
        T warp_exclusive = running;
        // the warp totals bounded (operators.cuh, bounds): the fold without the rule's tests
        by_bounds<Op, T>(tmp.warp_totals, [&](auto tame) {
#pragma unroll
            for (int w = 0; w < WARPS; ++w) {
                if (w == warp) warp_exclusive = running;
                running = apply_run<Op, T, decltype(tame)::value>(running, tmp.warp_totals[w]);
            }
        });
        block_aggregate = running;
        if constexpr (data_warps_bound<Op, T>()) return apply_if_bounded<Op, T>(warp_exclusive, lane_exclusive);
        else return Op::template apply<T>(warp_exclusive, lane_exclusive);
    }

  private:
    // Kogge-Stone over the lanes' run totals; lane 31 writes the warp's total.
    static __device__ __forceinline__ T warp_part(TempStorage &tmp, T run_total) {
        const int lane = threadIdx.x & 31;
        T lane_exclusive;
        const T warp_inclusive = warp_inclusive_scan<T, Op>(run_total, lane, lane_exclusive);
        if (lane == 31) tmp.warp_totals[threadIdx.x >> 5] = warp_inclusive;
        return lane_exclusive;
    }
};

}  // namespace distscan
