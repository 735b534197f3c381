"""Reverse scans and state operators (segmented, affine, compensated) over ``(n, w)`` rows,
``w >= 2``: the extended module's columns kernels (``compile.COLUMN_ROLES``,
``kernels/agent/agent_columns.cuh`` with COLUMN_STATES), three coalesced passes over all the
columns at once, through ``columns.scan_state_columns``.

Until 2026-11-28 each column was transposed out, scanned by scan_ext_kernel alone (a launch a
column) and transposed back: 2.1-13x the time of these kernels (benchmarks/RESULTS.md, "Reverse
and state scans of columns").  The zero-absorbing float products
still go that way (``extended.scan``): the repair of their zeros reads a column's kernel states
as the 1-D kernel leaves them.

Assumptions: ``x`` and ``out`` are C-contiguous ``(n, w)`` on the current device (``extended``
makes them so), the coefficients ``(n, w)`` rows of the accumulator's value dtype and the flags
one a row (``_call.Call._aux``, ``_kinds``' lean arrays); seeds go by value in the carry
kernel's launches; the projected initial is copied to the device within the call, which is
never captured (``extended.scan`` refuses a capture); nothing is kept between calls but the
compiled kernels.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..._dtypes import ScanTypes
from ...ops import Op
from . import columns
from . import compile as cc
from .device import cp
from .ext_states import aux_arrays, ext_module_key, kernel_state, param_rows, restate
from .launch import first_row, identity_first

# The columns modules by (device, input dtype, accumulator and result dtypes, operator functor and
# source, direction, one coefficient row): what their ModuleKey is made of (the device algorithm
# and tuning that ext_module_key takes are not read by these kernels; "lookback" fixes them).
COLUMN_FUNCS: dict = {}


def column_funcs(dev_id: int, in_dtype, types: ScanTypes, op: Op, reverse: bool, coef_one: int = 0) -> dict:
    key = (dev_id, np.dtype(in_dtype), types.acc, types.result, op.functor, op.source, reverse, coef_one)
    funcs = COLUMN_FUNCS.get(key)
    if funcs is None:
        mkey = dataclasses.replace(ext_module_key(in_dtype, types, op, "lookback", reverse, coef_one), columns=True)
        funcs = COLUMN_FUNCS[key] = cc.get_functions(mkey, dev_id)
    return funcs


def scan(x, out, op: Op, types: ScanTypes, dev_id: int, stream_ptr: int, exclusive: bool, reverse: bool, seed,
         initial, aux, want_total: bool):
    """``out`` = the scan of each column of ``x``, and the ``(w,)`` host total where wanted (else
    None), as ``extended.scan`` returns them; ``out`` None: the total alone (:func:`reduce`)."""
    n, w = x.shape
    kstate = kernel_state(op, types)
    host_dtype = np.dtype(types.state if op.state is not None else types.acc)
    seeds = None if seed is None else restate(np.asarray(seed, host_dtype).reshape(w), kstate)
    params = param_rows(op, initial, kstate, w)
    d_params = None if params is None else cp.asarray(np.frombuffer(params.tobytes(), np.uint8))
    flags, coef, coef_one = aux_arrays(aux, op, n, w)
    totals = cp.empty((w, kstate.itemsize), np.uint8) if want_total else None
    funcs = column_funcs(dev_id, x.dtype, types, op, reverse, coef_one)
    columns.scan_state_columns(funcs, kstate.itemsize, x, out, n, w, exclusive, seeds, totals, flags=flags, coef=coef,
                               params=d_params, stream_ptr=stream_ptr)
    first = first_row(op, types) if exclusive else None
    if first is not None and seed is None and params is None:
        identity_first(out, first, n, w, reverse, stream_ptr)
    return None if totals is None else restate(totals.get().view(kstate).reshape(w), host_dtype)


def reduce(x, op: Op, types: ScanTypes, dev_id: int, aux, reverse: bool) -> np.ndarray:
    """The carry of a part in scan order, ``(w,)`` host states: :func:`scan`'s total without its
    scan pass (no out)."""
    return scan(x, None, op, types, dev_id, cp.cuda.get_current_stream().ptr, False, reverse, None, None, aux, True)
