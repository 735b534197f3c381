"""Casts between float32 and float64 values (complex parts too) that keep float32's subnormals.

CuPy compiles its elementwise kernels, ``astype`` among them, with -ftz=true
(cupy/cuda/compiler.py, ``_compile_with_cache_cuda``), and NVRTC's conversion under it is
``cvt.ftz.f64.f32`` / ``cvt.rn.ftz.f32.f64``: a float32 subnormal cast to float64, or a float64
that rounds to a float32 subnormal, became 0 where NumPy keeps it.  distscan's scans convert in
their own kernels (compiled without -ftz: ``modules``), but a recurrence's coefficients are cast to
the accumulator first (``distscan._call.Part``, ``distscan._kinds.Kind.aux``): a float32 ``a``
of 1e-40 with float64 ``b`` was a 0 there.  This module's kernel converts with plain
``cvt.f64.f32`` / ``cvt.rn.f32.f64``; every other cast is CuPy's (casts from and to integers and
float16 meet no float32 subnormal that NumPy would keep: float16's smallest is 6e-8).
"""

from __future__ import annotations

import numpy as np

from .device import cp, device_info
from .modules import device_module

_SOURCE = r"""
// out[i] = (D) in[i] for i < n: a real array, or a complex one as 2n parts.
template <typename S, typename D>
__global__ void convert(const S* in, D* out, long long n) {
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) out[i] = (D)in[i];
}

// out = in + 0j: out[2i] = (D) in[i], out[2i + 1] = 0, for i < n.
template <typename S, typename D>
__global__ void to_complex(const S* in, D* out, long long n) {
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        out[2 * i] = (D)in[i];
        out[2 * i + 1] = (D)0;
    }
}
"""

_PART = {np.dtype(t): p for t, p in [(np.float32, "float"), (np.complex64, "float"), (np.float64, "double"),
                                      (np.complex128, "double")]}
_NAME_EXPRESSIONS = tuple(f"{k}<{s}, {d}>" for k in ("convert", "to_complex") for s in ("float", "double")
                          for d in ("float", "double"))
_THREADS = 256


def _kernel(src: np.dtype, dst: np.dtype):
    """The kernel of a cast from ``src`` to ``dst`` and the items it converts per array item (2:
    complex parts), or None where CuPy's cast is NumPy's (no float32 <-> float64 conversion, or a
    complex value cast to a real one, which CuPy's ``astype`` warns of as NumPy does)."""
    if src not in _PART or dst not in _PART or src == dst or (src.kind == "c" and dst.kind != "c"):
        return None
    if src.kind == dst.kind:
        if _PART[src] == _PART[dst]:
            return None
        name, parts = "convert", 2 if src.kind == "c" else 1
    else:
        name, parts = "to_complex", 1  # (float32 -> complex64 too: a real part copied, the other 0)
    return device_module(_SOURCE, ("--std=c++17",), _NAME_EXPRESSIONS)(f"{name}<{_PART[src]}, {_PART[dst]}>"), parts


def astype(a, dtype):
    """``a`` (a CuPy array) as a C-contiguous array of ``dtype`` with NumPy's values (``a`` itself
    where it is one already), on ``a``'s device, queued on the current stream."""
    dtype = np.dtype(dtype)
    if a.dtype == dtype:
        return a if a.flags.c_contiguous else cp.ascontiguousarray(a)
    with a.device:
        found = _kernel(a.dtype, dtype)
        if found is None:
            return a.astype(dtype, order="C")
        kernel, parts = found
        src = a if a.flags.c_contiguous else cp.ascontiguousarray(a)  # (a copy of the bits: no conversion)
        out = cp.empty(a.shape, dtype)
        n = src.size * parts
        if n:
            grid = max(1, min(8 * device_info(a.device.id)["sms"], -(-n // _THREADS)))
            kernel((grid,), (_THREADS,), (src, out, np.int64(n)))
        return out
