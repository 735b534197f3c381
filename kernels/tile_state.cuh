// distscan/kernels/tile_state.cuh -- tile status words and the aligned-window
// decoupled look-back.
//
// STATUS WORDS.  A tile publishes a value of accumulator type T as K = ceil(sizeof(T)/4)
// 64-bit words; word k holds (epoch << 32) | (32-bit chunk k of the value).  Each word
// is written exactly once per launch, by one st.relaxed.gpu, and 64-bit accesses are
// single-copy atomic, so a reader that sees the current epoch in a word sees that word's
// final chunk.  A value is valid when ALL its K words carry the current epoch: no torn
// reads (a 16-byte vector access is two 64-bit accesses, and a reader that caught one
// old half sees the old epoch in it and retries).  The epoch is a launch counter kept by
// the host, so the state needs no re-initialisation between launches (zero = "never
// written"; epochs start at 1; the host re-zeroes the words when the counter wraps).
//
// WHY RELAXED IS ENOUGH.  Nothing but the word itself is communicated through it (the
// value is inside the word), so no release/acquire pairing is needed to make other data
// visible.  The .gpu scope is what matters: it makes the store visible to, and the load
// observe, other SMs through L2 (a weak ld could be served from a stale L1 line and spin
// forever; a weak st could sit in L1).  "memory" clobbers stop the compiler from
// caching the loads in registers across spin iterations.
//
// ALIGNED-WINDOW LOOK-BACK (deterministic).  Tiles are grouped in aligned windows of
// WINDOW tiles; tile t = g*WINDOW + j.  Every tile publishes its aggregate agg(t) as soon
// as its block has reduced it; the last tile of each window also publishes the window's
// ANCHOR, the inclusive prefix of tile g*WINDOW + WINDOW - 1.  Tile t computes
//     exclusive(t) = anchor(g-1) op R(agg(gW), ..., agg(t-1))
// where anchor(-1) is the seed (or the identity) and R is a fixed tree: lane l of the
// look-back warp folds the WINDOW/32 slots l*PER ... l*PER+PER-1 in order (slots >= j hold
// the identity), then a butterfly warp reduction combines the lanes.  The tree depends
// only on j, never on which statuses happened to be ready first, so float scans are
// bitwise reproducible.  (A classic look-back stops at the first inclusive prefix it
// finds, so its association depends on timing.)
//
// NO DEADLOCK.  Tile ids come from an atomic counter, so every tile a block waits for was
// claimed earlier by a block that is already running; aggregates are published before any
// waiting; a window's last tile waits only for tiles of its window and the previous anchor,
// which by induction are all published eventually.
#pragma once
#include "warp_scan.cuh"

namespace distscan {

template <typename T>
struct StatusWord {
    static const int K = (int)((sizeof(T) + 3) / 4);  // 64-bit words per value: 1, 2 or 4
    static_assert(K == 1 || K == 2 || K == 4, "accumulator must be 1..16 bytes");

    union Chunks {
        T value;
        unsigned int c[K];
    };

    // Publish `value` at d_words[0..K) for launch `epoch`.
    static __device__ __forceinline__ void store(u64 *d_words, T value, unsigned epoch) {
        Chunks u;
#pragma unroll
        for (int k = 0; k < K; ++k) u.c[k] = 0u;
        u.value = value;
        const u64 hi = (u64)epoch << 32;
        if (K == 1) {
            asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(d_words), "l"(hi | u.c[0]) : "memory");
        } else {
#pragma unroll
            for (int k = 0; k < K; k += 2)
                asm volatile("st.relaxed.gpu.global.v2.u64 [%0], {%1, %2};" ::"l"(d_words + k),
                             "l"(hi | u.c[k]), "l"(hi | u.c[k + 1])
                             : "memory");
        }
    }

