"""How fast could a single-read float32 recurrence (``y[i] = a[i]*y[i-1] + b[i]``, arrays a and b)
run on this GPU, and what does each part of a one-tile kernel cost?  An experiment for NOTES-gpu's
plan "The state scans past 0.85 of copy on the H200" (the recurrences with an array ``a`` read
0.73-0.76 of copy there); the kernels below are this script's own, not distscan's.

    PYTHONPATH=$PWD python3 benchmarks/probe_affine_ceiling.py [--log2n 27,29] [--reps 9]
        [--shapes 128x17,128x25,128x33,256x17,64x33] [--sleeps 100,400] [--rings 128x17x2x2] [OUT.json]

Kernels (one tile of THREADS x ITEMS items a block; ITEMS odd, so that a thread's contiguous run
is read from shared memory without bank conflicts and without a transpose's padding; a and b
loaded once, warp-striped as float4, y stored the same way):
- ``free2``: no carry between tiles (each tile starts from y = 0): the ceiling of a single-read
  kernel with two applications an item (the thread's reduction of its run, one MUL and one FMA an
  item; the rescan from its prefix, one FMA an item) and a block scan of the thread maps;
- ``free3``: the same without the carry, but the thread keeps its run's inclusive maps (a MUL and an
  FMA an item) and applies its prefix to them (an FMA an item): three applications, twice the
  registers (what a scan-then-propagate body costs);
- ``chained``: ``free2`` with a decoupled look-back between tiles (tile ids from an atomic
  counter, one 16-byte status word a tile holding its flag and map, 32 predecessors a step): a
  real scan, whose results are checked;
- ``service``: ``chained`` with the look-back in a warp of its own (THREADS + 32 threads, the data
  warps' barriers named), which starts polling at the block's start while the data warps load and
  reduce the tile and publish its aggregate: the look-back's wait beside the tile's own loads;
- ``ring``: persistent blocks (as many as fit), a ring of AHEAD + DEPTH + 1 tile stages filled by
  cp.async; iteration i reduces tile i from its stage and publishes its aggregate at once, and scans
  tile i - DEPTH from its stage with the prefix a service warp looked back for meanwhile, while the
  loads of the next AHEAD tiles are in flight: the look-ahead's idea in a lean loop (one run in
  registers at a time, two applications an item);
against distscan's own float32 recurrence ("auto": the look-back with its reduction lead; the
look-back without a lead; the look-ahead) and copy, in one run (harness.events_interleaved: GPU
time, L2 flushed, the host hidden, median of --reps).  Bytes: a, b and y, 12 an item.  The
free kernels' results are not a scan (their tiles are not chained); ``chained``'s are checked
against the float64 recurrence (relative error <= 1e-3 of the scale) and distscan's against it too.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import cupy as cp  # noqa: E402

from harness import SELF, copy_bandwidth, events_interleaved  # noqa: E402

import distscan  # noqa: E402
from distscan.backends import cuda as gpu  # noqa: E402

SOURCE = r"""
struct Map { float a, b; };  // x -> a*x + b
// first p, then q
__device__ __forceinline__ Map after(Map p, Map q) { return Map{q.a * p.a, fmaf(q.a, p.b, q.b)}; }

template <int THREADS, int ITEMS>
struct Tile { static constexpr int N = THREADS * ITEMS; static constexpr int N4 = N / 4; };

// a and b of tile t into shared memory (warp-striped float4 loads); past n, the identity map
template <int THREADS, int ITEMS>
__device__ __forceinline__ void load_tile(const float* a, const float* b, long long base, long long n,
                                          float* sa, float* sb) {
    typedef Tile<THREADS, ITEMS> T;
    if (base + T::N <= n) {
        const float4* a4 = reinterpret_cast<const float4*>(a + base);
        const float4* b4 = reinterpret_cast<const float4*>(b + base);
        #pragma unroll
        for (int k = threadIdx.x; k < T::N4; k += THREADS) {
            reinterpret_cast<float4*>(sa)[k] = __ldcs(a4 + k);
            reinterpret_cast<float4*>(sb)[k] = __ldcs(b4 + k);
        }
    } else {
        for (int k = threadIdx.x; k < T::N; k += THREADS) {
            bool in = base + k < n;
            sa[k] = in ? a[base + k] : 1.0f;
            sb[k] = in ? b[base + k] : 0.0f;
        }
    }
}

