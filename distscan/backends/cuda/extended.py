"""Reverse scans and state operators on the GPU (segmented, affine, compensated): one launch of
``scan_ext_kernel`` per column, and the ordered reductions of ``kernels/agent/agent_reduce.cuh``
for their carries, through CuPy's launches.

The kernels are the single-pass scan's (the same look-back, block scan and tile I/O): a reverse
scan reads its tiles mirrored, a state operator's accumulator is the C struct of its state
(``kernels/util/states.cuh``), whose bytes the host passes as the seed and reads as the total
(host states: :mod:`distscan.ops.state`, the same layout).  Operators with auxiliary inputs
(segment flags, coefficients) run on the look-back with its reduction lead; the others
(reverse plain scans, compensated sums) on the look-ahead kernel from the sizes where the plain
scan does.  None of this path is taken by the hot path or captured into graphs: a call inside a
capture is refused (its seed and parameter are copied from the host).
"""

from __future__ import annotations

import numpy as np

from ..._dtypes import ScanTypes
from ...ops import Op
from . import compile as cc
from .device import cp, device_info, refuse_in_capture, require_cupy
from .launch import launch_shape
from .plans import Plan, persistent_grid, setup_lead, status_words, uses_lookahead
from .scratch import scratch_of
from .settings import SETTINGS

EXT_PLANS: dict = {}
NULL = np.uint64(0)


def struct_state(op: Op) -> str:
    """The state kind whose C struct is the kernels' accumulator ("" for values: plain operators
    and declared operators of values)."""
    if op.state is None or op.state.kind == "declared":
        return ""
    return op.state.kind


def kernel_state(op: Op, types: ScanTypes) -> np.dtype:
    """The kernels' accumulator: the state over the kernel's value dtype (float16 values are
    combined in float32), or that value dtype for a plain operator."""
    value = cc.kernel_acc_dtype(types.acc)
    return op.state.dtype(value) if struct_state(op) else value


def _check_gpu(op: Op) -> None:
    if op.state is not None and op.state.kind == "declared" and not getattr(op, "gpu_ready", False):
        raise TypeError(f"declared operator {op.name!r} has no GPU form: give it cuda= (a C++ expression of a "
                        "and b); declared operators of structured states run on the CPU (backend='cpu')")


def _restate(rows, dtype: np.dtype) -> np.ndarray:
    """State rows in another dtype of the same fields (values widened or narrowed), or values."""
    rows = np.asarray(rows)
    if rows.dtype == dtype:
        return np.ascontiguousarray(rows)
    if dtype.names is None:
        return rows.astype(dtype)
    out = np.zeros(rows.shape, dtype)
    for name in dtype.names:
        out[name] = rows[name]
    return out


def ext_module_key(in_dtype, types: ScanTypes, op: Op, device: str, reverse: bool) -> cc.ModuleKey:
    """The compile key of the extended module (no GPU needed: tests compile its names with nvcc)."""
    tuning = cc.choose_tuning(in_dtype, kernel_state(op, types), types.result, SETTINGS.tuning, "coarsened", device)
    return cc.ModuleKey(np.dtype(in_dtype), cc.kernel_acc_dtype(types.acc), np.dtype(types.result), op.functor,
                        tuning, "coarsened", device, ext=True, state=struct_state(op), reverse=reverse,
                        source=op.source)


