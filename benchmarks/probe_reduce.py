#!/usr/bin/env python3
"""How fast can one GPU reduce a column, against copy and the reduction distscan ships?

    PYTHONPATH=$PWD python3 benchmarks/probe_reduce.py OUT.json [--log2n 28,29] [--reps 15]

Question (issue 30's rows on 2 GPUs): a distributed scan on k GPUs is a reduction, the exchange,
then a seeded scan; the reduction is one of its three passes.  On 2 H200s at 2^28 float32 items
per GPU (2026-11-26, benchmarks/RESULTS.md) the reduce phase took 0.306 ms: 3.5 TB/s against
4.2 for a copy (read + write counted), so a third of the call's gap to its floor.  Is that the
kernel's shape (four 16-byte loads in flight a thread, 4 blocks of 256 per SM, grid-stride), and
which shape reads at copy speed?

Variants (each one block of 256 threads reduces its share into a partial; the partials are then
reduced by one block; the times are both kernels', GPU only, CUDA events, median of --reps, the
variants in a new random order each repetition with the L2 flushed before each,
``harness.events_interleaved``):

- ``shipped``: distscan's ``reduce_partials_kernel`` + ``reduce_final_kernel`` as the plan launches
  them (``backends/cuda/reductions._launch_reduce``);
- ``strideL_bB``: the same grid-stride loop with L loads in flight a thread and B blocks a SM;
- ``chunkL_bB``: B blocks a SM, each over one contiguous share of the array, L consecutive
  16-byte vectors a thread a round (a block's round reads 256 * L * 16 bytes in one run);
- ``cupy.sum`` (CUB's device reduction through CuPy) and ``copy`` (cudaMemcpyAsync D2D) as peers.

Each variant's result is checked against the shipped one (integers exactly, floats within 1e-6
of the sum of absolute values).  GB/s = N * itemsize / time (one read); copy's = 2 * N * itemsize.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness import cp, device_copy, events_interleaved  # noqa: E402

_SOURCE = r"""
typedef long long i64;
template <typename T> __device__ __forceinline__ T fold4(T acc, uint4 v) {
    union { uint4 v; T t[16 / sizeof(T)]; } u; u.v = v;
#pragma unroll
    for (int i = 0; i < (int)(16 / sizeof(T)); ++i) acc += u.t[i];
    return acc;
}
template <typename T> __device__ __forceinline__ T block_sum(T x) {
    __shared__ T s[8];
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) x += __shfl_xor_sync(0xffffffffu, x, d);
    if ((threadIdx.x & 31) == 0) s[threadIdx.x >> 5] = x;
    __syncthreads();
    T r = s[0];
