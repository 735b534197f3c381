"""CUDA backend: the block-hierarchical single-pass scan of ``kernels/`` on CuPy arrays.

Implements the backend protocol of :mod:`distscan.backends` (arrays are C-contiguous
``(n, w)`` CuPy arrays; seeds, totals and offsets are host NumPy arrays ``(w,)`` in the
accumulator dtype).  Everything runs on the current CuPy stream; a device-to-host copy
(and so a synchronisation) happens only when a host value is returned: ``reduce``,
and ``scan(..., want_total=True)``.  Host threads may share a stream (each launch takes the
stream's scratch under a lock; the per-thread default stream counts as one stream per thread).

Paths
-----
* ``w == 1`` (1-D data): one launch of ``scan_tiles_kernel``: one block per tile with
  decoupled look-back over aligned sub-windows and windows (``kernels/tile/tile_state.cuh``); for
  ``algorithm="auto"`` from LEAD_MIN_LEADS leads of tiles, one block per claim that reduces
  tile c and scans tile c - lead from L2 (``kernels/agent_scan.cuh``: no scan waits for a
  load), and from lookahead_min_bytes() moved (and with ``algorithm="lookahead"``) persistent
  blocks that keep each tile in a shared-memory ring from its reduction to its scan, DEPTH
  of their own tiles later, with a service warp for claims and status words
  (``kernels/agent_lookahead.cuh``: each tile read once).  All
  have the same deterministic association, so for the same tile shape their results are
  bitwise equal.  The tile state needs no clearing between launches (launch epochs in the
  status words), and its epoch and tile counter live on the device, so a launch's arguments
  are the same when it is repeated: the hot path replays a CUDA graph of a call it has seen
  before (``hotpath.FastEntry.launch_graphed``), and a user's own graph may capture a scan (its
  launch gets status words of its own: ``scratch.captured_scratch``).  Large hot-path launches
  are programmatic dependents of the kernel before them (sm_90+: ``dependent``), so they
  overlap its tail.
* ``w >= 2``: three kernels over tiles of rows, each pass coalesced (``columns``: each tile's
  fold per column, the scan of each column's tile folds from its seed, each tile again).

Float results are bitwise reproducible for the same input, dtype and GPU model (the
association depends on n and the tile shape only; for ``w >= 2`` columns on n, w and the run
length of ``columns.run_length``).  Accuracy: with unit roundoff ``u``
of the accumulator, ``|out[i] - exact[i]| <= (L + 2) * u * sum_{j<=i} |x[j]|`` for sums,
``L = ITEMS + log2(BLOCK_THREADS) + 16 + ceil((i+1) / (TILE * WINDOW))``
(see :func:`error_depth`; for ``w >= 2`` columns ``columns.error_depth``), plus the final rounding
to a narrower output dtype.

Modules, each one concern: ``settings`` (what tests and benchmarks may override), ``device``
(CuPy, GPU facts, streams, captures), ``compile`` (NVRTC modules), ``plans`` (which kernel, which
shape), ``scratch`` (status words per stream and per captured launch), ``launch`` (launch shapes,
argument blocks), ``hotpath`` (the common call in one lookup, graphs, dependent launches),
``general`` (every other scan), ``columns`` (``w >= 2`` columns), ``extended`` (reverse and state scans),
``ext_states`` (their states on the host), ``state_columns`` (their ``w >= 2`` columns), ``extended_lean`` (their
one-rank call in one function), ``reductions`` (carries and offsets), ``recycle`` (results handed
out again), ``dependent`` (cuLaunchKernelEx).  This module is the backend protocol of
:mod:`distscan.backends` and the test surface (:func:`overrides`, :func:`clear_caches`,
:func:`stats`).
"""

from __future__ import annotations

from contextlib import contextmanager

from . import hotpath, scratch
from .casts import astype
from .device import DEVICE_INFO, SIDE_STREAMS, cp, require_cupy
from .ext_states import coefficient_devices, forget_coefficients, one_coefficient
from .extended import EXT_CALLS, EXT_PLANS
from .extended_lean import LEAN_EXT, lean_state_scanner, seeded_state_scanner
from .general import array_module, lean_arrays, lean_scanner, scan, scan_lean
from .plans import ADD_PLANS, PLANS, error_depth, lookahead_min_bytes, module_key, tuning, uses_lookahead
from .reductions import REDUCTIONS, combine, reduce
from .settings import SETTINGS

