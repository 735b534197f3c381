"""Rows to columns and back for the column-at-a-time scan of a few columns (``general.py``): one
kernel each way that moves both sides coalesced.

CuPy's ``ascontiguousarray(x.T)`` of ``(n, w)`` rows reads rows and writes columns one item a
thread, strided: 0.65 ms for ``(2^25, 4)`` float32 (1.5 TB/s over the gigabyte moved) and 2.36 ms
for ``(2^22, 32)`` (0.45 TB/s) on an H200, where the scans of those columns take 0.28 ms in all
(2026-11-28, ``benchmarks/bench_columns.py``).  Here a block takes a tile of rows: it reads them
as one contiguous run into shared memory (each row padded to ``w + 1`` items, so that a column's
items fall in different banks) and writes each column's part of the tile as one contiguous run;
the way back reads the runs and writes the rows.

Assumptions: both arrays C-contiguous, of one item size (the kernels move bytes: any dtype of 1,
2, 4, 8 or 16 bytes); launched on the current stream of the current device, which holds them.
"""

from __future__ import annotations

import numpy as np

from .device import cp

_SOURCE = r"""
struct __align__(16) Bytes16 { unsigned long long lo, hi; };

// x (n, w) rows -> xt (w, n) columns, ROWS rows a block.
template <typename T>
__global__ void rows_to_columns(const T* __restrict__ x, T* __restrict__ xt, long long n, int w, int rows_per_block) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    T* s = reinterpret_cast<T*>(smem_raw);
    const long long r0 = (long long)blockIdx.x * rows_per_block;
    const int rows = (int)min((long long)rows_per_block, n - r0);
    const int count = rows * w;
    const T* src = x + r0 * w;
    for (int k = threadIdx.x; k < count; k += blockDim.x) {
        const int r = k / w, c = k - r * w;
        s[r * (w + 1) + c] = src[k];
    }
    __syncthreads();
    for (int k = threadIdx.x; k < count; k += blockDim.x) {
        const int c = k / rows, r = k - c * rows;
        xt[(long long)c * n + r0 + r] = s[r * (w + 1) + c];
    }
}

// ot (w, n) columns -> out (n, w) rows.
template <typename T>
__global__ void columns_to_rows(const T* __restrict__ ot, T* __restrict__ out, long long n, int w, int rows_per_block) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    T* s = reinterpret_cast<T*>(smem_raw);
    const long long r0 = (long long)blockIdx.x * rows_per_block;
    const int rows = (int)min((long long)rows_per_block, n - r0);
    const int count = rows * w;
    for (int k = threadIdx.x; k < count; k += blockDim.x) {
        const int c = k / rows, r = k - c * rows;
        s[r * (w + 1) + c] = ot[(long long)c * n + r0 + r];
    }
    __syncthreads();
    T* dst = out + r0 * w;
    for (int k = threadIdx.x; k < count; k += blockDim.x) {
        const int r = k / w, c = k - r * w;
        dst[k] = s[r * (w + 1) + c];
    }
}
"""

_TYPES = {1: "unsigned char", 2: "unsigned short", 4: "unsigned int", 8: "unsigned long long", 16: "Bytes16"}
_THREADS = 256
_SMEM = 48 * 1024  # the default dynamic shared memory of a block (no opt-in needed)
_MODULE = None


def _kernel(name: str, itemsize: int):
    global _MODULE
    if _MODULE is None:  # (both directions, every item size; CuPy caches the binary on disk)
        _MODULE = cp.RawModule(code=_SOURCE, options=("--std=c++17",),
                               name_expressions=[f"{k}<{t}>" for k in ("rows_to_columns", "columns_to_rows")
                                                 for t in _TYPES.values()])
    return _MODULE.get_function(f"{name}<{_TYPES[itemsize]}>")


def _launch(name: str, src, dst, n: int, w: int) -> None:
    size = src.dtype.itemsize
    rows = max(1, min(1024, _SMEM // (size * (w + 1))))
    grid = -(-n // rows)
    _kernel(name, size)((grid,), (_THREADS,), (src, dst, np.int64(n), np.int32(w), np.int32(rows)),
                        shared_mem=rows * (w + 1) * size)


def _fits(w: int, size: int) -> bool:
    """Whether one padded row of ``w`` items fits a block's shared memory (else CuPy's copy)."""
    return size in _TYPES and size * (w + 1) <= _SMEM


def rows_to_columns(x):
    """``cp.ascontiguousarray(x.T)`` of C-contiguous ``(n, w)`` rows."""
    n, w = x.shape
    if not _fits(w, x.dtype.itemsize):
        return cp.ascontiguousarray(x.T)
    xt = cp.empty((w, n), x.dtype)
    if n and w:
        _launch("rows_to_columns", x, xt, n, w)
    return xt


def columns_to_rows(ot, out) -> None:
    """``out[...] = ot.T`` for C-contiguous ``ot`` ``(w, n)`` and ``out`` ``(n, w)`` of one item size."""
    w, n = ot.shape
    if not _fits(w, ot.dtype.itemsize):
        out[...] = ot.T
    elif n and w:
        _launch("columns_to_rows", ot, out, n, w)
