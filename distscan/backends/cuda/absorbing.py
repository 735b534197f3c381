"""A segmented float product's zeros on the GPU: the host's repair of what the kernels compute.

The kernels scan a segmented product as (value, flag) states whose values multiply tile by tile
(``kernels/util/states.cuh``), so a zero can meet a tile's own overflowed product (``0 * inf``:
NaN where ``numpy.cumprod`` stays 0), and their totals lack the state's zero-absorption fields
(:mod:`distscan.ops.absorbing`).  The extended path (:mod:`.extended`) asks :func:`absorbs`, then
repairs its results (:func:`absorbed_results`) and completes its totals (:func:`tail_of_scan`,
:func:`tail_of_part`) with the array functions of ``backends/absorb.py`` over CuPy.
"""

from __future__ import annotations

import numpy as np

from ..._carry import lifted
from ..._dtypes import ScanTypes
from ...ops import Op
from ..absorb import absorb_segmented, project_initial, segmented_tail
from . import zero_search
from .device import cp


def absorbs(op: Op, types: ScanTypes) -> bool:
    """A segmented float or complex product (``Segmented.absorbs``): its kernels multiply values tile
    by tile, so the host repairs its results where a zero met a tile's overflowed product, and
    gives its totals the state's zero-absorption fields (``backends/absorb.py``)."""
    return op.state is not None and op.state.kind.startswith("segmented") and op.state.absorbs(types.acc)


def _scan_order(x, flags, op: Op, types: ScanTypes, reverse: bool):
    """``x`` as ``(n, w)`` rows of the accumulator dtype as the operator reads them (nanprod's NaN
    as 1), and the flags, both in scan order (views where they can be)."""
    rows = lifted(cp, x.reshape(x.shape[0], -1), op).astype(types.acc, copy=False)
    return (rows[::-1], flags[::-1]) if reverse else (rows, flags)


def absorbed_results(x, flags, columns, op: Op, types: ScanTypes, seed, exclusive: bool, reverse: bool, initial,
                     host_dtype):
    """A segmented float product's results ``columns`` (``(n, w)``, the kernels' without ``initial``)
    repaired where a zero met a tile's overflowed product (``absorb.absorb_segmented``), then
    ``initial`` folded in (``absorb.project_initial``: ``initial * value`` but where a zero absorbs,
    as ``Segmented.project``); returns the rows, flags
    (scan order) and host seed that its total's fields come from (:func:`tail_of_scan`)."""
    w = columns.shape[1]
    rows, order = _scan_order(x, flags, op, types, reverse)
    host_seed = None if seed is None else np.asarray(seed, host_dtype).reshape(w)
    absorb_segmented(cp, rows, columns[::-1] if reverse else columns, order, host_seed, exclusive, op.state.ends,
                     zero_search.SEARCH)
    if initial is not None:
        project_initial(cp, rows, columns[::-1] if reverse else columns, order, host_seed, initial, exclusive,
                        op.state.ends)
    return rows, order, host_seed


def tail_of_scan(op: Op, rows, order, total, host_seed):
    """A scan's total (host states of the kernels' fields) with the state's zero-absorption fields,
    from what :func:`absorbed_results` returned."""
    return segmented_tail(cp, op.state, rows, order, total, host_seed)


def tail_of_part(x, flags, op: Op, types: ScanTypes, reverse: bool, total):
    """A part's carry (the ordered reduction's host states) with the state's zero-absorption fields."""
    rows, order = _scan_order(x, flags, op, types, reverse)
    return segmented_tail(cp, op.state, rows, order, total, None)
