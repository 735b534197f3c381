// distscan/kernels/agent/agent_columns.cuh -- the scan of each column of (n, w) rows, w >= 2,
// in three kernels whose passes over the rows are coalesced:
//   reduce_column_tiles  each tile of rows: its fold per column -> d_agg[tile][c]
//   carry_column_tiles   each column's tile folds -> their exclusive scan from the column's seed,
//                        in place, and the column's total
//   scan_column_tiles    each tile again, from its prefixes -> the result's rows
// Three passes over the bytes (read, read, write), where CuPy's transposed copies around a 1-D
// scan a column made six and a thread walking a column's rows was latency-bound (~350 ns a row).
//
// A tile is RUNS * run consecutive rows of a slab of at most COLUMN_TILE_THREADS columns (wider
// arrays: blockIdx.y picks the slab; ld is the row stride), lifted into shared memory as the rows
// lie.  RUNS = COLUMN_TILE_THREADS / min(w, COLUMN_TILE_THREADS) for every slab, so that all slabs
// cut the rows alike and d_agg is one (tiles, w) array.  Thread t of a slab of ws columns folds
// column t % ws over run t / ws (run rows).  run is odd: the lanes of a warp reading their runs'
// rows fall in different banks.  The association of a float result depends only on w, run and
// the row (fixed trees: the run in sequence, the runs of a tile by Kogge-Stone, the tiles in
// sequence within a thread's share of the carry), never on timing.
//
// KIND says what the tile kernels read and write.  COLUMN_VALUES: a plain operator's items,
// lifted one by one, results converted (the plain module's forward scans).  COLUMN_STATES: a
// reverse scan's or a state operator's (the extended module): items lifted with their row's
// segment flag and their own coefficient, results projected with their column's parameter (the
// call's initial) as scan_ext_kernel projects them.  COLUMN_LIFTED: the extended module's tile
// folds, states in and out as they are (past CARRY_TILES tiles they are scanned as rows again).
// REVERSE: scan order runs from the last row up; tile b holds the rows [n - (b + 1) T, n - b T),
// scanned from its last row, and d_agg is in scan order, so the carry is the forward one.
#pragma once
#include "../tile/tile_agent.cuh"  // CoefOf
#include "../util/states.cuh"
#include "agent_policy.cuh"

namespace distscan {

constexpr int COLUMN_TILE_THREADS = 256;
constexpr int CARRY_THREADS = 1024;  // threads of the carry kernel's block (a column each)
// Seeds the carry kernel takes by value (one launch per group of this many columns when seeded),
// so that a seeded scan copies nothing from the host before its launch (a CUDA graph may capture it).
constexpr int CARRY_SEED_COLUMNS = 64;

template <typename TAcc> struct SeedColumns {
    TAcc v[CARRY_SEED_COLUMNS];
};

enum ColumnKind { COLUMN_VALUES = 0, COLUMN_STATES = 1, COLUMN_LIFTED = 2 };

// What a COLUMN_STATES tile reads besides its items (each null where the call has none).
template <typename TAcc> struct ColumnAux {
    const unsigned char *flags;  // segment flags, one a row
    const void *coef;            // coefficients (TAcc::Value), (n, w) rows as the items (COEF_ONE: one row)
    const TAcc *params;          // the call's initial as a state, one a column

    static __device__ __forceinline__ ColumnAux none() {
        ColumnAux a;
        a.flags = 0;
        a.coef = 0;
        a.params = 0;
        return a;
    }
};

// What one block of the tile kernels works on.
struct ColumnTile {
    int ws;    // columns of this block's slab
    int runs;  // runs a column in a tile (the same for every slab)
    int rows;  // rows of this tile (the last may have fewer)
    i64 r0;    // its first row
    i64 c0;    // its slab's first column

