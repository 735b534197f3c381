"""Reverse scans and state operators on the GPU (segmented, affine, compensated): one launch of
``scan_ext_kernel`` for one column, and the ordered reductions of ``kernels/agent/agent_reduce.cuh``
for its carry, through CuPy's launches; several columns take the column-tile kernels
(``state_columns``), but for the zero-absorbing float products (a launch a column of a transposed
copy: their zeros' repair reads the 1-D kernel's states).  The states on the host: ``ext_states``.

The kernels are the single-pass scan's (the same look-back, block scan and tile I/O): a reverse
scan reads its tiles mirrored, a state operator's accumulator is the C struct of its state
(``kernels/util/states.cuh``), whose bytes the host passes as the seed and reads as the total
(host states: :mod:`distscan.ops.state`, the same layout).  Operators with auxiliary inputs
(segment flags, coefficients) run on the look-back with its reduction lead (on the look-ahead,
whose ring stages them too, only when it is named: it is slower for them); the others (reverse
plain scans, compensated sums) on the look-ahead kernel from the sizes where the plain scan does.
Not the hot path's, never captured: a call inside a capture is refused (its totals and carries are
host arrays, copied back within the call; the seeds travel by value in the launch's arguments).
"""

from __future__ import annotations

import ctypes
import dataclasses
import threading

import numpy as np

from ..._dtypes import ScanTypes
from ...ops import Op
from . import compile as cc
from . import state_columns
from .ext_states import (aux_arrays, check_gpu, ext_module_key, kernel_state, neutral_rows, param_rows, restate,
                         struct_state)
from .absorbing import absorbed_results, absorbs, tail_of_part, tail_of_scan
from .device import cp, device_info, reduction_columns, refuse_in_capture, remember, require_cupy
from .launch import ArgBlock, first_row, identity_first, launch_shape
from .plans import (STATE_LEAD_SHARE, Plan, costly, ext_device, fast_dram, is_compensated, lookahead_grid, setup_lead,
                    status_words)
from .scratch import scratch_of
from .settings import SETTINGS

EXT_PLANS: dict = {}
NULL = np.uint64(0)


def ext_plan(dev_id: int, in_dtype, types: ScanTypes, op: Op, device: str, reverse: bool,
             coef_one: int = 0) -> Plan:
    """The plan of the extended module for these dtypes, operator, device algorithm and direction
    (``coef_one``: of one coefficient for every item, ``ModuleKey.coef_one``)."""
    key = (dev_id, np.dtype(in_dtype), types.acc, types.result, op.functor, op.source, device, reverse,
           SETTINGS.tuning, coef_one)
    plan = EXT_PLANS.get(key)
    if plan is not None:
        return plan
    kstate = kernel_state(op, types)
    mkey = ext_module_key(in_dtype, types, op, device, reverse, coef_one)
    tuning = mkey.tuning
    plan = Plan()
    plan.funcs = cc.get_functions(mkey, dev_id)
    plan.tuning, plan.kacc, plan.k_words = tuning, kstate, status_words(kstate.itemsize)
    plan.in_size, plan.out_size = np.dtype(in_dtype).itemsize, np.dtype(types.result).itemsize
    plan.tile, plan.window, plan.threads = tuning.tile_items, tuning.window, tuning.launch_threads(device)
    plan.device, plan.identity_k, plan.large_key, plan.large, plan.reduce_grid = device, None, None, None, None
    plan.la_smem = plan.la_grid = 0
    if device == "lookahead":
        smem = tuning.lookahead_smem(in_dtype, types.result, staged_aux(op, types, coef_one))
        plan.la_grid = lookahead_grid(plan, ("ext_incl", "ext_excl"), smem, dev_id)
        plan.la_smem = smem
    setup_lead(plan, dev_id, "auto", _lead_share(op, kstate))
    EXT_PLANS[key] = plan
    return plan


