// distscan/kernels/tile/tile_state.cuh -- tile status words and the aligned-window
// decoupled look-back.
//
// STATUS WORDS.  A tile publishes a value of accumulator type T as K = ceil(sizeof(T)/4)
// 64-bit words (rounded up to even past one); word k holds (epoch << 32) | (32-bit chunk k of the value).  Each word
// is written exactly once per launch, by one st.relaxed.gpu, and 64-bit accesses are
// single-copy atomic, so a reader that sees the current epoch in a word sees that word's
// final chunk.  A value is valid when ALL its K words carry the current epoch: no torn
// reads (a 16-byte vector access is two 64-bit accesses, and a reader that caught one
// old half sees the old epoch in it and retries).  The epoch counts launches, so the
// words need no re-initialisation between launches (zero = "never written"; epochs start
// at 1).
//
// LAUNCH STATE.  The epoch and the tile counter live in device memory (LaunchWord), not in
// kernel arguments, so that a launch's arguments are the same every time it is repeated: a
// CUDA graph replays them (the host's graph of a repeated call, or a user's own graph that
// captured a scan).  They share one word, (last epoch << 32) | claims so far, so that each
// claim (one atomic, as with a bare counter) also returns the launch's epoch: no load before
// it, and nothing to do at the blocks' exits.  The launch's last claim (the kernel knows how
// many it makes) leaves the word for the next launch on the stream, (epoch << 32) | 0: every
// block of this launch has claimed, so none reads it again.  The launch with the last epoch
// instead counts its blocks out and its last one zeroes every status word first
// (TileState::retire), so that epochs start again at 1.
//
// WHY RELAXED IS ENOUGH.  Nothing but the word itself is communicated through it (the
// value is inside the word), so no release/acquire pairing is needed to make other data
// visible.  The .gpu scope is what matters: it makes the store visible to, and the load
// observe, other SMs through L2 (a weak ld could be served from a stale L1 line and spin
// forever; a weak st could sit in L1).  "memory" clobbers stop the compiler from
// caching the loads in registers across spin iterations.
//
// TWO-LEVEL ALIGNED WINDOWS (deterministic).  Tiles are grouped in aligned SUB-WINDOWS of
// 32 tiles (one lane per tile) and WINDOWS of WINDOW = 32*SUBS tiles (SUBS <= 32
// sub-windows, one lane per sub-window).  For tile t = g*WINDOW + s*32 + j, with R the
// fixed 32-lane butterfly tree (identity in unused lanes):
//   agg(t)         the tile's total, published as soon as its block has reduced it (j < 31)
//   in_sub(t)      = R(agg of the j tiles before t in its sub-window)
//   SUB(g, s)      = in_sub(last tile of the sub-window) op its agg, the sub-window's total
//   W(g)           = R(SUB(g, 0..SUBS-1)), the window's total
//   PREFIX(g)      = seed op W(0) op W(1) op ... op W(g-1), folded left in window order
//   exclusive(t)   = (PREFIX(g) op R(SUB(g, 0..s-1))) op in_sub(t)
// The association depends only on t, never on which statuses happened to be ready first,
// so float scans are bitwise reproducible.  (A classic look-back stops at the first
// inclusive prefix it finds, so its association depends on timing.)  Both device
// strategies below compute exactly these values, so their results are bitwise equal; they
// differ in who waits for what:
//
//   tile_lookback (one block per tile): the sub-window's last tile publishes SUB after
//     waiting for aggregates only; the window's last tile publishes ANCHOR(g) =
//     PREFIX(g+1) = ANCHOR(g-1) op W(g) in the per-window word: one serial hop per window.
//   tile_publish_behind + PrefixPoll (agent_scan.cuh with lead > 0: a block
//     reduces tile c and scans tile c - lead; agent_lookahead.cuh: a persistent block reduces
//     its k-th tile and scans its (k - DEPTH)-th): every tile's aggregate (a sub-window's last
//     one's too) is published when the tile is reduced; SUB and ANCHOR, the same words
//     tile_lookback writes, are published later (lead/2 claims; BEHIND iterations); the scan
//     only reads words published long before.
//
// Each tile reads at most 2 words per lane.
//
// NO DEADLOCK.  Tile ids come from an atomic counter (TileState::claim), so every tile a
// block waits for was claimed earlier by a block that is already running.  Aggregates are published before any
// waiting; SUB and W wait only for smaller tiles' aggregates and SUBs; anchors wait only for
// SUBs and the previous anchor, so by induction everything waited for is published.  With
// the reduction ahead, a claim's waits are for words of tiles reduced by earlier claims
// (before their own waits) and for SUBs and anchors published by earlier claims.
#pragma once
#include "../warp/warp_scan.cuh"