    static __device__ __forceinline__ ColumnTile of(i64 n, i64 w, int run) {
        ColumnTile t;
        const int wide = (int)min(w, (i64)COLUMN_TILE_THREADS);
        t.runs = COLUMN_TILE_THREADS / wide;
        t.c0 = (i64)blockIdx.y * COLUMN_TILE_THREADS;
        t.ws = (int)min(w - t.c0, (i64)COLUMN_TILE_THREADS);
        const i64 tile_rows = (i64)t.runs * run;
        t.r0 = (i64)blockIdx.x * tile_rows;
        t.rows = (int)min(tile_rows, n - t.r0);
        return t;
    }
    __device__ __forceinline__ bool mine() const { return (int)threadIdx.x < runs * ws; }
    __device__ __forceinline__ int column() const { return (int)threadIdx.x % ws; }
    __device__ __forceinline__ int run_index() const { return (int)threadIdx.x / ws; }
};

// s[r * ws + c] = lift(rows[r][c]) for the tile's rows (src: its first row, first column).
template <typename TIn, typename TAcc, typename Op>
__device__ __forceinline__ void load_column_tile(TAcc *s, const TIn *src, i64 ld, const ColumnTile &t) {
    const int count = t.rows * t.ws;
    if (ld == t.ws) {  // the tile is one contiguous run of items
#pragma unroll 4
        for (int k = threadIdx.x; k < count; k += COLUMN_TILE_THREADS) s[k] = Op::template lift<TAcc, TIn>(src[k]);
    } else {
#pragma unroll 4
        for (int k = threadIdx.x; k < count; k += COLUMN_TILE_THREADS) {
            const int r = k / t.ws, c = k - r * t.ws;
            s[k] = Op::template lift<TAcc, TIn>(src[(i64)r * ld + c]);
        }
    }
}

// rows[r][c] = s[r * ws + c], converted to the result type.
template <typename TOut, typename TAcc>
__device__ __forceinline__ void store_column_tile(TOut *dst, i64 ld, const TAcc *s, const ColumnTile &t) {
    const int count = t.rows * t.ws;
    if (ld == t.ws) {
#pragma unroll 4
        for (int k = threadIdx.x; k < count; k += COLUMN_TILE_THREADS) dst[k] = Convert<TOut, TAcc>::apply(s[k]);
    } else {
#pragma unroll 4
        for (int k = threadIdx.x; k < count; k += COLUMN_TILE_THREADS) {
            const int r = k / t.ws, c = k - r * t.ws;
            dst[(i64)r * ld + c] = Convert<TOut, TAcc>::apply(s[k]);
        }
    }
}

// An item's accumulator: a state operator's lift takes its flag and coefficient (states.cuh).
template <typename TIn, typename TAcc, typename Op, typename TC>
__device__ __forceinline__ TAcc lift_column_item(TIn x, bool flag, TC coef) {
    if constexpr (Op::AUX > 0) return Op::template lift<TAcc, TIn>(x, flag, coef);
    else return Op::template lift<TAcc, TIn>(x);
}

// A thread's items of a tile, k = threadIdx.x, + COLUMN_TILE_THREADS, ...: as (row, column) of the
// slab's ws columns, stepped without a division an item.
struct TileWalk {
    int r, c;
    int dr, dc, ws;
    __device__ __forceinline__ explicit TileWalk(int ws_) : ws(ws_) {
        r = (int)threadIdx.x / ws;
        c = (int)threadIdx.x - r * ws;
        dr = COLUMN_TILE_THREADS / ws;
        dc = COLUMN_TILE_THREADS - dr * ws;
    }
    __device__ __forceinline__ void next() {
        r += dr;
        c += dc;
        if (c >= ws) {
            c -= ws;
            ++r;
        }
    }
};

// put(at, k, r, c) for each of a thread's items of the tile: at, its offset in memory from the
// tile's first item (rows of w items); k, its index in the tile; r and c, its row and column.  In
// the plain kernels' loop shape (k < count, unrolled four: a thread's loads issued together), a
// TileWalk beside k; a contiguous tile (one slab) indexed by k itself.
template <typename Put>
__device__ __forceinline__ void for_tile_items(const ColumnTile &t, i64 w, const Put &put) {
    const int count = t.rows * t.ws;
    TileWalk it(t.ws);
    if (w == t.ws) {
#pragma unroll 4
        for (int k = threadIdx.x; k < count; k += COLUMN_TILE_THREADS) {
            put(k, k, it.r, it.c);
            it.next();
        }
    } else {
#pragma unroll 4
        for (int k = threadIdx.x; k < count; k += COLUMN_TILE_THREADS) {
            put((i64)it.r * w + it.c, k, it.r, it.c);
            it.next();
        }
    }
}

// load_column_tile for COLUMN_STATES and COLUMN_LIFTED: s[i * ws + c] = the lifted item of the
// tile's row i in scan order (REVERSE: physical row rows - 1 - i) and column c.  p0: the tile's
// first row in memory; d_in: the whole (n, w) rows.  The items by for_tile_items.  The first form, a loop on the walk alone
// with 64-bit offsets and selects an item, was issue-bound (ncu, H200: the segmented float32
// reduction at 81 % of the SMs' issue, 30 % of DRAM).
template <typename TIn, typename TAcc, typename Op, int KIND, bool REVERSE>
__device__ __forceinline__ void load_state_tile(TAcc *s, const TIn *d_in, i64 w, i64 p0, const ColumnTile &t,
                                                const ColumnAux<TAcc> &aux) {
    typedef typename CoefOf<TAcc, Op::STATE>::type TC;
    const TIn *src = d_in + p0 * w + t.c0;
    // COEF_ONE (tile_agent.cuh): one coefficient a column, the same for every row
    const TC *coef = aux.coef != 0 ? static_cast<const TC *>(aux.coef) + (COEF_ONE ? 0 : p0 * w) + t.c0 : 0;
    // a row's flag byte loaded with each of its items: staging a tile's flags in shared memory
    // first (branch s50-flag-rows) put their round trip and a barrier before the items' loads:
    // the segmented float32 sum's reduction 0.285 -> 0.306 ms at 4 columns (H200, 2^27)
    const unsigned char *flags = aux.flags != 0 ? aux.flags + p0 : 0;
    auto put = [&](i64 at, int k, int r, int c) {
        const int to = REVERSE ? (t.rows - 1 - r) * t.ws + c : k;
        if constexpr (KIND == COLUMN_LIFTED) {
            s[to] = src[at];
        } else {
            s[to] = lift_column_item<TIn, TAcc, Op>(src[at], flags != 0 && flags[r] != 0,
                                                    coef != 0 ? coef[COEF_ONE ? c : at] : TC());
        }
    };
    for_tile_items(t, w, put);
}

// store_column_tile for COLUMN_STATES and COLUMN_LIFTED: each item's output from its state in s
// (its own prefix, or the state before it when EXCLUSIVE), as scan_ext_kernel's (tile_agent.cuh,
// output): an exclusive item that starts a segment gets first(), the others project() with
// their column's parameter.
template <typename TOut, typename TAcc, typename Op, int KIND, bool EXCLUSIVE, bool REVERSE>
__device__ __forceinline__ void store_state_tile(TOut *d_out, i64 w, i64 p0, const TAcc *s, const ColumnTile &t,
                                                 const ColumnAux<TAcc> &aux) {
    TOut *dst = d_out + p0 * w + t.c0;
    const unsigned char *flags = aux.flags != 0 ? aux.flags + p0 : 0;
    const bool has = aux.params != 0;
    auto put = [&](i64 at, int k, int r, int c) {
        const TAcc v = s[REVERSE ? (t.rows - 1 - r) * t.ws + c : k];
        if constexpr (KIND == COLUMN_LIFTED) {
            dst[at] = v;
        } else if constexpr (Op::STATE) {
            const TAcc param = has ? aux.params[t.c0 + c] : Op::template identity<TAcc>();
            const bool start = EXCLUSIVE && flags != 0 && flags[r] != 0;  // (fresh() reads it)
            dst[at] = (EXCLUSIVE && Op::fresh(v, start)) ? Op::template first<TOut>(param, has)
                                                         : Op::template project<TOut>(v, param, has);
        } else {
            dst[at] = Convert<TOut, TAcc>::apply(v);
        }
    };
    for_tile_items(t, w, put);
}

// The rows [first, last) of column c of the tile in shared memory, in sequence from acc.
template <typename TAcc, typename Op>
__device__ __forceinline__ TAcc fold_rows(TAcc acc, const TAcc *s, int ws, int c, int first, int last) {
    for (int r = first; r < last; ++r) acc = Op::template apply<TAcc>(acc, s[r * ws + c]);
    return acc;
}

// s_runs[t] becomes the fold of runs 0..t / ws of column t % ws, from v (each thread's run; threads
// at and past runs * ws take no part): Kogge-Stone across a column's runs, the earlier operand
// first.  Every thread of the block calls it.
template <typename TAcc, typename Op>
__device__ __forceinline__ void scan_runs(TAcc *s_runs, TAcc v, int ws, int runs) {
    const int t = threadIdx.x, j = t / ws;
    const bool mine = t < runs * ws;
    if (mine) s_runs[t] = v;
    __syncthreads();
    for (int d = 1; d < runs; d <<= 1) {
        const bool folds = mine && j >= d;
        TAcc before;
        if (folds) before = s_runs[t - d * ws];
        __syncthreads();
        if (folds) {
            v = Op::template apply<TAcc>(before, v);
            s_runs[t] = v;
        }
        __syncthreads();
    }
}

// Kernel 1: d_agg[tile * w + c] = the fold of the tile's rows of column c (tiles in scan order).
template <typename TIn, typename TAcc, typename Op, int KIND = COLUMN_VALUES, bool REVERSE = false>
__device__ __forceinline__ void reduce_column_tiles(const TIn *d_in, i64 n, i64 w, int run, TAcc *d_agg,
                                                    const ColumnAux<TAcc> &aux = ColumnAux<TAcc>::none()) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    TAcc *s_runs = reinterpret_cast<TAcc *>(smem_raw);
    TAcc *s = s_runs + COLUMN_TILE_THREADS;
    const ColumnTile t = ColumnTile::of(n, w, run);
    if constexpr (KIND == COLUMN_VALUES) {
        static_assert(!REVERSE, "reverse scans are the extended module's (COLUMN_STATES)");
        load_column_tile<TIn, TAcc, Op>(s, d_in + t.r0 * w + t.c0, w, t);
    } else {
        load_state_tile<TIn, TAcc, Op, KIND, REVERSE>(s, d_in, w, REVERSE ? n - t.r0 - t.rows : t.r0, t, aux);
    }
    __syncthreads();
    TAcc v = Op::template identity<TAcc>();
    const int c = t.column(), j = t.run_index();
    if (t.mine()) v = fold_rows<TAcc, Op>(v, s, t.ws, c, j * run, min(t.rows, (j + 1) * run));
    scan_runs<TAcc, Op>(s_runs, v, t.ws, t.runs);
    if ((int)threadIdx.x < t.ws)
        d_agg[(i64)blockIdx.x * w + t.c0 + threadIdx.x] = s_runs[(t.runs - 1) * t.ws + threadIdx.x];
}