template <int THREADS, int ITEMS>
__device__ __forceinline__ void store_tile(float* y, long long base, long long n, const float* sy) {
    typedef Tile<THREADS, ITEMS> T;
    if (base + T::N <= n) {
        float4* y4 = reinterpret_cast<float4*>(y + base);
        #pragma unroll
        for (int k = threadIdx.x; k < T::N4; k += THREADS) __stcs(y4 + k, reinterpret_cast<const float4*>(sy)[k]);
    } else {
        for (int k = threadIdx.x; k < T::N && base + k < n; k += THREADS) y[base + k] = sy[k];
    }
}

// A barrier of the THREADS data threads: __syncthreads, or bar.sync 1 where a service warp runs
// beside them (MODE 3) and does not take part.
template <int THREADS, int MODE>
__device__ __forceinline__ void data_sync() {
    if (MODE == 3) asm volatile("bar.sync 1, %0;" :: "r"(THREADS) : "memory");
    else __syncthreads();
}

// The block's exclusive scan of the threads' maps: each thread's prefix map and the tile's map.
template <int THREADS, int MODE>
__device__ __forceinline__ Map block_exclusive(Map m, Map* warp_maps, Map& tile) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    Map inc = m;
    #pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        Map o{__shfl_up_sync(0xffffffffu, inc.a, d), __shfl_up_sync(0xffffffffu, inc.b, d)};
        if (lane >= d) inc = after(o, inc);
    }
    if (lane == 31) warp_maps[warp] = inc;
    data_sync<THREADS, MODE>();
    Map before{1.0f, 0.0f};
    tile = Map{1.0f, 0.0f};
    #pragma unroll
    for (int w = 0; w < THREADS / 32; ++w) {
        Map wm = warp_maps[w];
        if (w < warp) before = after(before, wm);
        tile = after(tile, wm);
    }
    Map ex{__shfl_up_sync(0xffffffffu, inc.a, 1), __shfl_up_sync(0xffffffffu, inc.b, 1)};
    if (lane == 0) ex = Map{1.0f, 0.0f};
    return after(before, ex);
}

// status word of a tile: {flag (0 none, 1 aggregate, 2 inclusive), a, b, 0}, one 16-byte store
__device__ __forceinline__ void publish(int4* status, long long t, int flag, Map m) {
    asm volatile("st.volatile.global.v4.s32 [%0], {%1, %2, %3, %4};"
                 :: "l"(status + t), "r"(flag), "r"(__float_as_int(m.a)), "r"(__float_as_int(m.b)), "r"(0) : "memory");
}

__device__ __forceinline__ int4 read_status(const int4* p) {
    int4 v;
    asm volatile("ld.volatile.global.v4.s32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p) : "memory");
    return v;
}

// warp 0: the map of every item before tile t (its predecessors' maps, 32 at a step); a warp that
// finds a status word not yet written reads its 32 again after SLEEP ns (0: at once)
template <int SLEEP>
__device__ Map look_back(int4* status, long long t) {
    const int lane = threadIdx.x & 31;
    Map prefix{1.0f, 0.0f};
    long long end = t;  // tiles [.., end) still to fold
    while (true) {
        long long p = end - 1 - lane;  // lane 0 the nearest
        int4 w = make_int4(2, __float_as_int(1.0f), 0, 0);
        while (true) {
            if (p >= 0) w = read_status(status + p);
            if (__all_sync(0xffffffffu, w.x != 0)) break;
            if (SLEEP) __nanosleep(SLEEP);
        }
        unsigned inclusive = __ballot_sync(0xffffffffu, w.x == 2);
        int stop = inclusive ? __ffs(inclusive) - 1 : 31;  // fold lanes 0..stop
        Map m = lane <= stop ? Map{__int_as_float(w.y), __int_as_float(w.z)} : Map{1.0f, 0.0f};
        // lanes in tile order: lane stop is the oldest; fold older (higher lane) first
        #pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
            Map o{__shfl_down_sync(0xffffffffu, m.a, d), __shfl_down_sync(0xffffffffu, m.b, d)};
            if (lane + d < 32) m = after(o, m);
        }
        Map window{__shfl_sync(0xffffffffu, m.a, 0), __shfl_sync(0xffffffffu, m.b, 0)};
        prefix = after(window, prefix);
        if (inclusive) return prefix;
        end -= 32;
    }
}