def staged_aux(op: Op, types: ScanTypes, coef_one: int = 0) -> tuple:
    """Bytes per item of what the look-ahead kernel's ring stages beside the items: by the kernel
    functor's AUX (kernels/util/states.cuh), the flags of a segmented scan (1), the flags and the
    coefficients (of the kernel's value dtype) of an affine one (its flags alone where the
    coefficient is one: ``coef_one``), nothing for the others."""
    kind = struct_state(op).split("_")[0]
    if kind == "segmented" or (kind == "affine" and coef_one):
        return (1,)
    if kind == "affine":
        return (1, cc.kernel_acc_dtype(types.acc).itemsize)
    return ()


def _lead_share(op: Op, kstate: np.dtype) -> float:
    """The share of the time-based reduction lead a plan takes: none for affine maps of 12 bytes or
    more (float64, complex64: H200 at 2^27, 2321 and 1978 GB/s without a lead against 2124 and 1704
    with half; H100 0.68 and 0.61 of copy against 0.71 and 0.57; segmented float32 maps, 32 items:
    H200 2081 against 1630, H100 1882 against 1597), nor for compensated sums of 16 bytes
    or more (float64: 765 us without against 808 us with it; float32 keeps it, 355 us against 401:
    benchmarks/sweep_costly_tiles.py, H200, 2^27), plans.STATE_LEAD_SHARE for the other scans with
    flags or coefficients, none for costly operators (plans.costly), all of it otherwise."""
    if costly(op):
        return 0.0
    wide = kstate.itemsize >= 16
    if op.state is None or not op.state.aux:
        return 0.0 if is_compensated(op) and wide else 1.0
    return 0.0 if op.state.kind.startswith("affine") and kstate.itemsize >= 12 else STATE_LEAD_SHARE


def _aux_views(aux, op: Op, n: int, w: int):
    """``(flags, cs, coef_one)`` of scan_ext_kernel's launches (``aux_arrays``): coefficients come
    with one column only (several take the columns kernels: ``state_columns``)."""
    flags, cs, mode = aux_arrays(aux, op, n, w)
    assert cs is None or w == 1, "several columns of coefficients take the columns kernels"
    return flags, cs, mode


# What every scan_ext_kernel launch of one kind shares (ExtCall), by (device, input dtype, scan
# types, operator, exclusive, reverse, device algorithm, SETTINGS.tuning, SETTINGS.lead, whether
# the coefficient is one for every item: ``coefficient_row``).
# Assumption: these fix everything an entry holds (the plan and kernel: ext_plan's key is a part
# of this one; the host and kernel dtypes, whether the first
# item is rewritten; the launch shapes by n, which lead_of reads SETTINGS.lead for); no array,
# stream or scratch is kept in it but the scratch whose pointers its argument block holds,
# compared by identity and generation on every launch.
EXT_CALLS: dict = {}