// Kernel 2, one block of CARRY_THREADS a column (columns c0 + blockIdx.x): the column's tile folds
// in d_agg become their exclusive scan from its seed (seeds.v[blockIdx.x] where has_seed, else the
// identity), in place; d_totals[c] (when not null) the fold of the seed and every tile.  A thread
// takes a contiguous share of the tiles.
template <typename TAcc, typename Op>
__device__ __forceinline__ void carry_column_tiles(TAcc *d_agg, i64 tiles, i64 w, i64 c0,
                                                   const SeedColumns<TAcc> &seeds, int has_seed, TAcc *d_totals) {
    __shared__ TAcc s_runs[CARRY_THREADS];
    const i64 c = c0 + blockIdx.x;
    const int t = threadIdx.x;
    const i64 share = (tiles + CARRY_THREADS - 1) / CARRY_THREADS;
    const i64 first = min(tiles, (i64)t * share), last = min(tiles, first + share);
    TAcc v = Op::template identity<TAcc>();
#pragma unroll 4
    for (i64 i = first; i < last; ++i) v = Op::template apply<TAcc>(v, d_agg[i * w + c]);
    scan_runs<TAcc, Op>(s_runs, v, 1, CARRY_THREADS);
    TAcc acc = has_seed ? seeds.v[blockIdx.x] : Op::template identity<TAcc>();
    if (t > 0) acc = Op::template apply<TAcc>(acc, s_runs[t - 1]);
    for (i64 i = first; i < last; ++i) {
        const TAcc x = d_agg[i * w + c];
        d_agg[i * w + c] = acc;
        acc = Op::template apply<TAcc>(acc, x);
    }
    if (t == CARRY_THREADS - 1 && d_totals != 0) d_totals[c] = acc;  // (past the last tile: the whole column)
}