__all__ = ["name", "is_native", "lean_arrays", "lean_scanner", "lean_state_scanner", "seeded_state_scanner", "scan",
           "scan_lean", "reduce", "combine", "array_module", "synchronize", "tuning", "module_key", "error_depth",
           "uses_lookahead", "lookahead_min_bytes", "SETTINGS", "overrides", "clear_caches", "stats",
           "one_coefficient", "astype"]

name = "cuda"


def is_native(x) -> bool:
    return cp is not None and isinstance(x, cp.ndarray)


def synchronize() -> None:
    """Wait for the work queued on the current CuPy stream (used by the API's timings)."""
    require_cupy().cuda.get_current_stream().synchronize()


# --------------------------------------------------------------------------------------
# test surface
# --------------------------------------------------------------------------------------
@contextmanager
def overrides(**values):
    """Change :data:`SETTINGS` (``tuning=``, ``lead=``, ``dependent_min_bytes=``,
    ``spare_max_bytes=``, ``max_stream_entries=``) inside a block, and put the old values back
    after it.  Tests and benchmarks force tile shapes and thresholds so; nothing in the library
    calls it.

    A test and benchmark tool: **process-wide and not thread-safe.**  :data:`SETTINGS` is one
    object, read by every call of the backend in every thread: while the block runs, the scans of
    all threads take its values, not only the block's own; and two threads whose blocks overlap
    may restore each other's values (the one that ends last puts back what it found, which may be
    the other's), so the values outlive both.  Use it from one thread, with no other thread
    scanning on the GPU.  Nested blocks in one thread are fine: each puts back what it found.

    Nothing leaks past the block: the old values are put back in a ``finally``, also when the
    block raises or when setting the values raises half-way (the entries derived from the
    settings are then dropped again: ``hotpath.settings_changed``).  Caches keyed on a setting
    (plans, hot-path entries) keep the entries of each value apart.

    Raises
    ------
    TypeError
        For a name that is not a setting (before anything changes).
    """
    unknown = sorted(set(values) - set(vars(SETTINGS)))
    if unknown:
        raise TypeError(f"not a setting of the CUDA backend: {', '.join(unknown)}; "
                        f"the settings are {', '.join(vars(SETTINGS))}")
    old = {k: getattr(SETTINGS, k) for k in values}
    try:
        for k, v in values.items():
            setattr(SETTINGS, k, v)
        hotpath.settings_changed()
        yield SETTINGS
    finally:
        for k, v in old.items():
            setattr(SETTINGS, k, v)
        hotpath.settings_changed()


def clear_caches() -> None:
    """Forget every plan, hot-path entry, reduction entry and stream scratch (after the work queued
    on their devices is done), as a new process would start.  Scratches of launches recorded into
    callers' graphs stay (``scratch.CAPTURED``): those graphs may still be replayed."""
    if cp is None:
        return
    devices = {key[0] for key in list(scratch.SCRATCHES) + list(hotpath.FAST) + list(REDUCTIONS)}
    devices |= coefficient_devices()
    for dev_id in devices:
        with cp.cuda.Device(dev_id):
            cp.cuda.runtime.deviceSynchronize()
    hotpath.forget()
    scratch.forget()
    forget_coefficients()
    for cache in (REDUCTIONS, PLANS, ADD_PLANS, EXT_PLANS, EXT_CALLS, LEAN_EXT, SIDE_STREAMS, DEVICE_INFO):
        cache.clear()


def stats() -> dict:
    """What the caches hold now, by kind (tests and benchmarks read it).  Each cache is read
    through a snapshot: other threads may publish into it meanwhile."""
    entries = [e for e in list(hotpath.FAST.values()) if e is not hotpath.NOT_FAST]
    return {"plans": len(PLANS) + len(EXT_PLANS), "hot-path entries": len(entries), "reductions": len(REDUCTIONS),
            "stream scratches": len(scratch.SCRATCHES), "captured scratches": scratch.captured_scratches(),
            "graphs": sum(1 for e in entries for g in list((e.graphs or {}).values()) if g is not hotpath.SEEN_ONCE),
            "kept results": sum(len(s.results.arrays) for s in list(scratch.SCRATCHES.values())),
            "extended entries": len(EXT_CALLS)}