#pragma unroll
    for (int w = 1; w < 8; ++w) r += s[w];
    return r;
}
// grid-stride, L loads in flight a thread
template <typename T, int L> __global__ void __launch_bounds__(256) stride_kernel(const T *in, i64 n, T *partials) {
    const i64 tid = (i64)blockIdx.x * 256 + threadIdx.x, stride = (i64)gridDim.x * 256;
    const int VEC = 16 / sizeof(T);
    const i64 nv = n / VEC;
    const uint4 *src = reinterpret_cast<const uint4 *>(in);
    T acc = T(0);
    i64 v = tid;
    for (; v + (L - 1) * stride < nv; v += L * stride) {
        uint4 r[L];
#pragma unroll
        for (int j = 0; j < L; ++j) r[j] = __ldcs(src + v + j * stride);
#pragma unroll
        for (int j = 0; j < L; ++j) acc = fold4<T>(acc, r[j]);
    }
    for (; v < nv; v += stride) acc = fold4<T>(acc, __ldcs(src + v));
    for (i64 i = nv * VEC + tid; i < n; i += stride) acc += in[i];
    T b = block_sum<T>(acc);
    if (threadIdx.x == 0) partials[blockIdx.x] = b;
}
// a contiguous share a block, L consecutive vectors a thread a round
template <typename T, int L> __global__ void __launch_bounds__(256) chunk_kernel(const T *in, i64 n, T *partials) {
    const int VEC = 16 / sizeof(T);
    const i64 nv = n / VEC;
    const i64 per = (nv + gridDim.x - 1) / gridDim.x;
    const i64 begin = (i64)blockIdx.x * per, end = begin + per < nv ? begin + per : nv;
    const uint4 *src = reinterpret_cast<const uint4 *>(in);
    T acc = T(0);
    i64 v = begin + threadIdx.x;
    for (; v + (L - 1) * 256 < end; v += L * 256) {
        uint4 r[L];
#pragma unroll
        for (int j = 0; j < L; ++j) r[j] = __ldcs(src + v + j * 256);
#pragma unroll
        for (int j = 0; j < L; ++j) acc = fold4<T>(acc, r[j]);
    }
    for (; v < end; v += 256) acc = fold4<T>(acc, __ldcs(src + v));
    if (blockIdx.x == gridDim.x - 1)
        for (i64 i = nv * VEC + threadIdx.x; i < n; i += 256) acc += in[i];
    T b = block_sum<T>(acc);
    if (threadIdx.x == 0) partials[blockIdx.x] = b;
}
template <typename T> __global__ void __launch_bounds__(256) final_kernel(const T *partials, int count, T *out) {
    T acc = T(0);
    for (int i = threadIdx.x; i < count; i += 256) acc += partials[i];
    T b = block_sum<T>(acc);
    if (threadIdx.x == 0) out[0] = b;
}
"""

LOADS = (4, 8, 16)
BLOCKS = (4, 8)


def _module(ctype: str):
    names = [f"stride_kernel<{ctype},{L}>" for L in LOADS] + [f"chunk_kernel<{ctype},{L}>" for L in LOADS]
    names.append(f"final_kernel<{ctype}>")
    return cp.RawModule(code=_SOURCE, options=("-std=c++17",), name_expressions=names), names


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json_out")
    ap.add_argument("--log2n", default="28,29")
    ap.add_argument("--reps", type=int, default=15)
    a = ap.parse_args()
    import distscan  # noqa: F401 - the shipped kernels through the plan
    from distscan._dtypes import scan_types
    from distscan.backends.cuda import reductions
    from distscan.backends.cuda.plans import plan_of
    from distscan.ops import get_op

    sms = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    gpu = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    rows = []
    for dtype, ctype in ((np.float32, "float"), (np.int64, "long long")):
        mod, names = _module(ctype)
        final = mod.get_function(names[-1])
        op = get_op("sum")
        types = scan_types(op, np.dtype(dtype))
        for lg in (int(v) for v in a.log2n.split(",")):
            n = 1 << lg
            rs = cp.random.RandomState(lg)
            x = (rs.standard_normal(n, dtype=cp.float32) if dtype == np.float32
                 else rs.randint(-1000, 1000, n, dtype=cp.int64))
            y = cp.empty_like(x)
            plan = plan_of(0, x.dtype, types, op)
            grid = reductions._reduce_grid(n, plan.in_size, reductions._reduce_max_grid(plan, 0))
            partials = cp.empty(max(grid, 16 * sms), plan.kacc)
            res = cp.empty(1, plan.kacc)
            impls = {"shipped": lambda: reductions._launch_reduce(plan, x, n, partials, res, grid)}
            outs = {}
            for L in LOADS:
                for B in BLOCKS:
                    for kind, fn in (("stride", names[LOADS.index(L)]), ("chunk", names[len(LOADS) + LOADS.index(L)])):
                        k = mod.get_function(fn)
                        g = B * sms
                        o = cp.empty(1, x.dtype)
                        outs[f"{kind}{L}_b{B}"] = o

                        def run(k=k, g=g, o=o):
                            k((g,), (256,), (x, np.int64(n), partials))
                            final((1,), (256,), (partials, np.int32(g), o))
                        impls[f"{kind}{L}_b{B}"] = run
            impls["cupy.sum"] = lambda: x.sum()
            impls["copy"] = device_copy(y, x)
            # check
            impls["shipped"]()
            want = res.get()[0]
            scale = float(cp.abs(x).astype(cp.float64).sum())
            for name, o in outs.items():
                impls[name]()
                got = o.get()[0]
                ok = got == want if dtype == np.int64 else abs(float(got) - float(want)) <= 1e-6 * scale
                assert ok, f"{name} {dtype.__name__} 2^{lg}: {got} != {want}"
            times = events_interleaved(impls, a.reps)
            for name, t in times.items():
                nbytes = (2 if name == "copy" else 1) * x.nbytes
                rows.append({"dtype": np.dtype(dtype).name, "log2n": lg, "impl": name, "seconds": t,
                             "gbs": nbytes / t / 1e9})
            del x, y
    Path(a.json_out).write_text(json.dumps({"gpu": gpu, "rows": rows}, indent=1))
    print(f"{gpu}: one column reduced, GB/s of reads (copy: read + write), GPU only, median of {a.reps}")
    keys = sorted({(r["dtype"], r["log2n"]) for r in rows})
    for d, lg in keys:
        sel = {r["impl"]: r for r in rows if r["dtype"] == d and r["log2n"] == lg}
        copy = sel["copy"]["gbs"]
        print(f"{d} 2^{lg}: copy {copy:.0f}; " + ", ".join(
            f"{k} {v['gbs']:.0f} ({v['gbs'] / copy:.3f})" for k, v in sorted(sel.items(), key=lambda kv: -kv[1]["gbs"])
            if k != "copy"))


if __name__ == "__main__":
    main()
