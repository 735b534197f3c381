"""Launches of the scan kernels through CuPy (the general path): one column, the hierarchical
three-step scan, the launch shape of n items, and the ctypes argument blocks the hot path
passes to cuLaunchKernel."""

from __future__ import annotations

import ctypes
from typing import Optional

import numpy as np

from ..._dtypes import ScanTypes
from ...ops import Op
from .device import cp, is_capturing, memset_async
from .plans import lead_of
from .scratch import captured_scratch, scratch_of


def identity_row(op: Op, types: ScanTypes, w: int) -> np.ndarray:
    return np.full(w, op.identity(types.acc), dtype=types.acc)


def first_is_identity(op: Op, types: ScanTypes) -> bool:
    """Whether an unseeded exclusive scan's first result must be rewritten after the kernel.

    The kernels start every prefix from the operator's neutral element (``kernels/util/operators.cuh``:
    -0.0 for float sums, so that a prefix of negative zeros keeps its sign; NaN for fmax and fmin,
    which skip it), and so write it as the first result of an unseeded exclusive scan.  What an
    empty prefix gives is the identity (+0.0, as NumPy's ``np.add.identity`` and the CPU backend;
    -inf and +inf for nanmax and nanmin): the host then writes that one row (:func:`first_row`)."""
    if types.result.kind not in "fc":
        return False
    neutral = np.asarray(op.neutral(types.acc), types.result)
    return neutral.tobytes() != np.asarray(op.identity(types.acc), types.result).tobytes()


def first_row(op: Op, types: ScanTypes) -> Optional[np.ndarray]:
    """The item :func:`write_first_row` writes where :func:`first_is_identity` (an array of one),
    else None."""
    return np.full(1, op.identity(types.acc), types.result) if first_is_identity(op, types) else None


def write_first_row(ptr: int, first: np.ndarray, w: int, stream_ptr: int) -> None:
    """``w`` items of ``first`` (:func:`first_row` of one item) to device address ``ptr`` on the
    stream: zeros (the sums' +0.0) as a memset; another value (nanmax's -inf: written as zeros,
    0.0, until 2026-11-25) by CuPy's fill kernel on that stream.  Both are recorded into a CUDA
    graph the caller captures (tests/gpu/test_promises.py; a copy from pageable host memory is not)."""
    nbytes = first.nbytes * w
    if not first.view(np.uint8).any():
        memset_async(ptr, 0, nbytes, stream_ptr)
        return
    view = cp.ndarray((w,), first.dtype, cp.cuda.MemoryPointer(cp.cuda.UnownedMemory(ptr, nbytes, None), 0))
    with _cupy_stream(stream_ptr):
        view.fill(first[0])


def identity_first(out, first: np.ndarray, n: int, w: int, reverse: bool, stream_ptr: int) -> None:
    """:func:`write_first_row` into the first row in scan order of C-contiguous ``(n, w)`` results
    (the last row of a reverse scan)."""
    write_first_row(out.data.ptr + (n - 1 if reverse else 0) * w * first.itemsize, first, w, stream_ptr)


class _StreamHandle:
    """A raw ``cudaStream_t`` in the CUDA stream protocol, which CuPy 14's
    ``Stream.from_external`` takes (it deprecates ``ExternalStream(ptr)``)."""

    def __init__(self, ptr: int):
        self.ptr = ptr

    def __cuda_stream__(self):
        return (0, self.ptr)


def _cupy_stream(stream_ptr: int):
    """CuPy's stream object for the raw stream ``stream_ptr`` (not owned: the caller's)."""
    from_external = getattr(cp.cuda.Stream, "from_external", None)
    if from_external is None:  # CuPy 13
        return cp.cuda.ExternalStream(stream_ptr)
    return from_external(_StreamHandle(stream_ptr))


# A launch claims num_tiles (+ its persistent grid) tile ids, counted in the low 32 bits of the
# launch word (kernels/tile/tile_state.cuh, LAUNCH STATE), and launches at most 2^31 - 1 blocks:
# 2^40 items or more at the smallest tiles, more than any GPU holds today.
MAX_CLAIMS = (1 << 31) - 1


def launch_shape(plan, n: int):
    """``(grid, dynamic shared memory, lead)`` of one scan of n items: the look-ahead kernel
    runs a persistent grid; the others one block per tile claim, num_tiles + lead of them
    (lead: the look-back's reduction lead, 0 for the other strategies)."""
    num_tiles = -(-n // plan.tile)
    if plan.la_grid:
        shape, claims = (min(num_tiles, plan.la_grid), plan.la_smem, 0), num_tiles + plan.la_grid
    else:
        lead = lead_of(plan, num_tiles)
        shape = num_tiles + lead, 0, lead
        claims = num_tiles + lead
    if claims > MAX_CLAIMS:
        raise ValueError(f"a scan of {n} items needs more tiles than one kernel launch can count")
    return shape


def launch_tiles(plan, x, out, n, exclusive, seed_k, has_seed, d_total_ptr, dev_id, stream_ptr):
    """One launch of scan_tiles_kernel over contiguous 1-D x -> out (n >= 1)."""
    num_tiles = -(-n // plan.tile)
    # A launch recorded into a caller's graph gets status words of its own (CAPTURED).
    scratch = (captured_scratch(num_tiles, plan.window, plan.k_words) if is_capturing(stream_ptr)
               else scratch_of(dev_id, stream_ptr))
    vector_ok = int(x.data.ptr % 16 == 0 and out.data.ptr % 16 == 0)
    grid, smem, lead = launch_shape(plan, n)
    fn = plan.funcs["scan_excl" if exclusive else "scan_incl"]
    with scratch.lock:
        scratch.prepare(num_tiles, plan.window, plan.k_words)
        fn((grid,), (plan.threads,),
           (x, out, np.int64(n), scratch.words, scratch.subaggs, scratch.anchors, scratch.launch_state, seed_k,
            np.int32(has_seed), d_total_ptr, np.int32(vector_ok), np.int64(lead)),
           shared_mem=smem)


class ArgBlock:
    """ctypes images of a kernel's arguments and the ``void*[]`` that cuLaunchKernel takes.
    A type is a ctypes scalar, or an int for a raw field of that many bytes (``.raw``)."""

    def __init__(self, *ctypes_types):
        self.values = [t() if not isinstance(t, int) else (ctypes.c_char * t)() for t in ctypes_types]
        self.params = (ctypes.c_void_p * len(self.values))(*[ctypes.addressof(v) for v in self.values])
        self.ptr = ctypes.addressof(self.params)

    def set(self, *values) -> int:
        for slot, v in zip(self.values, values):
            slot.value = v
        return self.ptr
