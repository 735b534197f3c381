// distscan/kernels/tile/device_domino.cuh -- "domino": single pass with adjacent
// synchronisation (a chained scan).  Tile t waits for tile t-1's inclusive prefix, folds
// its own aggregate in and publishes its inclusive prefix for tile t+1.  Tile ids come from
// the atomic counter (claim order), so tile t-1 belongs to a block that is already running:
// no deadlock.  The chain is serial: one status-word hop (an L2 round trip) per tile.
// Status words as in tile_state.cuh (epoch-tagged, relaxed .gpu loads and stores).
#pragma once
#include "tile_state.cuh"

namespace distscan {

// Called by all 32 lanes of ONE warp of the block owning `tile`; returns exclusive(tile)
// on every lane.  The last tile writes the total (seed included) to d_total when given.
template <typename T, typename Op>
__device__ __forceinline__ T tile_domino(const TileState &st, i64 tile, i64 num_tiles, T aggregate, T seed,
                                         bool has_seed, T *d_total) {
    typedef StatusWord<T> W;
    const int lane = threadIdx.x & 31;
    T prefix = has_seed ? seed : Op::template identity<T>();
    if (lane == 0) {
        if (tile > 0)
            while (!W::try_load(st.d_aggregates + (tile - 1) * W::K, st.epoch, prefix)) {
            }
        const T inclusive = Op::template apply<T>(prefix, aggregate);
        if (tile < num_tiles - 1)
            W::store(st.d_aggregates + tile * W::K, inclusive, st.epoch);
        else if (d_total != 0)
            *d_total = inclusive;
    }
    return shfl_idx(prefix, 0);
}

}  // namespace distscan
