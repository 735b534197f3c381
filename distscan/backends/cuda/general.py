"""The general path of a scan: any rows (one column, a few, many), seeds, totals, products'
zeros, through CuPy's kernel launches; and the cheap case it hands to the hot path."""

from __future__ import annotations

import numpy as np

from ..._carry import lifted, zero_absorbs
from ..._dtypes import ScanTypes
from ...ops import Op
from ..absorb import absorb_zeros
from .device import cp, current_device, device_info, refuse_in_capture, require_cupy
from . import columns, extended, zero_search
from .hotpath import scan_fast
from .launch import first_is_identity, identity_row, launch_tiles
from .plans import large_plan, plan_of, uses_lookahead


def scan_1d(plan, x, out, n, exclusive, seed_k, has_seed, d_total_ptr, dev_id, stream_ptr, op=None):
    """Contiguous 1-D x -> out (n >= 1): one launch of scan_tiles_kernel, or for
    "hierarchical" three steps (tiles alone, the scan of their totals, the totals added back)."""
    if plan.device == "hierarchical":
        _scan_hierarchical(plan, x, out, n, exclusive, seed_k, has_seed, d_total_ptr, dev_id, stream_ptr, op)
        return
    if uses_lookahead(n, plan.in_size, plan.out_size):
        plan = large_plan(plan)
    launch_tiles(plan, x, out, n, exclusive, seed_k, has_seed, d_total_ptr, dev_id, stream_ptr)