def ext_plan(dev_id: int, in_dtype, types: ScanTypes, op: Op, device: str, reverse: bool) -> Plan:
    """The plan of the extended module for these dtypes, operator, device algorithm and direction."""
    key = (dev_id, np.dtype(in_dtype), types.acc, types.result, op.functor, op.source, device, reverse,
           SETTINGS.tuning)
    plan = EXT_PLANS.get(key)
    if plan is not None:
        return plan
    kstate = kernel_state(op, types)
    mkey = ext_module_key(in_dtype, types, op, device, reverse)
    tuning = mkey.tuning
    plan = Plan()
    plan.funcs = cc.get_functions(mkey, dev_id)
    plan.tuning, plan.kacc, plan.k_words = tuning, kstate, status_words(kstate.itemsize)
    plan.in_size, plan.out_size = np.dtype(in_dtype).itemsize, np.dtype(types.result).itemsize
    plan.tile, plan.window, plan.threads = tuning.tile_items, tuning.window, tuning.launch_threads(device)
    plan.device, plan.identity_k, plan.large_key, plan.large, plan.reduce_grid = device, None, None, None, None
    plan.la_smem = plan.la_grid = 0
    if device == "lookahead":
        smem = tuning.lookahead_smem(in_dtype, types.result)
        for role in ("ext_incl", "ext_excl"):
            plan.funcs[role].max_dynamic_shared_size_bytes = smem
        plan.la_smem = smem
        plan.la_grid = persistent_grid(plan.funcs["ext_incl"], plan.threads, smem, device_info(dev_id)["sms"],
                                       tuning.min_blocks)
        if plan.la_grid == 0:
            raise RuntimeError(f"the look-ahead kernel needs {smem} bytes of shared memory per block, more than "
                               f"GPU {dev_id} gives")
    setup_lead(plan, dev_id, "auto")
    EXT_PLANS[key] = plan
    return plan


def _device(op: Op, algorithm: str, n: int, in_size: int, out_size: int) -> str:
    """The device algorithm: the look-back for operators with auxiliary inputs (the look-ahead's
    ring stages items only), else as the plain scan chooses."""
    if algorithm not in ("auto", "lookback", "lookahead"):
        raise ValueError(f"algorithm={algorithm!r} is for plain forward scans; reverse scans and segmented, "
                         "affine and compensated scans take 'auto', 'lookback' or 'lookahead'")
    aux = op.state is not None and len(op.state.aux) > 0
    if algorithm == "lookahead" and not aux:
        return "lookahead"
    if algorithm == "auto" and not aux and uses_lookahead(n, in_size, out_size):
        return "lookahead"
    return "lookback"


def _columns(arrays, w):
    """Per-column contiguous 1-D views of ``(n, w)`` arrays (a transposed copy when w > 1)."""
    if w == 1:
        return [a.reshape(-1) for a in arrays]
    return [cp.ascontiguousarray(a.T) for a in arrays]


def _aux_columns(op: Op, aux, x, n: int, w: int):
    """``(xs, flags, cs)``: ``x`` as per-column 1-D views (:func:`_columns`), the segment flags as
    one contiguous 1-D array (or None) and the coefficients as per-column views (or None), picked
    out of ``aux`` by the operator's auxiliary input names."""
    names = op.state.aux if op.state is not None else ()
    flags = next((a for name, a in zip(names, aux) if name == "segments"), None)
    coef = next((a for name, a in zip(names, aux) if name == "a"), None)
    if flags is not None:
        flags = cp.ascontiguousarray(flags.reshape(-1))
    xs = _columns([x], w)[0]
    cs = _columns([cp.asarray(coef).reshape(n, -1)], w)[0] if coef is not None else None
    return xs, flags, cs


def _param_rows(op: Op, initial, kstate: np.dtype, w: int):
    """The projected ``initial`` as kernel states (the field a projection reads), or None."""
    if initial is None or op.state is None or op.state.initial_mode != "project":
        return None
    rows = np.zeros(w, kstate)
    field = "value" if "value" in kstate.names else "b"
    rows[field] = np.broadcast_to(np.asarray(initial), (w,))
    return rows


def _device_bytes(row: np.ndarray):
    return cp.asarray(np.ascontiguousarray(row).reshape(-1).view(np.uint8))


