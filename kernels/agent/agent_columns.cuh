// distscan/kernels/agent/agent_columns.cuh -- the scan of a wide (n, w) array, one thread per
// column.
#pragma once
#include "../util/operators.cuh"
#include "agent_policy.cuh"

namespace distscan {

// Scan of each column of a C-contiguous (n, w) array, one thread per column (loads are
// coalesced across the threads of a row).  For wide arrays; narrow ones go column by
// column through scan_tiles_kernel.  d_seeds may be null (has_seed == 0).
template <typename TIn, typename TAcc, typename TOut, typename Op, bool EXCLUSIVE>
__device__ __forceinline__ void scan_columns(const TIn *d_in, TOut *d_out, i64 n, i64 w, const TAcc *d_seeds,
                                             int has_seed, TAcc *d_totals) {
    const i64 c = (i64)blockIdx.x * REDUCE_THREADS + threadIdx.x;
    if (c >= w) return;
    TAcc acc = has_seed ? d_seeds[c] : Op::template identity<TAcc>();
    for (i64 r = 0; r < n; ++r) {
        const TAcc x = Op::template lift<TAcc, TIn>(d_in[r * w + c]);
        if (EXCLUSIVE) {
            d_out[r * w + c] = Convert<TOut, TAcc>::apply(acc);
            acc = Op::template apply<TAcc>(acc, x);
        } else {
            acc = Op::template apply<TAcc>(acc, x);
            d_out[r * w + c] = Convert<TOut, TAcc>::apply(acc);
        }
    }
    if (d_totals != 0) d_totals[c] = acc;
}

}  // namespace distscan