namespace distscan {

template <typename T>
struct StatusWord {
    // 64-bit words per value: one per 4 bytes, an even number past one (the stores and loads
    // move pairs of words); states (util/states.cuh) of up to 64 bytes
    static const int K = sizeof(T) <= 4 ? 1 : (int)(((sizeof(T) + 3) / 4 + 1) / 2 * 2);
    static_assert(K <= 16, "accumulator must be 1..64 bytes");

    union Chunks {
        T value;
        unsigned int c[K];
    };

    // The word (epoch << 32) | chunk, put together in PTX.  A chunk that holds a state's
    // padding (util/states.cuh: a flag and the bytes after it) is undefined to the compiler,
    // and in C++ `((u64)epoch << 32) | chunk` it may then make the whole word undefined: it did
    // for AffStartsState<double> on the look-back with its lead, whose epochs came out as
    // garbage and whose readers waited for ever.  An asm's result is opaque: the epoch half is
    // the epoch whatever the chunk holds.
    static __device__ __forceinline__ u64 word(unsigned chunk, unsigned epoch) {
        u64 w;
        asm("mov.b64 %0, {%1, %2};" : "=l"(w) : "r"(chunk), "r"(epoch));
        return w;
    }

    // Publish `value` at d_words[0..K) for launch `epoch`.
    static __device__ __forceinline__ void store(u64 *d_words, T value, unsigned epoch) {
        Chunks u;
#pragma unroll
        for (int k = 0; k < K; ++k) u.c[k] = 0u;
        u.value = value;
        if (K == 1) {
            asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(d_words), "l"(word(u.c[0], epoch)) : "memory");
        } else {
#pragma unroll
            for (int k = 0; k < K; k += 2)
                asm volatile("st.relaxed.gpu.global.v2.u64 [%0], {%1, %2};" ::"l"(d_words + k),
                             "l"(word(u.c[k], epoch)), "l"(word(u.c[k + 1], epoch))
                             : "memory");
        }
    }

    // Issue the loads of the K words at d_words (decode() them once they are needed).
    static __device__ __forceinline__ void load(const u64 *d_words, u64 (&w)[K]) {
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
    }

