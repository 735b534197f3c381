"""The float products' zero repair (``backends/absorb.py``) searched on the GPU in one pass a
question: where the first zero is, and what the rows after it hold.

As CuPy array operations each question took a comparison, an ``or``, a reduction and a copy
per array (2.2 ms to find no zero in 2^27 float32 items and their results on an H200, where the
scan itself takes 0.3 ms; 7.8 ms for a product that reaches 0, 2026-11-28).  Here one kernel
reads both arrays once and folds what it finds into a few words by ``atomicMin``.

Assumptions (each checked where it is used): float32 and float64 items and results of one
dtype (other dtypes take :class:`~distscan.backends.absorb.ArraySearch`'s array operations);
1-D views of any stride (a column of ``(n, w)`` rows, a reversed view); the kernels run on the
current stream and their few words are read back on it, so the repair that follows sees them.
"""

from __future__ import annotations

import numpy as np

from ..absorb import ArraySearch
from .modules import device_module
from .device import cp, device_info

_SOURCE = r"""
typedef unsigned long long u64;
#define UNROLL 4

// The warp's least v into *out (v == none: nothing found, no atomic).  Every lane of the warp
// calls it (blockDim is a multiple of 32 and no thread returns early).
__device__ __forceinline__ void warp_min_into(u64* out, u64 v, u64 none) {
    for (int o = 16; o > 0; o >>= 1) v = min(v, __shfl_down_sync(0xffffffffu, v, o));
    if ((threadIdx.x & 31) == 0 && v != none) atomicMin(out, v);
}

// out[0] = the first i < n with a[i] == 0 or b[i] == 0 (out[0] starts at n).  A thread visits
// its indices in increasing order (UNROLL loads in flight), so its first hit is its least.
template <typename T>
__global__ void first_zero(const T* a, long long sa, const T* b, long long sb, long long n, u64* out) {
    const long long step = (long long)gridDim.x * blockDim.x;
    u64 found = (u64)n;
    for (long long base = (long long)blockIdx.x * blockDim.x + threadIdx.x; base < n && found == (u64)n;
         base += UNROLL * step) {
        T va[UNROLL], vb[UNROLL];
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) {
            long long i = base + k * step;
            va[k] = i < n ? a[i * sa] : T(1);
            vb[k] = i < n ? b[i * sb] : T(1);
        }
#pragma unroll
        for (int k = 0; k < UNROLL; ++k)
            if (found == (u64)n && (va[k] == T(0) || vb[k] == T(0))) found = (u64)(base + k * step);
    }
    warp_min_into(out, found, (u64)n);
}

// Over the m rows from a zero on (items x, results y), each word starting at m:
// out[0] = the first i with x[i] not finite, out[1] = the first i with y[i] != 0 (NaN too),
// out[2] = m - 1 - the last i with y[i] not NaN.
template <typename T>
__global__ void tail_marks(const T* x, long long sx, const T* y, long long sy, long long m, u64* out) {
    const long long step = (long long)gridDim.x * blockDim.x;
    u64 bad = (u64)m, nonzero = (u64)m;
    long long last = -1;
    for (long long base = (long long)blockIdx.x * blockDim.x + threadIdx.x; base < m; base += UNROLL * step) {
        T vx[UNROLL], vy[UNROLL];
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) {
            long long i = base + k * step;
            vx[k] = i < m ? x[i * sx] : T(1);
            vy[k] = i < m ? y[i * sy] : T(0);
        }
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) {
            long long i = base + k * step;
            if (i < m) {
                if (bad == (u64)m && !isfinite(vx[k])) bad = (u64)i;
                if (nonzero == (u64)m && vy[k] != T(0)) nonzero = (u64)i;
                if (!isnan(vy[k])) last = i;
            }
        }
    }
    warp_min_into(out, bad, (u64)m);
    warp_min_into(out + 1, nonzero, (u64)m);
    warp_min_into(out + 2, last < 0 ? (u64)m : (u64)(m - 1 - last), (u64)m);
}
"""

_NAMES = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}
_NAME_EXPRESSIONS = tuple(f"{k}<{t}>" for k in ("first_zero", "tail_marks") for t in _NAMES.values())
_THREADS = 256


def _kernel(name: str, dtype):
    # (one module for both dtypes, a device's, cached on disk; without -ftz, modules.raw_module:
    # a subnormal is not a zero)
    module = device_module(_SOURCE, ("--std=c++17",), _NAME_EXPRESSIONS)
    return module(f"{name}<{_NAMES[dtype]}>")


def _stride(a) -> int | None:
    """The stride of a 1-D CuPy array in items, or None where it is not a whole number of items."""
    step, size = a.strides[0], a.dtype.itemsize
    return step // size if step % size == 0 else None


def _fits(a, b) -> bool:
    """Whether the kernels serve 1-D ``a`` and ``b``: one dtype, float32 or float64, one shape, not
    empty, strides in whole items (else the array operations answer)."""
    return (a.dtype == b.dtype and a.dtype in _NAMES and a.shape == b.shape and a.shape[0] > 0
            and _stride(a) is not None and _stride(b) is not None)


class FusedSearch(ArraySearch):
    """:class:`~distscan.backends.absorb.ArraySearch` with one kernel a question for float32 and
    float64 arrays of CuPy; anything else goes to the array operations."""

    def __init__(self):
        super().__init__(cp)

    def _run(self, name: str, a, b, n: int, words: int) -> np.ndarray:
        sa, sb = _stride(a), _stride(b)
        with a.device:  # (the words and the launch on the arrays' GPU, whichever is current)
            out = cp.full(words, n, np.uint64)
            grid = max(1, min(8 * device_info(a.device.id)["sms"], -(-n // (_THREADS * 4))))
            _kernel(name, a.dtype)((grid,), (_THREADS,), (a, np.int64(sa), b, np.int64(sb), np.int64(n), out))
            return out.get()

    def _one_dimensional(self, a, b):
        """``(a, b)`` as 1-D views (a column of ``(n, 1)``, or C-contiguous ``(n, w)`` rows
        flattened: for "is there a zero anywhere"), or None."""
        if a.ndim == 2 and a.shape[1] == 1:
            return a[:, 0], b[:, 0]
        if a.ndim == 2 and a.flags.c_contiguous and b.flags.c_contiguous:
            return a.reshape(-1), b.reshape(-1)
        return (a, b) if a.ndim == 1 else None

    def any_zero(self, a, b) -> bool:
        flat = self._one_dimensional(a, b) if a.shape == b.shape else None
        if flat is None or not _fits(*flat):
            return super().any_zero(a, b)
        n = flat[0].shape[0]
        return int(self._run("first_zero", *flat, n, 1)[0]) < n

    def first_zero(self, a, b) -> int:
        if not _fits(a, b):
            return super().first_zero(a, b)
        return int(self._run("first_zero", a, b, a.shape[0], 1)[0])

    def tail_marks(self, x, y):
        if not _fits(x, y):
            return super().tail_marks(x, y)
        m = x.shape[0]
        bad, nonzero, from_end = (int(v) for v in self._run("tail_marks", x, y, m, 3))
        return bad, nonzero, m - 1 - from_end if from_end < m else -1


SEARCH = FusedSearch() if cp is not None else None