def scan(x, op: Op, types: ScanTypes, *, exclusive=False, seed=None, out=None, want_total=False, algorithm="auto",
         aux=(), reverse=False, initial=None):
    """The backend's ``scan`` for reverse scans and state operators (see the module docstring)."""
    require_cupy()
    _check_gpu(op)
    one_d = x.ndim == 1
    if one_d:
        x = x.reshape(-1, 1)
    n, w = x.shape
    result = out
    out = cp.empty((n, w), types.result) if out is None or not out.flags.c_contiguous else out.reshape(n, w)
    host_dtype = types.state if op.state is not None else types.acc
    stream_ptr = cp.cuda.get_current_stream().ptr
    refuse_in_capture(stream_ptr, "a reverse scan, or a segmented, affine or compensated scan")
    if n == 0 or w == 0:
        total = None
        if want_total:
            total = np.array(seed, host_dtype).reshape(w) if seed is not None else _neutral_rows(op, types, w)
        return _finish(result, out, one_d), total
    x = cp.ascontiguousarray(x)
    dev_id = x.device.id
    plan = ext_plan(dev_id, x.dtype, types, op, _device(op, algorithm, n, x.dtype.itemsize, types.result.itemsize),
                    reverse)
    kstate = plan.kacc
    seeds = None if seed is None else _restate(np.asarray(seed, host_dtype).reshape(w), kstate)
    params = _param_rows(op, initial, kstate, w)
    xs, flags, cs = _aux_columns(op, aux, x, n, w)
    outs = out.reshape(-1) if w == 1 else cp.empty((w, n), types.result)
    totals = cp.empty((w, kstate.itemsize), np.uint8) if want_total else None  # the kernels skip a null total
    scratch = scratch_of(dev_id, stream_ptr)
    fn = plan.funcs["ext_excl" if exclusive else "ext_incl"]
    grid, smem, lead = launch_shape(plan, n)
    num_tiles = -(-n // plan.tile)
    for c in range(w):
        xc, oc = (xs, outs) if w == 1 else (xs[c], outs[c])
        cc_ = None if cs is None else (cs if w == 1 else cs[c])
        d_seed = NULL if seeds is None else _device_bytes(seeds[c])
        d_param = NULL if params is None else _device_bytes(params[c])
        with scratch.lock:
            scratch.prepare(num_tiles, plan.window, plan.k_words)
            fn((grid,), (plan.threads,),
               (xc, oc, np.int64(n), scratch.words, scratch.subaggs, scratch.anchors, scratch.launch_state, d_seed,
                NULL if totals is None else totals[c], np.int32(int(xc.data.ptr % 16 == 0 and oc.data.ptr % 16 == 0)),
                np.int64(lead),
                NULL if flags is None else flags, NULL if cc_ is None else cc_,
                np.int32(int(cc_ is not None and cc_.data.ptr % 16 == 0)), d_param),
               shared_mem=smem)
    if w > 1:
        out[...] = outs.T
    if exclusive and seed is None and params is None and _first_is_identity(op, types):
        out[-1 if reverse else 0] = 0  # the identity, +0.0 (the kernels start from -0.0: launch.first_is_identity)
    total = None
    if want_total:
        total = _restate(totals.get().view(kstate).reshape(w), np.dtype(host_dtype))
    return _finish(result, out, one_d), total


def _first_is_identity(op: Op, types: ScanTypes) -> bool:
    if types.result.kind not in "fc":
        return False
    neutral = np.asarray(op.neutral(types.acc), types.result)
    return neutral.tobytes() != np.asarray(op.identity(types.acc), types.result).tobytes()


def _neutral_rows(op: Op, types: ScanTypes, w: int) -> np.ndarray:
    if op.state is not None:
        return np.full(w, op.state.neutral(types.acc), types.state)
    return np.full(w, op.neutral(types.acc), types.acc)


def _finish(result, out, one_d: bool):
    if result is not None and result is not out and result.size:
        result[...] = out.reshape(result.shape)
        out = result
    return out.reshape(-1) if one_d and out.ndim == 2 else out


def reduce(x, op: Op, types: ScanTypes, aux=(), reverse: bool = False) -> np.ndarray:
    """The carry of a part in scan order: the ordered reduction of its states, ``(w,)`` host states."""
    require_cupy()
    _check_gpu(op)
    if x.ndim == 1:
        x = x.reshape(-1, 1)
    n, w = x.shape
    if n == 0 or w == 0:
        return _neutral_rows(op, types, w)
    refuse_in_capture(cp.cuda.get_current_stream().ptr, "a reduction (and so a scan across ranks)")
    x = cp.ascontiguousarray(x)
    dev_id = x.device.id
    plan = ext_plan(dev_id, x.dtype, types, op, "lookback", reverse)
    kstate = plan.kacc
    xs, flags, cs = _aux_columns(op, aux, x, n, w)
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
    host_dtype = types.state if op.state is not None else types.acc
    return _restate(totals.get().view(kstate).reshape(w), np.dtype(host_dtype))