def _scan_hierarchical(plan, x, out, n, exclusive, seed_k, has_seed, d_total, dev_id, stream_ptr, op):
    """Multi-kernel scan: each tile scans alone and leaves its total; the tile totals are
    scanned (exclusive, from the seed) by the same method, recursively, until they fit in
    one tile; each tile's prefix is added back to its items."""
    num_tiles = -(-n // plan.tile)
    d_tiles = cp.empty(num_tiles, plan.kacc)
    launch_tiles(plan, x, out, n, exclusive, plan.identity_k, False, d_tiles, dev_id, stream_ptr)
    acc = ScanTypes(plan.kacc, plan.kacc, plan.kacc)
    if num_tiles == 1:  # the end of the recursion: one tile's prefix is the seed
        prefix = cp.full(1, seed_k if has_seed else plan.identity_k, plan.kacc)
    else:
        # from the neutral element when unseeded: the tile prefixes are folded into the tiles'
        # own items, whose signs a +0.0 first prefix would change
        seed = np.array([seed_k if has_seed else plan.identity_k], plan.kacc)
        prefix, _ = _scan(d_tiles, op, acc, exclusive=True, seed=seed, algorithm="hierarchical")
    if num_tiles > 1 or has_seed:
        grid = int(max(1, min(8 * device_info(dev_id)["sms"], -(-n // 256))))
        plan.funcs["add_tile_prefix"]((grid,), (256,), (out, np.int64(n), np.int64(plan.tile), prefix))
    if isinstance(d_total, cp.ndarray):
        d_total[:1] = _combine_device(op, acc, prefix[-1:], d_tiles[-1:])


def _combine_device(op, types, a, b):
    """``a op b`` of two one-element device arrays, through the operator's NumPy ufunc on the host."""
    return cp.asarray(np.asarray(op.ufunc(a.get(), b.get())).astype(types.acc))


def lean_arrays(x, out, types: ScanTypes) -> bool:
    """Whether ``x`` is a contiguous 1-D CuPy array on the current device and ``out`` None or a
    contiguous CuPy array of its shape, device and ``types.result`` that does not overlap it: the
    calls :func:`fast_scan` and the distributed lean path (``ScanPlan.call_1d``) take.  The
    overlap test compares bounds (cheaper than ``cupy.may_share_memory``, and as safe)."""
    if type(x) is not cp.ndarray or x.ndim != 1 or not x._c_contiguous:
        return False
    dev_id = x.data.device_id
    if dev_id != current_device():
        return False  # the API makes its device current, then takes the general path
    if out is None:
        return True
    if (type(out) is not cp.ndarray or out.shape != x.shape or out.dtype != types.result or not out._c_contiguous
            or out.data.device_id != dev_id):
        return False
    xp, op_ = x.data.ptr, out.data.ptr
    return not (xp < op_ + out.nbytes and op_ < xp + x.nbytes)


def scan_lean(x, op: Op, types: ScanTypes, exclusive: bool, out, seed=None):
    """``scan(x, ..., seed=seed, out=out)[0]`` for arrays :func:`lean_arrays` accepted, without
    checking them again."""
    if x.size:
        r = scan_fast(x, op, types, exclusive, out, "auto", seed)
        if r is not None:
            return _raw_first(x, r, op, seed is not None, exclusive=exclusive)
    result = scan(x, op, types, exclusive=exclusive, seed=seed, out=out)[0]
    return result if out is None else out


def lean_scanner(op: Op, types: ScanTypes, exclusive: bool):
    """:func:`scan_lean` without a seed as a function of ``(x, out)``, made once per plan
    (``ScanPlan.one_rank``): the hot path straight from the call, and the first item written
    back only for the operators that need it (gcd, lcm); ``out`` (when given) is what it
    returns.  It holds no array and nothing read from one: the hot path checks its cache and
    the stream on every call."""
    raw_first = op.core.raw_first

    def run(x, out):
        if x.size:
            r = scan_fast(x, op, types, exclusive, out, "auto")
            if r is not None:
                return _raw_first(x, r, op, False, exclusive=exclusive) if raw_first else r
        return scan_lean(x, op, types, exclusive, out)
    return run


def _raw_first(x, result, op: Op, seeded: bool, reverse: bool = False, exclusive: bool = False):
    """NumPy's accumulate copies its first item; the kernels combine it with the identity, which
    for gcd and lcm drops its sign (``gcd(0, -4) == 4``): write it back where nothing came before
    (an exclusive scan holds it one place on: ``out[1] = x[0]``, or ``out[-2] = x[-1]`` in reverse)."""
    n = x.shape[0]
    if op.core.raw_first and not seeded and n > int(exclusive):
        first = -1 if reverse else 0
        result[first - 1 if reverse and exclusive else first + int(exclusive)] = x[first]
    return result


def scan(x, op: Op, types: ScanTypes, *, exclusive=False, seed=None, out=None, want_total=False, algorithm="auto",
         aux=(), reverse=False, initial=None):
    """The backend's ``scan``: :func:`_scan`, and the first item written back once (:func:`_raw_first`).
    Calls from inside this module go to :func:`_scan`, so that the first item is written once."""
    result, total = _scan(x, op, types, exclusive=exclusive, seed=seed, out=out, want_total=want_total,
                          algorithm=algorithm, aux=aux, reverse=reverse, initial=initial)
    if op.state is not None:  # a segmented gcd's or lcm's identity is marked EMPTY in the kernels (exact)
        return result, total
    one_row_total = total is not None and op.core.raw_first and seed is None and initial is None and x.shape[0] == 1
    if one_row_total:  # one row is its own total (gcd(0, -6) is 6: _raw_first)
        first = op.core.lift(cp.asnumpy(x).reshape(-1), types.acc).reshape(np.shape(total))
        total = first if isinstance(total, np.ndarray) else cp.asarray(first)
    return _raw_first(x, result, op, seed is not None or initial is not None, reverse, exclusive), total


def _scan(x, op: Op, types: ScanTypes, *, exclusive=False, seed=None, out=None, want_total=False, algorithm="auto",
          aux=(), reverse=False, initial=None):
    if reverse or aux or op.state is not None:  # suffix scans and state operators: scan_ext_kernel
        return extended.scan(x, op, types, exclusive=exclusive, seed=seed, out=out, want_total=want_total,
                             algorithm=algorithm, aux=aux, reverse=reverse, initial=initial)
    if (not want_total and cp is not None
            and type(x) is cp.ndarray and x._c_contiguous
            and x.size > 0 and (x.ndim == 1 or (x.ndim == 2 and x.shape[1] == 1))
            and (out is None or (type(out) is cp.ndarray and out._c_contiguous and out.shape == x.shape
                                 and out.dtype == types.result))):
        r = scan_fast(x, op, types, exclusive, out, algorithm, seed)
        if r is not None:
            return r, None
    require_cupy()
    if out is not None and (out.dtype != types.result or out.size != x.size):  # the kernels would write past it
        raise TypeError(f"out must hold {x.size} items of {types.result}, not {out.size} of {out.dtype}")
    if zero_absorbs(op, types.acc) and types.result != types.acc:
        # float16 products: fix the zeros where the accumulator's values are (a float16 result
        # overflows to inf where the float32 running product is still finite), then round.
        wide, total = _scan(x, op, ScanTypes(types.input, types.acc, types.acc), exclusive=exclusive, seed=seed,
                            want_total=want_total, algorithm=algorithm)
        if out is None:
            return wide.astype(types.result), total
        out[...] = wide
        return out, total
    if x.ndim == 1:  # one column; the result keeps the caller's 1-D shape
        rows, total = _scan(x.reshape(-1, 1), op, types, exclusive=exclusive, seed=seed,
                            out=None if out is None else out.reshape(-1, 1), want_total=want_total,
                            algorithm=algorithm)
        return rows.reshape(-1), total
    n, w = x.shape
    if not x.flags.c_contiguous:
        x = cp.ascontiguousarray(x)
    dev_id = x.device.id
    result = out
    if out is None or not out.flags.c_contiguous:
        out = cp.empty((n, w), dtype=types.result)
    if seed is not None:
        seed = np.asarray(seed, dtype=types.acc).reshape(w)
    if n == 0 or w == 0:
        total = None
        if want_total:
            total = seed.copy() if seed is not None else identity_row(op, types, w)
        if result is not None and result is not out:
            result[...] = out
            out = result
        return out, total

    stream_ptr = cp.cuda.get_current_stream().ptr
    if want_total or zero_absorbs(op, types.acc):
        # a total and the repair of products' zeros pass through the host
        refuse_in_capture(stream_ptr, "a scan that returns its total, or a float product")
    plan = plan_of(dev_id, x.dtype, types, op, algorithm)
    d_total = cp.empty(w, dtype=plan.kacc) if want_total else None
    if w == 1:
        seed_k = plan.kacc.type(seed[0]) if seed is not None else plan.kacc.type(op.neutral(types.acc))
        scan_1d(plan, x, out, n, exclusive, seed_k, seed is not None, np.uint64(0) if d_total is None else d_total,
                 dev_id, stream_ptr, op)
    else:  # (x and out C-contiguous above)
        def acc_plan():
            return plan_of(dev_id, plan.kacc, ScanTypes(plan.kacc, plan.kacc, plan.kacc), op, algorithm)

        columns.scan_columns(plan, x, out, exclusive, None if seed is None else seed.astype(plan.kacc), d_total,
                             stream_ptr, acc_plan)
    absorbed = None
    if zero_absorbs(op, types.acc):
        absorbed = absorb_zeros(cp, lifted(cp, x, op), out, seed, exclusive, zero_search.SEARCH)
    if exclusive and seed is None and first_is_identity(op, types):
        out[0] = op.identity(types.acc)  # +0.0, or nanmax's -inf (see first_is_identity)
    if result is not None and result is not out:
        result[...] = out
        out = result
    total = None
    if want_total:
        total = d_total.get().astype(types.acc)
        if absorbed is not None and absorbed.any():
            last = out[-1].astype(types.acc)
            if exclusive:
                last = last * lifted(cp, x[-1], op).astype(types.acc)  # one sequential step: no tile grouping
            total = np.where(absorbed, last.get(), total).astype(types.acc)
    return out, total


def array_module():
    """The array module of this backend's arrays."""
    return require_cupy()