template <int THREADS, int ITEMS, int MODE, int SLEEP>
__global__ void __launch_bounds__(THREADS + (MODE == 3 ? 32 : 0)) affine_tile(const float* a, const float* b, float* y, long long n,
                                                       int4* status, unsigned long long* counter) {
    typedef Tile<THREADS, ITEMS> T;
    __shared__ __align__(16) float sa[T::N];
    __shared__ __align__(16) float sb[T::N];
    __shared__ Map warp_maps[THREADS / 32];
    __shared__ Map tile_prefix;
    __shared__ long long tile_id;
    long long t;
    if (MODE >= 2) {
        if (threadIdx.x == 0) tile_id = (long long)atomicAdd(counter, 1ull);
        __syncthreads();
        t = tile_id;
    } else {
        t = blockIdx.x;
    }
    if (MODE == 3 && threadIdx.x >= THREADS) {
        // the service warp: the look-back from the block's start, while the data warps load and
        // reduce the tile and publish its aggregate
        Map p{1.0f, 0.0f};
        if (t > 0) p = look_back<SLEEP>(status, t);
        if (threadIdx.x == THREADS) tile_prefix = p;
        __syncthreads();  // (the prefix to the data warps)
        return;
    }
    const long long base = t * T::N;
    load_tile<THREADS, ITEMS>(a, b, base, n, sa, sb);
    data_sync<THREADS, MODE>();
    float ra[ITEMS], rb[ITEMS];
    #pragma unroll
    for (int i = 0; i < ITEMS; ++i) { ra[i] = sa[threadIdx.x * ITEMS + i]; rb[i] = sb[threadIdx.x * ITEMS + i]; }
    Map run{1.0f, 0.0f};
    float ia[MODE == 1 ? ITEMS : 1], ib[MODE == 1 ? ITEMS : 1];
    #pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
        run = after(run, Map{ra[i], rb[i]});
        if (MODE == 1) { ia[i] = run.a; ib[i] = run.b; }
    }
    Map tile;
    Map ex = block_exclusive<THREADS, MODE>(run, warp_maps, tile);
    float y0 = 0.0f;  // the y before the tile
    if (MODE == 2) {
        if (t == 0) {
            if (threadIdx.x == 0) publish(status, t, 2, tile);
            y0 = 0.0f;
        } else {
            if (threadIdx.x == 0) publish(status, t, 1, tile);
            if (threadIdx.x < 32) {
                Map p = look_back<SLEEP>(status, t);
                if (threadIdx.x == 0) { publish(status, t, 2, after(p, tile)); tile_prefix = p; }
            }
            __syncthreads();
            y0 = tile_prefix.b;  // the prefix applied to y[-1] = 0
        }
    }
    if (MODE == 3) {
        if (threadIdx.x == 0) publish(status, t, t == 0 ? 2 : 1, tile);
        __syncthreads();  // (the service warp's prefix)
        if (threadIdx.x == 0 && t > 0) publish(status, t, 2, after(tile_prefix, tile));
        y0 = tile_prefix.b;
    }
    float yy = fmaf(ex.a, y0, ex.b);  // the y before this thread's run
    data_sync<THREADS, MODE>();  // (sa is reused for y)
    if (MODE == 1) {
        #pragma unroll
        for (int i = 0; i < ITEMS; ++i) sa[threadIdx.x * ITEMS + i] = fmaf(ia[i], yy, ib[i]);
    } else {
        #pragma unroll
        for (int i = 0; i < ITEMS; ++i) { yy = fmaf(ra[i], yy, rb[i]); sa[threadIdx.x * ITEMS + i] = yy; }
    }
    data_sync<THREADS, MODE>();
    store_tile<THREADS, ITEMS>(y, base, n, sa);
}

// ---- "ring": persistent blocks; a ring of S = AHEAD + DEPTH + 1 tile stages filled by cp.async;
// iteration i reduces tile i (publishing its aggregate at once) and scans tile i - DEPTH from the
// stage, while the loads of tiles i+1 .. i+AHEAD are in flight and a service warp (the block's last)
// looks back for the tiles already reduced.  Two applications an item; a thread's run in registers
// one at a time.
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
    unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(s), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;" :: "n"(N) : "memory"); }