    // True (and `value` set) if all K words are from launch `epoch`.
    static __device__ __forceinline__ bool decode(const u64 (&w)[K], unsigned epoch, T &value) {
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

    // Try to read the value at d_words; true (and `value` set) if all K words are from
    // launch `epoch`.
    static __device__ __forceinline__ bool try_load(const u64 *d_words, unsigned epoch, T &value) {
        u64 w[K];
        load(d_words, w);
        return decode(w, epoch, value);
    }
};

// The launch state (u64 words; distscan/backends/cuda/scratch.py allocates it with the status
// words, one per stream, all zero but the sizes).
enum LaunchWord {
    LAUNCH_CLAIMS = 0,     // (epoch of the last launch << 32) | tile ids claimed by this one
    LAUNCH_DONE = 2,       // the launch with the last epoch: blocks counted out (else 0)
    LAUNCH_AGGREGATES = 3, // the sizes, in u64 words, of the three status-word arrays (zeroed
    LAUNCH_SUBAGGS = 4,    //   when the epoch wraps)
    LAUNCH_ANCHORS = 5,
    LAUNCH_WORDS = 8
};
// The launch with this epoch zeroes the status words at its end (epoch 0 is "never written").
constexpr unsigned LAST_EPOCH = 0xFFFFFFFFu;

// The device-wide state of one scan launch (host: distscan/backends/cuda/scratch.py sizes it).
// `epoch` is known in the lane that claims, and in its warp once shuffled there: the warp
// that claims is the one that reads and writes status words (the look-back's warp 0, the
// look-ahead's service warp); the other warps only move data.
struct TileState {
    u64 *d_aggregates;   // [num_tiles * K]                agg(t)
    u64 *d_subaggs;      // [num_sub_windows * K]          SUB(g, s)
    u64 *d_anchors;      // [num_windows * K]              ANCHOR(g) (look-back) or W(g) (look-ahead)
    u64 *d_launch;       // [LAUNCH_WORDS]                 LaunchWord
    u64 claims;          // tile ids this launch claims in all
    unsigned epoch;      // this launch's epoch (>= 1), from the first claim

    // Every thread of every block, at entry.  Launched early, as a programmatic dependent of
    // the kernel before it on the stream, the block first waits until that kernel has ended
    // and its writes are visible (nothing is read before); then the kernel after this one may
    // be launched early too, and waits in turn.
    static __device__ __forceinline__ TileState begin(u64 *d_aggregates, u64 *d_subaggs, u64 *d_anchors,
                                                      u64 *d_launch, u64 claims) {
#if __CUDA_ARCH__ >= 900
        asm volatile("griddepcontrol.wait;" ::: "memory");  // no-op unless launched as a dependent
        asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
        TileState st;
        st.d_aggregates = d_aggregates;
        st.d_subaggs = d_subaggs;
        st.d_anchors = d_anchors;
        st.d_launch = d_launch;
        st.claims = claims;
        st.epoch = 0;
        return st;
    }

    // The next tile id of this launch, in claim order (0, 1, 2, ...); sets `epoch`.  The last
    // claim leaves the word for the next launch.
    __device__ __forceinline__ i64 claim() {
        const u64 word = atomicAdd(d_launch + LAUNCH_CLAIMS, 1ull);
        const u64 id = word & 0xFFFFFFFFull;  // < 2^32 claims: n < 2^42 items at the smallest tile
        epoch = (unsigned)(word >> 32) + 1u;
        if (id == claims - 1 && epoch != LAST_EPOCH) atomicExch(d_launch + LAUNCH_CLAIMS, (u64)epoch << 32);
        return (i64)id;
    }