class ExtCall:
    """One kind of extended scan (see EXT_CALLS): its plan and kernel, and scan_ext_kernel's 17
    arguments as an :class:`ArgBlock` for cuLaunchKernel (CuPy's packing of them cost more host
    time than the rest of the call).  The block is rewritten and launched under the entry's
    lock (threads on several streams may share an entry), inside the stream scratch's lock.

    The seed and the projected initial are state structs passed by value: their bytes go into the
    block, and cuLaunchKernel copies the block when it queues the launch, so no later call can
    change what a queued launch reads, and nothing is copied to the device before it (a seed's
    copy through page-locked memory took 26-75 us of the waiting rank's host time on 2 GPUs).
    CuPy's own launch cannot pass a struct: the driver's call is required (CuPy 14, the floor in
    pyproject.toml, has ``cupy.cuda.driver.launchKernel``)."""

    __slots__ = ("plan", "fn", "kernel_ptr", "launch", "kstate", "host_dtype", "first_row",
                 "args", "lock", "shapes", "scratch", "generation", "absorbs", "seed", "param")

    def __init__(self, plan, op: Op, types: ScanTypes, exclusive: bool):
        self.plan = plan
        self.fn = plan.funcs["ext_excl" if exclusive else "ext_incl"]
        self.launch = cp.cuda.driver.launchKernel
        self.kernel_ptr = self.fn.kernel.ptr
        self.kstate = plan.kacc
        self.host_dtype = np.dtype(types.state if op.state is not None else types.acc)
        self.first_row = first_row(op, types) if exclusive else None  # launch.first_is_identity
        self.absorbs = absorbs(op, types)
        u64, i64, i32, k = ctypes.c_uint64, ctypes.c_int64, ctypes.c_int32, self.kstate.itemsize
        self.args = ArgBlock(u64, u64, i64, u64, u64, u64, u64, k, i32, u64, i32, i64, u64, u64, i32, k, i32)
        self.seed, self.param = self.args.values[7], self.args.values[15]  # raw fields of the state's bytes
        self.lock = threading.Lock()
        self.shapes: dict = {}  # n -> (grid, dynamic shared memory, lead, num_tiles)
        self.scratch, self.generation = None, -1  # the scratch whose pointers the block holds

    def seed_rows(self, seed, w: int) -> np.ndarray:
        """Host seeds (``w`` states of the host dtype, or values) as the kernels' states."""
        return restate(np.asarray(seed, self.host_dtype).reshape(w), self.kstate)

    def shape(self, n: int):
        shape = self.shapes.get(n)
        if shape is None:
            if len(self.shapes) >= 64:
                self.shapes.clear()
            shape = self.shapes[n] = launch_shape(self.plan, n) + (-(-n // self.plan.tile),)
        return shape

    def run(self, scratch, grid, smem, stream_ptr, x, out, n, seed, total, lead, flags, coef, param) -> None:
        """One launch (device pointers as ints, 0 for none; ``seed`` and ``param``: one kernel
        state's bytes, or None for none), under ``scratch.lock`` and the scratch prepared for it."""
        vec = int((x | out) & 15 == 0)
        cvec = int(coef != 0 and coef & 15 == 0)
        v = self.args.values
        with self.lock:
            if self.scratch is not scratch or self.generation != scratch.generation:
                v[3].value, v[4].value = scratch.words.data.ptr, scratch.subaggs.data.ptr
                v[5].value, v[6].value = scratch.anchors.data.ptr, scratch.launch_state.data.ptr
                self.scratch, self.generation = scratch, scratch.generation
            if seed is not None:
                self.seed.raw = seed
            if param is not None:
                self.param.raw = param
            v[0].value, v[1].value, v[2].value, v[8].value, v[9].value = x, out, n, seed is not None, total
            v[10].value, v[11].value, v[12].value, v[13].value, v[14].value, v[16].value = (
                vec, lead, flags, coef, cvec, param is not None)
            self.launch(self.kernel_ptr, grid, 1, 1, self.plan.threads, 1, 1, smem, stream_ptr, self.args.ptr, 0)


def ext_call(key, dev_id, in_dtype, types: ScanTypes, op: Op, exclusive: bool, reverse: bool, device: str,
             coef_one: int = 0):
    plan = ext_plan(dev_id, in_dtype, types, op, device, reverse, coef_one)
    return remember(EXT_CALLS, key, ExtCall(plan, op, types, exclusive), 4 * SETTINGS.max_stream_entries)


def scan(x, op: Op, types: ScanTypes, *, exclusive=False, seed=None, out=None, want_total=False, algorithm="auto",
         aux=(), reverse=False, initial=None):
    """The backend's ``scan`` for reverse scans and state operators (see the module docstring).

    Results: a new array (never one handed out before: the caller may hold it), or ``out``."""
    if cp is None:
        require_cupy()
    check_gpu(op)
    one_d = x.ndim == 1
    n, w = (x.shape[0], 1) if one_d else x.shape
    stream_ptr = cp.cuda.get_current_stream().ptr
    refuse_in_capture(stream_ptr, "a reverse scan, or a segmented, affine or compensated scan")
    result = out
    if out is not None and (out.dtype != types.result or out.size != n * w):  # the kernels would write past it
        raise TypeError(f"out must hold {n * w} items of {types.result}, not {out.size} of {out.dtype}")
    if types.result != types.acc and absorbs(op, types):
        # a segmented float product into a narrower result (float16): its zeros repaired where the
        # accumulator's values are (a float16 result overflows to inf where the float32 product is
        # still finite), then rounded once, as general._scan does for plain products
        wide, total = scan(x, op, dataclasses.replace(types, result=types.acc), exclusive=exclusive, seed=seed,
                           want_total=want_total, algorithm=algorithm, aux=aux, reverse=reverse, initial=initial)
        if result is None:
            return wide.astype(types.result), total
        result[...] = wide.reshape(result.shape)
        return result, total
    fresh = out is None or not out._c_contiguous  # else the kernels write into out itself
    if fresh:
        out = cp.empty((n,) if one_d else (n, w), types.result)
    if n == 0 or w == 0:
        total = None
        if want_total:
            host_dtype = types.state if op.state is not None else types.acc
            total = np.array(seed, host_dtype).reshape(w) if seed is not None else neutral_rows(op, types, w)
        return _finish(result, out, one_d, fresh), total
    if not x._c_contiguous:
        x = cp.ascontiguousarray(x)
    dev_id = x.data.device_id
    if w > 1 and not absorbs(op, types):
        total = state_columns.scan(x, out, op, types, dev_id, stream_ptr, exclusive, reverse, seed, initial, aux,
                                   want_total)
        return _finish(result, out, one_d, fresh), total
    flags, cs, coef_one = _aux_views(aux, op, n, w)  # (auto's choice depends on the coefficients' mode)
    device = ext_device(op, algorithm, n, x.itemsize, types.result.itemsize, types.result.kind, coef_one,
                        reverse=reverse, fast_dram=fast_dram(dev_id))
    key = (dev_id, x.dtype, types, op, exclusive, reverse, device, SETTINGS.tuning, SETTINGS.lead, coef_one)
    ent = EXT_CALLS.get(key)
    if ent is None:
        ent = ext_call(key, dev_id, x.dtype, types, op, exclusive, reverse, device, coef_one)
    kstate, plan = ent.kstate, ent.plan
    k = kstate.itemsize
    # seeds and projected initial values: a state per column, passed by value (ExtCall)
    seeds = None if seed is None else ent.seed_rows(seed, w)
    # a segmented float product's initial is projected after the repair of its zeros (below)
    params = None if ent.absorbs else param_rows(op, initial, kstate, w)
    if w == 1:
        xs, outs = (x if one_d else x.reshape(n)), (out if out.ndim == 1 else out.reshape(n))
    else:  # a segmented float product (absorbs): a column at a time, as the repair of its zeros reads them
        xs, outs = cp.ascontiguousarray(x.T), cp.empty((w, n), types.result)
    totals = cp.empty((w, k), np.uint8) if want_total else None  # the kernels skip a null total
    scratch = scratch_of(dev_id, stream_ptr)
    grid, smem, lead, num_tiles = ent.shape(n)
    x_ptr, out_ptr = xs.data.ptr, outs.data.ptr
    flags_ptr = 0 if flags is None else flags.data.ptr
    total_ptr = 0 if totals is None else totals.data.ptr
    coef_ptr = 0 if cs is None else cs.data.ptr
    step_x, step_out, step_coef = n * xs.itemsize, n * outs.itemsize, 0 if cs is None else n * cs.itemsize
    seed_bytes, param_bytes = (None if rows is None else rows.tobytes() for rows in (seeds, params))
    with scratch.lock:
        scratch.prepare(num_tiles, plan.window, plan.k_words)
        for c in range(w):  # column c of the transposed copies: n items further on, its states k bytes on
            ent.run(scratch, grid, smem, stream_ptr, x_ptr + c * step_x, out_ptr + c * step_out, n,
                    seed_bytes and seed_bytes[c * k:(c + 1) * k], total_ptr and total_ptr + c * k, lead, flags_ptr,
                    coef_ptr and coef_ptr + c * step_coef, param_bytes and param_bytes[c * k:(c + 1) * k])
    if w > 1:
        out[...] = outs.T
    if ent.absorbs:  # the zeros that met a tile's overflowed product, segment by segment (absorb.py)
        rows, order, host_seed = absorbed_results(x, flags, out.reshape(n, w), op, types, seed, exclusive, reverse,
                                                   initial, ent.host_dtype)
    if ent.first_row is not None and seed is None and params is None:
        identity_first(out, ent.first_row, n, w, reverse, stream_ptr)
    total = None
    if want_total:
        total = restate(totals.get().view(kstate).reshape(w), np.dtype(ent.host_dtype))
        if ent.absorbs:  # the state's zero-absorption fields, which the kernels' struct has not
            total = tail_of_scan(op, rows, order, total, host_seed)
    return _finish(result, out, one_d, fresh), total


def _finish(result, out, one_d: bool, fresh: bool):
    """What the scan returns: ``out``, or the caller's array (``result``), which a ``fresh`` out
    (the caller's was not contiguous) is copied into."""
    if result is not None:
        if fresh and result.size:
            result[...] = out.reshape(result.shape)
        out = result
    return out.reshape(-1) if one_d and out.ndim == 2 else out


def reduce(x, op: Op, types: ScanTypes, aux=(), reverse: bool = False) -> np.ndarray:
    """The carry of a part in scan order: the ordered reduction of its states, ``(w,)`` host states."""
    require_cupy()
    check_gpu(op)
    x, n, w = reduction_columns(x)
    if n == 0 or w == 0:
        return neutral_rows(op, types, w)
    x = cp.ascontiguousarray(x)
    dev_id = x.device.id
    host_dtype = types.state if op.state is not None else types.acc
    if w > 1 and not absorbs(op, types):  # the columns kernels' reduction and carry, all columns at once
        return state_columns.reduce(x, op, types, dev_id, aux, reverse)
    flags, cs, coef_one = _aux_views(aux, op, n, w)
    plan = ext_plan(dev_id, x.dtype, types, op, "lookback", reverse, coef_one)
    kstate = plan.kacc
    xs = x.reshape(n) if w == 1 else cp.ascontiguousarray(x.T)
    num_tiles = -(-n // plan.tile)
    # enough blocks to keep every SM's loads in flight; each folds a contiguous run of tiles
    grid = int(min(num_tiles, 4 * device_info(dev_id)["sms"]))
    per_block = -(-num_tiles // grid)
    grid = -(-num_tiles // per_block)
    partials = cp.empty((grid, kstate.itemsize), np.uint8)
    totals = cp.empty((w, kstate.itemsize), np.uint8)
    for c in range(w):
        xc = xs if w == 1 else xs[c]
        cc_ = None if cs is None else (cs if w == 1 else cs[c])
        plan.funcs["reduce_tiles"](
            (grid,), (plan.tuning.block_threads,),
            (xc, np.int64(n), np.int64(per_block), partials, np.int32(int(xc.data.ptr % 16 == 0)),
             NULL if flags is None else flags, NULL if cc_ is None else cc_,
             np.int32(int(cc_ is not None and cc_.data.ptr % 16 == 0))))
        plan.funcs["reduce_final_ordered"]((1,), (256,), (partials, np.int32(grid), totals[c]))
    total = restate(totals.get().view(kstate).reshape(w), np.dtype(host_dtype))
    if absorbs(op, types):  # the state's zero-absorption fields, which the kernels' struct has not
        total = tail_of_part(x, flags, op, types, reverse, total)
    return total