template <int THREADS, int ITEMS>
__device__ __forceinline__ void issue_load(const float* a, const float* b, long long t, long long n,
                                           long long num_tiles, float* sa, float* sb) {
    typedef Tile<THREADS, ITEMS> T;
    if (t >= num_tiles) return;
    const long long base = t * T::N;
    if (base + T::N <= n) {
        const float4* a4 = reinterpret_cast<const float4*>(a + base);
        const float4* b4 = reinterpret_cast<const float4*>(b + base);
        for (int k = threadIdx.x; k < T::N4; k += THREADS) {
            cp_async16(reinterpret_cast<float4*>(sa) + k, a4 + k);
            cp_async16(reinterpret_cast<float4*>(sb) + k, b4 + k);
        }
    } else {
        load_tile<THREADS, ITEMS>(a, b, base, n, sa, sb);  // the last tile, part of one: plain loads
    }
}

template <int THREADS, int ITEMS, int DEPTH, int AHEAD>
__global__ void __launch_bounds__(THREADS + 32) affine_ring(const float* a, const float* b, float* y, long long n,
                                                            int4* status, unsigned long long* counter) {
    typedef Tile<THREADS, ITEMS> T;
    constexpr int S = AHEAD + DEPTH + 1;
    extern __shared__ __align__(16) float smem[];
    float* stage_a = smem;  // S stages of N a's (then y's), S of N b's, S * THREADS thread maps
    float* stage_b = smem + S * T::N;
    Map* thread_ex = reinterpret_cast<Map*>(smem + 2 * S * T::N);
    __shared__ Map warp_maps[THREADS / 32];
    __shared__ long long next_tile[S];   // the tile of iteration k, claimed ahead, at k % S
    __shared__ long long stage_tile[S];  // the tile reduced in a stage
    __shared__ Map stage_agg[S];
    __shared__ Map stage_prefix[S];
    __shared__ volatile int reduced[S];  // k + 1 once iteration k's tile is reduced (its aggregate out)
    __shared__ volatile int ready[S];    // k + 1 once its prefix is in stage_prefix
    const long long num_tiles = (n + T::N - 1) / T::N;
    if (threadIdx.x < S) { reduced[threadIdx.x] = 0; ready[threadIdx.x] = 0; }
    if (threadIdx.x == 0) {
        for (int k = 0; k <= AHEAD; ++k) next_tile[k] = (long long)atomicAdd(counter, 1ull);
    }
    __syncthreads();
    if (threadIdx.x >= THREADS) {  // the service warp
        for (int j = 0;; ++j) {
            const int sj = j % S;
            while (reduced[sj] != j + 1) {}
            __threadfence_block();  // (no read of the stage's words hoisted above the wait)
            const long long t = stage_tile[sj];
            if (t >= num_tiles) return;
            Map p{1.0f, 0.0f};
            if (t > 0) p = look_back<0>(status, t);
            if (threadIdx.x == THREADS) {
                stage_prefix[sj] = p;
                if (t > 0) publish(status, t, 2, after(p, stage_agg[sj]));
                __threadfence_block();
                ready[sj] = j + 1;
            }
            __syncwarp();
        }
    }
    for (int k = 0; k < AHEAD; ++k) {
        issue_load<THREADS, ITEMS>(a, b, next_tile[k], n, num_tiles, stage_a + k * T::N, stage_b + k * T::N);
        cp_async_commit();
    }
    for (int i = 0;; ++i) {
        const int s = i % S;
        cp_async_wait<AHEAD - 1>();  // (this thread's copies of tile i)
        data_sync<THREADS, 3>();
        const long long t = next_tile[s];
        const int sl = (i + AHEAD) % S;  // free: its tile was scanned and stored in iteration i - 1
        issue_load<THREADS, ITEMS>(a, b, next_tile[sl], n, num_tiles, stage_a + sl * T::N, stage_b + sl * T::N);
        cp_async_commit();
        if (threadIdx.x == 0) next_tile[(i + AHEAD + 1) % S] = (long long)atomicAdd(counter, 1ull);
        if (t < num_tiles) {  // reduce tile i
            const float* ra = stage_a + s * T::N + threadIdx.x * ITEMS;
            const float* rb = stage_b + s * T::N + threadIdx.x * ITEMS;
            Map run{1.0f, 0.0f};
            #pragma unroll
            for (int k = 0; k < ITEMS; ++k) run = after(run, Map{ra[k], rb[k]});
            Map tile;
            Map ex = block_exclusive<THREADS, 3>(run, warp_maps, tile);
            thread_ex[s * THREADS + threadIdx.x] = ex;
            if (threadIdx.x == 0) {
                stage_agg[s] = tile;
                publish(status, t, t == 0 ? 2 : 1, tile);
                __threadfence();  // (the aggregate out before the service warp's inclusive word)
            }
        }
        if (threadIdx.x == 0) { stage_tile[s] = t; __threadfence_block(); reduced[s] = i + 1; }
        const int j = i - DEPTH;
        if (j < 0) continue;
        const int sj = j % S;
        const long long tj = stage_tile[sj];
        if (tj >= num_tiles) break;  // (every later tile of this block is past the end too)
        while (ready[sj] != j + 1) __nanosleep(32);  // (leaves the issue slots to the service warp)
        __threadfence_block();  // (no read of the prefix hoisted above the wait)
        const Map p = stage_prefix[sj];
        const Map ex = thread_ex[sj * THREADS + threadIdx.x];
        float* ya = stage_a + sj * T::N + threadIdx.x * ITEMS;
        const float* yb = stage_b + sj * T::N + threadIdx.x * ITEMS;
        float yy = fmaf(ex.a, p.b, ex.b);
        #pragma unroll
        for (int k = 0; k < ITEMS; ++k) { yy = fmaf(ya[k], yy, yb[k]); ya[k] = yy; }
        data_sync<THREADS, 3>();
        store_tile<THREADS, ITEMS>(y, tj * T::N, n, stage_a + sj * T::N);
    }
}
"""

MODES = {"free2": 0, "free3": 1, "chained": 2, "service": 3}


def ring_names(rings):
    """``{(threads, items, depth, ahead): name expression}`` of the persistent rings."""
    return {r: "affine_ring<{}, {}, {}, {}>".format(*r) for r in rings}


def ring_kernels(mod, names):
    """``{(threads, items, depth, ahead): (kernel, dynamic shared bytes, grid)}``: the persistent ring's."""
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    out = {}
    for (t, i, d, ah), name in names.items():
        fn = mod.get_function(name)
        stages = ah + d + 1
        smem = 2 * stages * t * i * 4 + stages * t * 8
        fn.max_dynamic_shared_size_bytes = smem
        try:
            per_sm = cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(fn.ptr, t + 32, smem)
        except Exception:  # noqa: BLE001
            per_sm = max(1, (227 * 1024) // (smem + fn.shared_size_bytes + 1024))
        out[(t, i, d, ah)] = (fn, smem, int(per_sm) * sms)
    return out


def tile_names(shapes, sleeps):
    """``{(threads, items, mode, sleep ns): name expression}``: every mode without a sleep, and the
    chained ones with each of ``sleeps``."""
    keys = [(t, i, m, 0) for t, i in shapes for m in MODES.values()]
    keys += [(t, i, m, ns) for t, i in shapes for m in (2, 3) for ns in sleeps if ns]
    return {k: "affine_tile<{}, {}, {}, {}>".format(*k) for k in keys}


def launch(fn, tile, chained, grid, block, a, b, y, status, smem=0):
    """A call of ``fn`` over a and b into y; ``chained``: its tiles' status words and the counter
    after them (status[tiles]) zeroed first; ``grid`` None: one block a tile."""
    n = a.size
    tiles = -(-n // tile)
    blocks = tiles if grid is None else grid

    def call():
        if chained:
            status[:tiles + 1].fill(0)
        counter = status[tiles:].data.ptr
        fn((blocks,), (block,), (a, b, y, np.int64(n), status, np.uint64(counter)), shared_mem=smem)
    return call


def _check(name, got, want, scale):
    err = float(cp.abs(got.astype(np.float64) - want).max()) / scale
    if not err <= 1e-3:
        raise SystemExit(f"{name}: relative error {err:.3g}")


def measure(log2n, shapes, funcs, reps, rings=None):
    n = 1 << log2n
    rng = np.random.default_rng(log2n)
    a = cp.asarray(rng.uniform(0.9, 1.0, n).astype(np.float32))
    b = cp.asarray(rng.standard_normal(n).astype(np.float32))
    want = distscan.linear_recurrence(a.astype(np.float64), b.astype(np.float64), comm=SELF)
    scale = max(float(cp.abs(want).max()), 1.0)
    y = cp.empty(n, np.float32)
    status = cp.zeros((-(-n // 64) + 2, 4), np.int32)  # enough for any tile of 64 items or more
    impls = {}
    for (t, i, m, ns), fn in funcs.items():
        name = f"{[k for k, v in MODES.items() if v == m][0]} {t}x{i}" + (f" sleep {ns}" if ns else "")
        impls[name] = launch(fn, t * i, m >= 2, None, t + (32 if m == 3 else 0), a, b, y, status)
        if m >= 2:
            impls[name]()
            _check(name, y, want, scale)
    for (t, i, d, ah), (fn, smem, grid) in (rings or {}).items():
        name = f"ring {t}x{i} depth {d} ahead {ah} ({grid // cp.cuda.Device().attributes['MultiProcessorCount']}/SM)"
        impls[name] = launch(fn, t * i, True, grid, t + 32, a, b, y, status, smem)
        y.fill(np.nan)
        impls[name]()
        _check(name, y, want, scale)
    outs = {}
    for alg in ("auto", "lookback", "lookahead"):
        outs[alg] = cp.empty(n, np.float32)
        _check(f"distscan {alg}", distscan.linear_recurrence(a, b, comm=SELF, algorithm=alg, out=outs[alg]), want,
               scale)

    def ds(alg, lead=None):
        def call():
            if lead is None:
                distscan.linear_recurrence(a, b, comm=SELF, algorithm=alg, out=outs[alg])
            else:
                with gpu.overrides(lead=lead):
                    distscan.linear_recurrence(a, b, comm=SELF, algorithm=alg, out=outs[alg])
        return call
    impls["distscan auto (look-back, lead)"] = ds("auto")
    impls["distscan look-back, no lead"] = ds("auto", 0)
    impls["distscan look-ahead"] = ds("lookahead")
    med = events_interleaved(impls, reps, hide_host=True)
    copy = copy_bandwidth(4 * n * 3 // 2, reps)  # (12 bytes an item moved: 6 read and 6 written)
    rows = [{"impl": k, "ms": v * 1e3, "gbs": 12 * n / v / 1e9} for k, v in med.items()]
    return {"log2n": log2n, "copy_gbs": copy, "rows": rows}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out", nargs="?")
    ap.add_argument("--log2n", default="27,29")
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--shapes", default="128x17,128x25,128x33,256x17,64x33")
    ap.add_argument("--sleeps", default="", help="ns a waiting look-back sleeps before it reads again (chained, service)")
    ap.add_argument("--rings", default="", help="persistent rings, THREADSxITEMSxDEPTHxAHEAD, comma-separated")
    args = ap.parse_args()
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",") if s]
    tiles = tile_names(shapes, [int(v) for v in args.sleeps.split(",") if v])
    ringed = ring_names([tuple(int(v) for v in r.split("x")) for r in args.rings.split(",") if r])
    # (one compile of the source for every kernel asked for)
    mod = cp.RawModule(code=SOURCE, options=("--std=c++17",),
                       name_expressions=list(tiles.values()) + list(ringed.values()))
    funcs = {k: mod.get_function(name) for k, name in tiles.items()}
    rings = ring_kernels(mod, ringed)
    for r, (f, smem, grid) in rings.items():
        print(f"ring {r}: {f.num_regs} registers, {f.shared_size_bytes} + {smem} B shared, "
              f"{f.local_size_bytes} B local, grid {grid}")
    for (t, i, m, ns), f in funcs.items():
        print(f"{t}x{i} mode {m} sleep {ns}: {f.num_regs} registers, {f.shared_size_bytes} B shared, "
              f"{f.local_size_bytes} B local")
    data = {"device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
            "when": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "runs": []}
    for log2n in (int(v) for v in args.log2n.split(",")):
        run = measure(log2n, shapes, funcs, args.reps, rings)
        data["runs"].append(run)
        print(f"{data['device']}, 2^{log2n} float32 items, copy {run['copy_gbs']:.0f} GB/s, {data['when']}")
        for r in sorted(run["rows"], key=lambda r: -r["gbs"]):
            print(f"  {r['impl']:34s} {r['ms']:8.3f} ms {r['gbs']:7.0f} GB/s {r['gbs'] / run['copy_gbs']:6.3f} of copy")
    if args.out:
        Path(args.out).write_text(json.dumps(data, indent=1))


if __name__ == "__main__":
    main()