// Kernel 3: each tile scanned from its prefixes (d_prefix: kernel 2's d_agg) into the result's rows.
template <typename TIn, typename TAcc, typename TOut, typename Op, bool EXCLUSIVE, int KIND = COLUMN_VALUES,
          bool REVERSE = false>
__device__ __forceinline__ void scan_column_tiles(const TIn *d_in, TOut *d_out, i64 n, i64 w, int run,
                                                  const TAcc *d_prefix,
                                                  const ColumnAux<TAcc> &aux = ColumnAux<TAcc>::none()) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    TAcc *s_runs = reinterpret_cast<TAcc *>(smem_raw);
    TAcc *s = s_runs + COLUMN_TILE_THREADS;
    const ColumnTile t = ColumnTile::of(n, w, run);
    const int c = t.column(), j = t.run_index();
    const i64 p0 = REVERSE ? n - t.r0 - t.rows : t.r0;  // the tile's first row in memory
    TAcc acc = Op::template identity<TAcc>();
    if (t.mine()) acc = d_prefix[(i64)blockIdx.x * w + t.c0 + c];  // (loaded under the tile's load)
    if constexpr (KIND == COLUMN_VALUES) {
        static_assert(!REVERSE, "reverse scans are the extended module's (COLUMN_STATES)");
        load_column_tile<TIn, TAcc, Op>(s, d_in + t.r0 * w + t.c0, w, t);
    } else {
        load_state_tile<TIn, TAcc, Op, KIND, REVERSE>(s, d_in, w, p0, t, aux);
    }
    __syncthreads();
    const int first = j * run, last = min(t.rows, (j + 1) * run);
    TAcc v = Op::template identity<TAcc>();
    if (t.mine()) v = fold_rows<TAcc, Op>(v, s, t.ws, c, first, last);
    scan_runs<TAcc, Op>(s_runs, v, t.ws, t.runs);
    if (t.mine()) {
        if (j > 0) acc = Op::template apply<TAcc>(acc, s_runs[threadIdx.x - t.ws]);
        for (int r = first; r < last; ++r) {
            const TAcc x = s[r * t.ws + c];
            if (EXCLUSIVE) {
                s[r * t.ws + c] = acc;
                acc = Op::template apply<TAcc>(acc, x);
            } else {
                acc = Op::template apply<TAcc>(acc, x);
                s[r * t.ws + c] = acc;
            }
        }
    }
    __syncthreads();
    if constexpr (KIND == COLUMN_VALUES) store_column_tile<TOut, TAcc>(d_out + t.r0 * w + t.c0, w, s, t);
    else store_state_tile<TOut, TAcc, Op, KIND, EXCLUSIVE, REVERSE>(d_out, w, p0, s, t, aux);
}

}  // namespace distscan