    // The claiming warp of every block (its `epoch` shuffled to all lanes), after the block's
    // last status-word access.  Only in the launch with the last epoch: the warps count out,
    // and the last zeroes the status words and leaves epoch 0 (the next launch's is 1).
    __device__ __forceinline__ void retire() const {
        if (epoch != LAST_EPOCH) return;  // once in 2^32 launches
        bool last = false;
        if ((threadIdx.x & 31) == 0) {
            __threadfence();  // this block's status-word stores land before the count
            last = atomicAdd(d_launch + LAUNCH_DONE, 1ull) == (u64)gridDim.x - 1;
        }
        if (!shfl_idx((int)last, 0)) return;  // the flag as a 0/1 word, as __shfl_sync takes a bool
        __threadfence();
        for (int a = 0; a < 3; ++a) {
            u64 *d = a == 0 ? d_aggregates : a == 1 ? d_subaggs : d_anchors;
            const u64 words = d_launch[LAUNCH_AGGREGATES + a];
            for (u64 i = threadIdx.x & 31; i < words; i += 32) d[i] = 0;
        }
        if ((threadIdx.x & 31) == 0) {
            d_launch[LAUNCH_DONE] = 0;
            d_launch[LAUNCH_CLAIMS] = 0;
        }
    }
};

// Where tile t sits: window g, sub-window s in it, lane j in that.
struct TilePlace {
    i64 g;
    int s, j, r;  // r = s*32 + j
    template <int WINDOW>
    static __device__ __forceinline__ TilePlace of(i64 tile) {
        TilePlace p;
        p.g = tile / WINDOW;
        p.r = (int)(tile - p.g * WINDOW);
        p.s = p.r >> 5;
        p.j = p.r & 31;
        return p;
    }
};

// Publish agg(tile) (one thread).  A sub-window's last tile and the last tile need no
// aggregate slot: the sub-window total or the total covers them.
template <typename T>
__device__ __forceinline__ void tile_publish_aggregate(const TileState &st, i64 tile, i64 num_tiles, T aggregate) {
    if ((tile & 31) != 31 && tile != num_tiles - 1)
        StatusWord<T>::store(st.d_aggregates + tile * StatusWord<T>::K, aggregate, st.epoch);
}

// Lane l < count: agg(first + l), waited for; other lanes: the identity (all 32 lanes of a
// warp; reduce the result with R).
template <typename T, typename Op>
__device__ __forceinline__ T wait_aggregates(const TileState &st, i64 first, int count) {
    typedef StatusWord<T> W;
    const int lane = threadIdx.x & 31;
    T a = Op::template identity<T>();
    bool ok = lane >= count;
    const u64 *d_a = st.d_aggregates + (first + lane) * W::K;
    while (true) {
        if (!ok) ok = W::try_load(d_a, st.epoch, a);
        if (__all_sync(0xffffffffu, ok)) break;
    }
    return a;
}

// The window part of tile p's prefix (all 32 lanes of one warp): returns SUB(g, l) on lanes
// l < p.s (the identity elsewhere; reduce it with R) and sets `anchor` = ANCHOR(g-1) (the
// seed, or the identity, for g = 0) on every lane.  The sub-window totals and the anchor
// are polled together.
template <typename T, typename Op, int WINDOW>
__device__ __forceinline__ T wait_window_prefix(const TileState &st, const TilePlace &p, T seed, bool has_seed,
                                                T &anchor) {
    typedef StatusWord<T> W;
    const int lane = threadIdx.x & 31;
    T b = Op::template identity<T>();
    anchor = has_seed ? seed : Op::template identity<T>();
    bool ok = lane >= p.s;
    bool anchor_ok = (p.g == 0) || (lane != 0);
    const u64 *d_b = st.d_subaggs + (p.g * (WINDOW / 32) + lane) * W::K;
    while (true) {
        if (!ok) ok = W::try_load(d_b, st.epoch, b);
        if (!anchor_ok) anchor_ok = W::try_load(st.d_anchors + (p.g - 1) * W::K, st.epoch, anchor);
        if (__all_sync(0xffffffffu, ok && anchor_ok)) break;
    }
    anchor = shfl_idx(anchor, 0);
    return b;
}

// exclusive(t) = (PREFIX(g) op R(SUB(g, 0..s-1))) op in_sub(t), from wait_window_prefix's values.
// The sub-window totals and in_sub (the later operands) bounded on every lane: IEEE's folds alone
// (operators.cuh, bounds), the same bits; the vote is off the anchor's chain.  H200, 2^27: the
// float32 recurrence's look-ahead 0.65 -> 0.88 of copy, float64's 0.72 -> 0.87 with the rule left
// out of the look-back (benchmarks/RESULTS.md, "Where the rest of the rule's cost lies").
template <typename T, typename Op>
__device__ __forceinline__ T tile_exclusive(T anchor, T subs, T in_sub) {
    if (warp_bounded<T, Op>(subs) && warp_bounded<T, Op>(in_sub))
        return apply_maybe_tame<Op, T, true>(apply_maybe_tame<Op, T, true>(anchor, warp_reduce<T, Op, true>(subs)),
                                             in_sub);
    return Op::template apply<T>(Op::template apply<T>(anchor, warp_reduce<T, Op>(subs)), in_sub);
}

// warp_reduce of the lanes' aggregates, without the rule where every one is bounded
template <typename T, typename Op>
__device__ __forceinline__ T reduce_aggregates(T a) {
    if (warp_bounded<T, Op>(a)) return warp_reduce<T, Op, true>(a);
    return warp_reduce<T, Op>(a);
}

// The total for the last tile (the look-back's association: its prefix op its aggregate).
template <typename T, typename Op>
__device__ __forceinline__ void tile_total(i64 tile, i64 num_tiles, T exclusive, T aggregate, T *d_total) {
    if (tile == num_tiles - 1 && d_total != 0) *d_total = Op::template apply<T>(exclusive, aggregate);
}

// ANCHOR(g) = ANCHOR(g-1) op W(g), by the warp of the window's last tile (sub-window s =
// SUBS-1), whose own sub-window total `own_sub` joins the others (`subs`) in lane s.
template <typename T, typename Op, int WINDOW>
__device__ __forceinline__ void store_anchor(const TileState &st, const TilePlace &p, T own_sub, T subs, T anchor) {
    const T w = reduce_aggregates<T, Op>((threadIdx.x & 31) == p.s ? own_sub : subs);
    const T next = apply_if_bounded<Op, T>(anchor, w);
    if ((threadIdx.x & 31) == 0) StatusWord<T>::store(st.d_anchors + p.g * StatusWord<T>::K, next, st.epoch);
}

// Called by all 32 lanes of ONE warp of the block owning `tile`, after the block
// aggregate is known.  Publishes what `tile` owes (aggregate, SUB, ANCHOR, total) and
// returns exclusive(tile) on every lane.
template <typename T, typename Op, int WINDOW>
__device__ __forceinline__ T tile_lookback(const TileState &st, i64 tile, i64 num_tiles, T aggregate,
                                           T seed, bool has_seed, T *d_total) {
    static_assert(WINDOW % 32 == 0 && WINDOW >= 32 && WINDOW <= 1024, "WINDOW must be 32*SUBS, 1 <= SUBS <= 32");
    typedef StatusWord<T> W;
    const int SUBS = WINDOW / 32;
    const int lane = threadIdx.x & 31;
    const TilePlace p = TilePlace::of<WINDOW>(tile);
    const bool last_tile = (tile == num_tiles - 1);

    // Publish the aggregate first (later tiles of the sub-window may wait for it; we never
    // wait before publishing).
    if (lane == 0) tile_publish_aggregate<T>(st, tile, num_tiles, aggregate);

    const T in_sub = reduce_aggregates<T, Op>(wait_aggregates<T, Op>(st, tile - p.j, p.j));
    const T own_sub = apply_if_bounded<Op, T>(in_sub, aggregate);
    if (lane == 0 && p.j == 31 && p.s != SUBS - 1 && !last_tile)
        W::store(st.d_subaggs + (p.g * SUBS + p.s) * W::K, own_sub, st.epoch);

    T anchor;
    const T subs = wait_window_prefix<T, Op, WINDOW>(st, p, seed, has_seed, anchor);
    const T exclusive = tile_exclusive<T, Op>(anchor, subs, in_sub);
    if (p.r == WINDOW - 1 && !last_tile) store_anchor<T, Op, WINDOW>(st, p, own_sub, subs, anchor);
    if (lane == 0) tile_total<T, Op>(tile, num_tiles, exclusive, aggregate, d_total);
    return exclusive;
}

// Look-back with the reduction ahead (agent_scan.cuh, lead > 0): every tile's aggregate
// but the last's is published by the block that reduced it, `lead` claims before the
// tile's scan; a block also publishes, for a tile `tile` reduced lead/2 claims earlier that
// completes a sub-window, that sub-window's total (or, for a window's last tile, ANCHOR).
// Both wait only for status words published long before, so the scans never wait for a
// load.  Same values as tile_lookback, bit for bit.
template <typename T, typename Op, int WINDOW>
__device__ __forceinline__ void tile_publish_behind(const TileState &st, i64 tile, i64 num_tiles, T seed,
                                                    bool has_seed) {
    typedef StatusWord<T> W;
    const int SUBS = WINDOW / 32;
    const TilePlace p = TilePlace::of<WINDOW>(tile);
    if (p.j != 31 || tile == num_tiles - 1) return;
    const T a = wait_aggregates<T, Op>(st, tile - 31, 32);  // the 31 before it, and its own
    const T in_sub = reduce_aggregates<T, Op>((threadIdx.x & 31) < 31 ? a : Op::template identity<T>());
    const T last = shfl_idx(a, 31);
    const T own_sub = apply_if_bounded<Op, T>(in_sub, last);
    if (p.s != SUBS - 1) {
        if ((threadIdx.x & 31) == 0) W::store(st.d_subaggs + (p.g * SUBS + p.s) * W::K, own_sub, st.epoch);
        return;
    }
    T anchor;
    const T subs = wait_window_prefix<T, Op, WINDOW>(st, p, seed, has_seed, anchor);
    store_anchor<T, Op, WINDOW>(st, p, own_sub, subs, anchor);
}

// exclusive(tile) on every lane of one warp, publishing nothing (the scan half of the
// reduction-ahead look-back and of the look-ahead kernel), in two halves: issue() loads the
// words the prefix needs (the aggregates before the tile in its sub-window, the sub-window
// totals before its sub-window, the anchor) without waiting for them, so that other work
// overlaps the L2 round trip; finish() polls again the ones not yet published and returns the
// prefix.  The same values as tile_lookback.
template <typename T, typename Op, int WINDOW>
struct PrefixPoll {
    typedef StatusWord<T> W;
    u64 wa[W::K], wb[W::K], wc[W::K];