    // Try to read the value at d_words; true (and `value` set) if all K words are from
    // launch `epoch`.
    static __device__ __forceinline__ bool try_load(const u64 *d_words, unsigned epoch, T &value) {
        u64 w[K];
        if (K == 1) {
            asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(w[0]) : "l"(d_words) : "memory");
        } else {
#pragma unroll
            for (int k = 0; k < K; k += 2)
                asm volatile("ld.relaxed.gpu.global.v2.u64 {%0, %1}, [%2];"
                             : "=l"(w[k]), "=l"(w[k + 1])
                             : "l"(d_words + k)
                             : "memory");
        }
        bool ok = true;
        Chunks u;
#pragma unroll
        for (int k = 0; k < K; ++k) {
            ok = ok && ((unsigned)(w[k] >> 32) == epoch);
            u.c[k] = (unsigned)w[k];
        }
        if (ok) value = u.value;
        return ok;
    }
};

// The device-wide state of one scan launch (host: distscan/backends/cuda.py sizes it).
struct TileState {
    u64 *d_aggregates;   // [num_tiles * K]  agg(t)
    u64 *d_anchors;      // [num_windows * K] inclusive prefix of each window's last tile
    u64 *d_tile_counter; // monotonically increasing across launches
    u64 counter_base;    // value of *d_tile_counter when this launch started
    unsigned epoch;      // this launch's epoch (>= 1)
};

// Called by all 32 lanes of ONE warp of the block owning `tile`, after the block
// aggregate is known.  Publishes agg(tile) (and the anchor when tile ends a window, and
// the total when tile is the last one) and returns exclusive(tile) on every lane.
template <typename T, typename Op, int WINDOW>
__device__ __forceinline__ T tile_lookback(const TileState &st, i64 tile, i64 num_tiles, T aggregate,
                                           T seed, bool has_seed, T *d_total) {
    static_assert(WINDOW % 32 == 0 && WINDOW >= 32, "WINDOW must be a multiple of 32");
    typedef StatusWord<T> W;
    const int PER = WINDOW / 32;
    const int lane = threadIdx.x & 31;
    const i64 g = tile / WINDOW;
    const int j = (int)(tile - g * WINDOW);
    const bool last_tile = (tile == num_tiles - 1);

    // 1. Publish the aggregate first: later tiles of this window may be waiting for it,
    //    and we never wait before publishing (no deadlock).  The window's last tile needs
    //    no aggregate slot: nobody reads it (its anchor covers it).
    if (lane == 0 && j != WINDOW - 1 && !last_tile) W::store(st.d_aggregates + tile * W::K, aggregate, st.epoch);

    // 2. Wait for agg of slots 0..j-1 of this window and for the previous anchor.
    T vals[PER];
    bool ready[PER];
    const i64 window_base = g * WINDOW;
#pragma unroll
    for (int p = 0; p < PER; ++p) {
        vals[p] = Op::template identity<T>();
        ready[p] = (lane * PER + p) >= j;  // slots at or after j are not needed
    }
    T anchor = has_seed ? seed : Op::template identity<T>();
    bool anchor_ready = (g == 0) || (lane != 0);
    while (true) {
#pragma unroll
        for (int p = 0; p < PER; ++p)
            if (!ready[p]) ready[p] = W::try_load(st.d_aggregates + (window_base + lane * PER + p) * W::K, st.epoch, vals[p]);
        if (!anchor_ready) anchor_ready = W::try_load(st.d_anchors + (g - 1) * W::K, st.epoch, anchor);
        bool mine = anchor_ready;
#pragma unroll
        for (int p = 0; p < PER; ++p) mine = mine && ready[p];
        if (__all_sync(0xffffffffu, mine)) break;
    }

    // 3. Fixed-tree reduction of the window slots (identity in unused slots).
    T lane_sum = vals[0];
#pragma unroll
    for (int p = 1; p < PER; ++p) lane_sum = Op::template apply<T>(lane_sum, vals[p]);
    T window_sum = warp_reduce<T, Op>(lane_sum);
    anchor = shfl_idx(anchor, 0);
    T exclusive = Op::template apply<T>(anchor, window_sum);

    // 4. Publish the anchor (window's last tile) and the total (last tile).
    if (lane == 0 && (j == WINDOW - 1 || last_tile)) {
        T inclusive = Op::template apply<T>(exclusive, aggregate);
        if (j == WINDOW - 1) W::store(st.d_anchors + g * W::K, inclusive, st.epoch);
        if (last_tile && d_total != 0) *d_total = inclusive;
    }
    return exclusive;
}

}  // namespace distscan
