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
// TWO-LEVEL ALIGNED-WINDOW LOOK-BACK (deterministic).  Tiles are grouped in aligned
// SUB-WINDOWS of 32 tiles (one lane per tile) and WINDOWS of WINDOW = 32*SUBS tiles
// (SUBS <= 32 sub-windows, one lane per sub-window).  Tile t = g*WINDOW + s*32 + j:
//   * publishes agg(t) as soon as its block has reduced it (j < 31);
//   * phase 1: reads agg of the j tiles before it in its sub-window and folds them with a
//     fixed butterfly tree -> in_sub(t).  A sub-window's last tile (j == 31) then publishes
//     SUBAGG(g, s) = in_sub(t) op agg(t), the sub-window's total.  Phase 1 waits for
//     nothing but aggregates, so sub-window totals never wait for the chain.
//   * phase 2: reads SUBAGG(g, 0..s-1) and ANCHOR(g-1) (the inclusive prefix of the
//     previous window's last tile; the seed or the identity for g == 0) and returns
//         exclusive(t) = (ANCHOR(g-1) op R(SUBAGG(g, 0..s-1))) op in_sub(t)
//     with R the same fixed tree.  The window's last tile publishes ANCHOR(g).
// The association depends only on t, never on which statuses happened to be ready first,
// so float scans are bitwise reproducible.  (A classic look-back stops at the first
// inclusive prefix it finds, so its association depends on timing.)  Each tile reads at
// most 2 words per lane, and the only serial chain is one ANCHOR hop per WINDOW tiles.
//
// NO DEADLOCK.  Tile ids come from an atomic counter, so every tile a block waits for was
// claimed earlier by a block that is already running.  Aggregates are published before any
// waiting; sub-window totals wait only for aggregates; anchors wait only for sub-window
// totals and the previous anchor, so by induction everything waited for is published.
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
    u64 *d_aggregates;   // [num_tiles * K]                agg(t)
    u64 *d_subaggs;      // [num_sub_windows * K]          total of each 32-tile sub-window
    u64 *d_anchors;      // [num_windows * K]              inclusive prefix of each window's last tile
    u64 *d_tile_counter; // monotonically increasing across launches
    u64 counter_base;    // value of *d_tile_counter when this launch started
    unsigned epoch;      // this launch's epoch (>= 1)
};


// Called by all 32 lanes of ONE warp of the block owning `tile`, after the block
// aggregate is known.  Publishes what `tile` owes (aggregate, sub-window total, anchor,
// total) and returns exclusive(tile) on every lane.
template <typename T, typename Op, int WINDOW>
__device__ __forceinline__ T tile_lookback(const TileState &st, i64 tile, i64 num_tiles, T aggregate,
                                           T seed, bool has_seed, T *d_total) {
    static_assert(WINDOW % 32 == 0 && WINDOW >= 32 && WINDOW <= 1024, "WINDOW must be 32*SUBS, 1 <= SUBS <= 32");
    typedef StatusWord<T> W;
    const int SUBS = WINDOW / 32;
    const int lane = threadIdx.x & 31;
    const i64 g = tile / WINDOW;
    const int r = (int)(tile - g * WINDOW);
    const int s = r >> 5;
    const int j = r & 31;
    const bool last_tile = (tile == num_tiles - 1);

    // Publish the aggregate first (later tiles of the sub-window may wait for it; we never
    // wait before publishing).  A sub-window's last tile needs no slot: its sub-window
    // total covers it.
    if (lane == 0 && j != 31 && !last_tile) W::store(st.d_aggregates + tile * W::K, aggregate, st.epoch);

    // Phase 1: aggregates of the tiles before us in our sub-window (lane l <-> tile l).
    T a = Op::template identity<T>();
    bool ok = lane >= j;
    const u64 *d_a = st.d_aggregates + (tile - j + lane) * W::K;
    while (true) {
        if (!ok) ok = W::try_load(d_a, st.epoch, a);
        if (__all_sync(0xffffffffu, ok)) break;
    }
    const T in_sub = warp_reduce<T, Op>(a);
    if (lane == 0 && j == 31 && s != SUBS - 1 && !last_tile)
        W::store(st.d_subaggs + (g * SUBS + s) * W::K, Op::template apply<T>(in_sub, aggregate), st.epoch);

    // Phase 2: totals of the sub-windows before ours (lane l <-> sub-window l) and the
    // previous window's anchor (lane 0).
    T b = Op::template identity<T>();
    T anchor = has_seed ? seed : Op::template identity<T>();
    ok = lane >= s;
    bool anchor_ok = (g == 0) || (lane != 0);
    const u64 *d_b = st.d_subaggs + (g * SUBS + lane) * W::K;
    while (true) {
        if (!ok) ok = W::try_load(d_b, st.epoch, b);
        if (!anchor_ok) anchor_ok = W::try_load(st.d_anchors + (g - 1) * W::K, st.epoch, anchor);
        if (__all_sync(0xffffffffu, ok && anchor_ok)) break;
    }
    const T before_sub = warp_reduce<T, Op>(b);
    anchor = shfl_idx(anchor, 0);
    const T exclusive = Op::template apply<T>(Op::template apply<T>(anchor, before_sub), in_sub);

    if (lane == 0 && (r == WINDOW - 1 || last_tile)) {
        const T inclusive = Op::template apply<T>(exclusive, aggregate);
        if (r == WINDOW - 1) W::store(st.d_anchors + g * W::K, inclusive, st.epoch);
        if (last_tile && d_total != 0) *d_total = inclusive;
    }
    return exclusive;
}

}  // namespace distscan
