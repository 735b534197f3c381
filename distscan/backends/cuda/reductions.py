"""Reductions of columns (the carry of a part: two launches and a word copied to the host) and
the offset added into a scanned array (``scan_then_add``'s finish)."""

from __future__ import annotations

import ctypes
import threading

import numpy as np

from ..._dtypes import ScanTypes
from ...ops import Op
from . import extended
from .device import cp, device_info, reduction_columns, remember, require_cupy, stream_key
from .hotpath import NOT_FAST
from .launch import ArgBlock, identity_row
from .plans import Plan, add_plan, persistent_grid, plan_of
from .settings import SETTINGS


def _reduce_grid(n: int, in_size: int, max_grid: int) -> int:
    """Blocks of reduce_partials_kernel for n items (the partials' count, so the association):
    one four-vector round per thread at least, at most ``max_grid``."""
    return int(max(1, min(max_grid, -(-n // (256 * max(1, 16 // in_size) * 4)))))


def _reduce_max_grid(plan: Plan, dev_id: int) -> int:
    """The most blocks of the plan's reduce_partials_kernel: every SM full (as many loads in
    flight as the GPU holds).  The cap of 4 blocks of 256 per SM read 3.7 (float32) and 3.9
    (int64) TB/s on the H200 at 2^29, under the 4.2 of a copy (benchmarks/RESULTS.md)."""
    if plan.reduce_grid is None:
        sms = device_info(dev_id)["sms"]
        plan.reduce_grid = persistent_grid(plan.funcs["reduce_partials"], 256, 0, sms, 4) or 4 * sms
    return plan.reduce_grid


def _launch_reduce(plan, col, n: int, partials, result, grid: int) -> None:
    """The reduction of a contiguous column of n >= 1 items into ``result[0]`` (device
    arrays; ``partials`` holds ``grid`` items): two launches through CuPy's ``RawKernel``."""
    vector_ok = int(col.data.ptr % 16 == 0)
    plan.funcs["reduce_partials"]((grid,), (256,), (col, np.int64(n), partials, np.int32(vector_ok)))
    plan.funcs["reduce_final"]((1,), (256,), (partials, np.int32(grid), result))


class _ReduceEntry:
    """What one-column reductions on one (device, stream, plan) reuse: the partials, the result
    word, a page-locked host word, and the two kernels' argument blocks.  A call holds the
    entry's lock from its launch to the copy of its result (host threads sharing a stream)."""

    def __init__(self, plan, dev_id: int, launch):
        self.plan, self.launch = plan, launch
        self.lock = threading.Lock()
        self.max_grid = _reduce_max_grid(plan, dev_id)
        self.partials = cp.empty(self.max_grid, plan.kacc)
        self.result = cp.empty(1, plan.kacc)
        self.host = np.frombuffer(cp.cuda.alloc_pinned_memory(plan.kacc.itemsize), plan.kacc, 1)
        self.partials_ptr = plan.funcs["reduce_partials"].kernel.ptr
        self.final_ptr = plan.funcs["reduce_final"].kernel.ptr
        c = ctypes
        self.partials_args = ArgBlock(c.c_uint64, c.c_int64, c.c_uint64, c.c_int32)
        self.final_args = ArgBlock(c.c_uint64, c.c_int32, c.c_uint64)

    def run(self, col, n: int, stream_ptr: int) -> np.ndarray:
        grid = _reduce_grid(n, self.plan.in_size, self.max_grid)
        ptr, part, res = col.data.ptr, self.partials.data.ptr, self.result.data.ptr
        rt = cp.cuda.runtime
        with self.lock:
            self.launch(self.partials_ptr, grid, 1, 1, 256, 1, 1, 0, stream_ptr,
                        self.partials_args.set(ptr, n, part, int(ptr % 16 == 0)), 0)
            self.launch(self.final_ptr, 1, 1, 1, 256, 1, 1, 0, stream_ptr, self.final_args.set(part, grid, res), 0)
            rt.memcpyAsync(self.host.ctypes.data, res, self.host.nbytes, rt.memcpyDeviceToHost, stream_ptr)
            rt.streamSynchronize(stream_ptr)
            return self.host.copy()


REDUCTIONS: dict = {}


def _reduce_1d(col, op: Op, types: ScanTypes):
    """The reduction of a contiguous one-column CuPy array of n >= 1 items, as ``(1,)`` in the
    kernel's accumulator: two launches and one copy of a word into page-locked memory.  None
    for a CuPy without ``driver.launchKernel`` (the general path then launches through CuPy)."""
    dev_id = col.data.device_id
    stream_ptr = cp.cuda.get_current_stream().ptr
    key = (dev_id, stream_key(stream_ptr), col.dtype, types.acc, types.result, op.functor, SETTINGS.tuning)
    ent = REDUCTIONS.get(key)
    if ent is None:
        launch = getattr(cp.cuda.driver, "launchKernel", None)
        ent = NOT_FAST if launch is None else _ReduceEntry(plan_of(dev_id, col.dtype, types, op), dev_id, launch)
        remember(REDUCTIONS, key, ent, 4 * SETTINGS.max_stream_entries)
    if ent is NOT_FAST:
        return None
    return ent.run(col, col.size, stream_ptr)


def reduce(x, op: Op, types: ScanTypes, aux=(), reverse: bool = False) -> np.ndarray:
    """The part's carry (``reverse``: in scan order; plain operators commute, states do not)."""
    if op.state is not None:
        return extended.reduce(x, op, types, aux, reverse)
    cp = require_cupy()
    x, n, w = reduction_columns(x)
    if n == 0 or w == 0:
        return identity_row(op, types, w)
    if n == 1:  # one row is its own total, as NumPy's accumulate copies it (gcd(0, -6) is 6: cpu.reduce)
        return op.lift(cp.asnumpy(x).reshape(-1), types.acc).reshape(w).copy()
    if w == 1 and x._c_contiguous:
        total = _reduce_1d(x.reshape(-1), op, types)
        if total is not None:
            return total.astype(types.acc)
    if not x.flags.c_contiguous:
        x = cp.ascontiguousarray(x)
    dev_id = x.device.id
    plan = plan_of(dev_id, x.dtype, types, op)
    cols = cp.ascontiguousarray(x.T)
    d_res = cp.empty(w, dtype=plan.kacc)
    grid = _reduce_grid(n, plan.in_size, _reduce_max_grid(plan, dev_id))
    partials = cp.empty(grid, dtype=plan.kacc)  # the launches are ordered on the stream: one buffer serves all
    for c in range(w):
        _launch_reduce(plan, cols[c], n, partials, d_res[c:], grid)
    return d_res.get().astype(types.acc)


def combine(y, op: Op, types: ScanTypes, offset) -> None:
    cp = require_cupy()
    if y.ndim == 1:
        y = y.reshape(-1, 1)
    n, w = y.shape
    if n == 0 or w == 0:
        return
    if not y.flags.c_contiguous:
        raise ValueError("combine needs a C-contiguous array (it works in place)")
    dev_id = y.device.id
    plan = add_plan(dev_id, types, op)
    offset = np.asarray(offset, dtype=types.acc).reshape(w)
    sms = device_info(dev_id)["sms"]
    if w == 1:
        vec = max(1, 16 // plan.out_size)
        grid = int(max(1, min(8 * sms, -(-n // (256 * vec)))))
        plan.funcs["add_offset"](
            (grid,), (256,), (y, np.int64(n), plan.kacc.type(offset[0]), np.int32(int(y.data.ptr % 16 == 0)))
        )
    else:
        d_off = cp.asarray(offset.astype(plan.kacc))
        grid = int(max(1, min(8 * sms, -(-(n * w) // 256))))
        plan.funcs["add_offset_columns"]((grid,), (256,), (y, np.int64(n * w), np.int64(w), d_off))
