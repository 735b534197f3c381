// distscan/kernels/warp/warp_scan.cuh -- scans and reductions across the 32 lanes of a warp
// with register shuffles.  The association of each result depends only on the lane,
// never on timing, so float results are reproducible.
#pragma once
#include "../util/operators.cuh"

namespace distscan {

// Whether every lane's x is bounded (operators.cuh, bounds), so that folds of them may take
// apply_tame: a vote of the whole warp, false at compile time for operators without bounds.
template <typename T, typename Op> __device__ __forceinline__ bool warp_bounded(const T &x) {
    if constexpr (Op::template bounds<T>()) return __all_sync(0xffffffffu, Op::template bounded<T>(x));
    else return false;
}
// warp_bounded where the data warps vote on bounds (operators.cuh, data_warps_bound), else false
// at compile time
template <typename T, typename Op> __device__ __forceinline__ bool data_warp_bounded(const T &x) {
    if constexpr (data_warps_bound<Op, T>()) return warp_bounded<T, Op>(x);
    else return false;
}

// a op b on a warp's chain of joins: Op::join_warp where the operator has a cheaper join there
// (warp_joins, operators.cuh: the compensated float sum's), whose states warp_close turns back
// into apply's form at the chain's end; else the run's combine (scans) or apply (reductions).
template <typename T, typename Op, bool TAME> __device__ __forceinline__ T warp_scan_join(const T &a, const T &b) {
    if constexpr (Op::template warp_joins<T>()) return Op::template join_warp<T>(a, b);
    else return apply_run<Op, T, TAME>(a, b);
}
template <typename T, typename Op, bool TAME> __device__ __forceinline__ T warp_reduce_join(const T &a, const T &b) {
    if constexpr (Op::template warp_joins<T>()) return Op::template join_warp<T>(a, b);
    else return apply_maybe_tame<Op, T, TAME>(a, b);
}
template <typename T, typename Op> __device__ __forceinline__ T warp_close(const T &x) {
    if constexpr (Op::template warp_joins<T>()) return Op::template close_warp<T>(x);
    else return x;
}

// Inclusive Kogge-Stone scan (5 shuffle steps).  Lane l gets x_0 op ... op x_l;
// `exclusive` gets x_0 op ... op x_{l-1} (the identity on lane 0).
// The lanes' values are run totals in scan order, any identities before every real state (the
// block scan's: a reverse scan pads first), so each step takes the run's combine (operators.cuh,
// apply_run): an identity never stands on the right of a real state here.
// Every lane's value bounded (operators.cuh, bounds; a vote, before the chain): apply_tame serves.
template <typename T, typename Op, bool TAME>
__device__ __forceinline__ T warp_inclusive_scan_by(T x, int lane, T &exclusive) {
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        T up = shfl_up(x, d);
        if (lane >= d) x = warp_scan_join<T, Op, TAME>(up, x);
    }
    x = warp_close<T, Op>(x);
    T prev = shfl_up(x, 1);
    exclusive = (lane == 0) ? Op::template identity<T>() : prev;
    return x;
}
template <typename T, typename Op>
__device__ __forceinline__ T warp_inclusive_scan(T x, int lane, T &exclusive) {
    if (data_warp_bounded<T, Op>(x)) return warp_inclusive_scan_by<T, Op, true>(x, lane, exclusive);
    return warp_inclusive_scan_by<T, Op, false>(x, lane, exclusive);
}

// Two independent warp_inclusive_scan()s in one loop (each value's association as there, bit
// for bit), so that their shuffles and applications interleave: for operators whose application
// is a long dependent chain (max with NaNs, logaddexp, compensated and affine states) the two
// chains overlap instead of running one after the other.  `x_exclusive` and what the lanes hold
// as warp_inclusive_scan's.
template <typename T, typename Op, bool TAME>
__device__ __forceinline__ void warp_inclusive_scan_pair_by(T &x, T &y, int lane, T &x_exclusive) {
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        T up_x = shfl_up(x, d);
        T up_y = shfl_up(y, d);
        if (lane >= d) {
            x = warp_scan_join<T, Op, TAME>(up_x, x);
            y = warp_scan_join<T, Op, TAME>(up_y, y);
        }
    }
    x = warp_close<T, Op>(x);
    y = warp_close<T, Op>(y);
    T prev = shfl_up(x, 1);
    x_exclusive = (lane == 0) ? Op::template identity<T>() : prev;
}
template <typename T, typename Op>
__device__ __forceinline__ void warp_inclusive_scan_pair(T &x, T &y, int lane, T &x_exclusive) {
    if (data_warp_bounded<T, Op>(x) && data_warp_bounded<T, Op>(y)) warp_inclusive_scan_pair_by<T, Op, true>(x, y, lane, x_exclusive);
    else warp_inclusive_scan_pair_by<T, Op, false>(x, y, lane, x_exclusive);
}

// Butterfly reduction: every lane ends with the same value.  For commutative operators, lane
// l and its partner l^m compute a op b and b op a, which agree bit for bit.  For the others
// (state operators) the butterfly runs from m = 1 up, so that each step joins two adjacent
// aligned blocks of lanes, the lower block's value first: lanes 0..31 in order.
// TAME: every lane's value bounded (operators.cuh, bounds): apply_tame serves, the same bits.
template <typename T, typename Op, bool TAME = false>
__device__ __forceinline__ T warp_reduce(T x) {
    if constexpr (Op::COMMUTATIVE) {
#pragma unroll
        for (int m = 16; m >= 1; m >>= 1) {
            T other = shfl_xor(x, m);
            x = Op::template apply<T>(x, other);
        }
    } else {
        const int lane = threadIdx.x & 31;
#pragma unroll
        for (int m = 1; m <= 16; m <<= 1) {
            T other = shfl_xor(x, m);
            x = (lane & m) ? warp_reduce_join<T, Op, TAME>(other, x) : warp_reduce_join<T, Op, TAME>(x, other);
        }
        x = warp_close<T, Op>(x);
    }
    return x;
}

}  // namespace distscan