    static __device__ __forceinline__ const u64 *agg_word(const TileState &st, i64 tile, const TilePlace &p) {
        return st.d_aggregates + (tile - p.j + (threadIdx.x & 31)) * W::K;
    }
    static __device__ __forceinline__ const u64 *sub_word(const TileState &st, const TilePlace &p) {
        return st.d_subaggs + (p.g * (WINDOW / 32) + (threadIdx.x & 31)) * W::K;
    }

    __device__ __forceinline__ void issue(const TileState &st, i64 tile) {
        const int lane = threadIdx.x & 31;
        const TilePlace p = TilePlace::of<WINDOW>(tile);
        if (lane < p.j) W::load(agg_word(st, tile, p), wa);
        if (lane < p.s) W::load(sub_word(st, p), wb);
        if (lane == 0 && p.g > 0) W::load(st.d_anchors + (p.g - 1) * W::K, wc);
    }

    __device__ __forceinline__ T finish(const TileState &st, i64 tile, T seed, bool has_seed) {
        const int lane = threadIdx.x & 31;
        const TilePlace p = TilePlace::of<WINDOW>(tile);
        T a = Op::template identity<T>(), b = a;
        T anchor = has_seed ? seed : Op::template identity<T>();
        bool ok_a = lane >= p.j || W::decode(wa, st.epoch, a);
        bool ok_b = lane >= p.s || W::decode(wb, st.epoch, b);
        bool ok_c = p.g == 0 || lane != 0 || W::decode(wc, st.epoch, anchor);
        while (!__all_sync(0xffffffffu, ok_a && ok_b && ok_c)) {
            if (!ok_a) ok_a = W::try_load(agg_word(st, tile, p), st.epoch, a);
            if (!ok_b) ok_b = W::try_load(sub_word(st, p), st.epoch, b);
            if (!ok_c) ok_c = W::try_load(st.d_anchors + (p.g - 1) * W::K, st.epoch, anchor);
        }
        anchor = shfl_idx(anchor, 0);
        return tile_exclusive<T, Op>(anchor, b, reduce_aggregates<T, Op>(a));
    }
};

}  // namespace distscan
