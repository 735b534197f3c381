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
  decoupled look-back over aligned sub-windows and windows (``kernels/tile_state.cuh``); for
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
  before (``_FastEntry.launch_graphed``), and a user's own graph may capture a scan.  Large
  hot-path launches are programmatic dependents of the kernel before them (sm_90+:
  ``_dependent_launch``), so they overlap its tail.
* ``1 < w <= 32``: the columns of a transposed contiguous copy, one launch each.
* ``w > 32``: ``scan_columns_kernel``, one thread per column (coalesced along rows);
  correct for any shape, fast only when ``w`` is large.

Float results are bitwise reproducible for the same input, dtype and GPU model (the
association depends on n and the tile shape only).  Accuracy: with unit roundoff ``u``
of the accumulator, ``|out[i] - exact[i]| <= (L + 2) * u * sum_{j<=i} |x[j]|`` for sums,
``L = ITEMS + log2(BLOCK_THREADS) + 16 + ceil((i+1) / (TILE * WINDOW))``
(see :func:`error_depth`), plus the final rounding to a narrower output dtype.
"""

from __future__ import annotations

import ctypes
import math
import threading
from contextlib import nullcontext

import numpy as np

from ..._carry import zero_absorbs
from ..._dtypes import ScanTypes
from ..absorb import absorb_zeros
from .dependent import DependentLaunch, available as _dependent_launch_available
from .recycle import ResultRing, memory_holders_check
from ...ops import Op
from . import compile as cc

try:  # the module imports without CuPy; get_backend("cuda") checks availability
    import cupy as _cp
    _current_device = _cp.cuda.runtime.getDevice
except Exception:  # noqa: BLE001
    _cp = _current_device = None

name = "cuda"

# Columns at most this many go through the single-pass kernel one by one.
_NARROW_COLUMNS = 32
# Set (threads, items, window, min_blocks) to force a tile shape (benchmarks and tests do).
_TUNING_OVERRIDE = None
# Set an int to force the look-back's reduction lead (tiles; 0: none) at every size for
# algorithm="auto" (tests and benchmarks do); None: the measured rule of _lead().
_LEAD_OVERRIDE = None


def _require_cupy():
    if _cp is None:
        raise RuntimeError("the CUDA backend needs CuPy (pip install cupy-cuda12x or cupy-cuda13x) and an NVIDIA GPU")
    return _cp


def is_native(x) -> bool:
    return _cp is not None and isinstance(x, _cp.ndarray)


# --------------------------------------------------------------------------------------
# per-device facts and per-(device, stream) scratch
# --------------------------------------------------------------------------------------
_DEVICE_INFO: dict = {}


def _device_info(dev_id: int):
    info = _DEVICE_INFO.get(dev_id)
    if info is None:
        cp = _require_cupy()
        dev = cp.cuda.Device(dev_id)
        cc_num = int(dev.compute_capability)
        cc_major = cc_num // 10
        if cc_major < 7:
            raise RuntimeError(
                f"GPU {dev_id} has compute capability {cc_major}.x; distscan's kernels need 7.0 or newer "
                "(ld.relaxed.gpu / st.relaxed.gpu for the look-back)"
            )
        attrs = dev.attributes
        info = {"sms": attrs["MultiProcessorCount"], "cc": cc_num, "l2": attrs["L2CacheSize"],
                # peak DRAM bytes/s (double data rate; kHz, bits); None where not reported
                "dram_bw": (2e3 * attrs["MemoryClockRate"] * attrs["GlobalMemoryBusWidth"] / 8
                            if attrs.get("MemoryClockRate") and attrs.get("GlobalMemoryBusWidth") else None)}
        _DEVICE_INFO[dev_id] = info
    return info


class _TileScratch:
    """Tile status words, the launch state (``kernels/tile_state.cuh``, LaunchWord: the epoch
    and the tile counter), the spare result memory (``_SPARE_MAX_BYTES``) and the small
    results handed out of one (device, stream).

    Status words carry the epoch of the launch that wrote them, so no clearing pass is needed
    between launches: each claim of a tile id returns the launch's epoch from the launch state,
    and the launch's last claim moves it on (the launch with the last epoch zeroes the words).  The host zeroes the words
    only when it (re)allocates them.  Only launches on this stream use this scratch, so they
    are ordered.  A launch recorded into a caller's graph takes a scratch of its own instead
    (:func:`_captured_scratch`): a graph may be replayed on any stream, at any time.
    """

    def __init__(self, exact: bool = False):
        # Held around the hot path's argument block, graphs, spare and ring: host threads that
        # share a stream share its scratch and hot-path entries.
        self.lock = threading.Lock()
        self.words = None
        self.subaggs = None
        self.anchors = None
        self.launch_state = None
        self.exact = exact  # sized for one launch (a captured one), not rounded up for later ones
        self.generation = 0  # bumped when the arrays are reallocated (the hot path caches their pointers)
        # (nbytes, MemoryPointer): the next small result's memory, taken by the hot path after
        # its launch (see _SPARE_MAX_BYTES); None when there is none.
        self.spare = None
        self.results = ResultRing(holders=_result_holders())  # small results handed out, for reuse once dropped

    def prepare(self, num_tiles: int, window: int, k: int) -> None:
        """Status words for a launch of ``num_tiles`` tiles (reallocated, zeroed, when too few).

        All or nothing: the new arrays are made and initialised first, and only then take the
        place of the old ones, so a call that fails half way (out of memory, a refused copy)
        leaves the scratch as it was, never words without a launch state.  On a stream that is
        capturing (a caller's graph) nothing may be recorded: the arrays are then made on a
        stream of the device's own and waited for."""
        need_words = max(num_tiles, 1) * k
        need_subaggs = (num_tiles // 32 + 1) * k
        need_anchors = (num_tiles // window + 1) * k
        if self.words is not None and self.words.size >= need_words and self.subaggs.size >= need_subaggs \
                and self.anchors.size >= need_anchors:
            return
        if not self.exact:
            need_words, need_subaggs, need_anchors = (max(need_words, 1 << 16), max(need_subaggs, 1 << 12),
                                                      max(need_anchors, 1 << 10))
        cp = _cp
        capturing = _is_capturing(cp.cuda.get_current_stream().ptr)
        with (_side_stream() if capturing else nullcontext()) as side:
            words = cp.zeros(need_words, dtype=cp.uint64)
            subaggs = cp.zeros(need_subaggs, dtype=cp.uint64)
            anchors = cp.zeros(need_anchors, dtype=cp.uint64)
            # new words: epochs start again at 1; the kernel zeroes them when the epoch wraps
            state = np.zeros(_LAUNCH_WORDS, np.uint64)
            state[_LAUNCH_SIZES:_LAUNCH_SIZES + 3] = (words.size, subaggs.size, anchors.size)
            launch_state = cp.asarray(state)
            if side is not None:
                side.synchronize()
        self.words, self.subaggs, self.anchors, self.launch_state = words, subaggs, anchors, launch_state
        self.generation += 1

    def capacity(self, window: int, k: int) -> int:
        """The most tiles one launch of a plan with this window and ``k`` words per status may
        take without :meth:`prepare` reallocating (-1 before the first prepare)."""
        if self.words is None:
            return -1
        return min(self.words.size // k, 32 * (self.subaggs.size // k) - 1, window * (self.anchors.size // k) - 1)


_HOLDERS: list = []


def _result_holders():
    """The ring's check that nothing but a result array holds its memory (measured once, on an
    array made as the hot path makes its results; None where counts cannot be trusted)."""
    if not _HOLDERS:
        _HOLDERS.append(memory_holders_check(lambda: _cp.ndarray((1,), np.int8, _cp.cuda.alloc(1))))
    return _HOLDERS[0]


_SIDE_STREAMS: dict = {}


def _side_stream():
    """A stream of the current device's own, never capturing: the one place where a call inside a
    caller's capture may set up its scratch (the caller's graph records nothing of it)."""
    dev_id = _current_device()
    stream = _SIDE_STREAMS.get(dev_id)
    if stream is None:
        stream = _SIDE_STREAMS[dev_id] = _cp.cuda.Stream(non_blocking=True)
    return stream


# Scratches of the launches recorded into callers' graphs, kept as long as the process: a graph
# may be replayed at any time on any stream, so the words its launch uses must be its own and
# must outlive it, and nothing tells when a caller's graph is destroyed.  Each is sized for its
# launch (8 bytes a tile per status word: 64 bytes for 2^16 4-byte items, 1 MiB for 2^29).
_CAPTURED: list = []


def _captured_scratch(num_tiles: int, window: int, k: int) -> _TileScratch:
    """A scratch of its own for one launch recorded into a caller's graph (set up outside it)."""
    scratch = _TileScratch(exact=True)
    scratch.prepare(num_tiles, window, k)
    _CAPTURED.append(scratch)
    return scratch


def _refuse_in_capture(stream_ptr: int, what: str) -> None:
    """Raise before any work is queued when a call that needs the host runs inside a capture."""
    if _is_capturing(stream_ptr):
        raise RuntimeError(f"{what} inside a CUDA graph capture: it needs a value on the host, which a "
                           "capture cannot give; call it outside the capture")


_SCRATCH: dict = {}
# kernels/tile_state.cuh, LaunchWord: the launch state's length, and where the three
# status-word arrays' sizes go.
_LAUNCH_WORDS, _LAUNCH_SIZES = 8, 3
# A call without ``out=`` of a result up to this size takes the memory its stream's scratch set
# aside after the previous such call's launch, and sets aside the next: the allocation (1.4 us
# on the H200 host) then overlaps a kernel instead of delaying the launch.  One buffer per
# stream at most, of the last such result's size (benchmarks/RESULTS.md, "Issue 10, ninth pass").
# Results up to this size are also kept for reuse once dropped (_recycle; two per stream).
_SPARE_MAX_BYTES = 1 << 22
# Caches keyed by stream keep at most this many entries (code that makes a stream per call
# would otherwise hold a scratch of >= 512 KB per stream it ever used); the oldest go first.
# An evicted scratch's memory returns to CuPy's pool for the stream that allocated it, so
# work still queued there is done before the memory is handed out again.
_MAX_STREAM_ENTRIES = 64
_PER_THREAD_STREAM = 2  # cudaStreamPerThread: one handle, a different stream in every host thread


def _stream_key(stream_ptr: int):
    """What the caches key a stream by: its handle, and the host thread for the per-thread
    default stream (whose handle is the same in every thread)."""
    return stream_ptr if stream_ptr != _PER_THREAD_STREAM else (stream_ptr, threading.get_ident())


def _remember(cache: dict, key, value, cap: int = _MAX_STREAM_ENTRIES):
    """``cache[key] = value``, dropping the oldest entries past ``cap``."""
    cache[key] = value
    while len(cache) > cap:
        cache.pop(next(iter(cache)))
    return value


def _scratch(dev_id: int, stream_ptr: int) -> _TileScratch:
    key = (dev_id, _stream_key(stream_ptr))
    s = _SCRATCH.get(key)
    if s is None:
        s = _remember(_SCRATCH, key, _TileScratch())
    return s


# --------------------------------------------------------------------------------------
# kernel selection
# --------------------------------------------------------------------------------------
_PLANS: dict = {}


class _Plan:
    __slots__ = ("funcs", "tuning", "kacc", "k_words", "in_size", "out_size", "tile", "window", "threads", "identity_k",
                 "device", "la_smem", "la_grid", "lead", "large_key", "large", "reduce_grid")


def _persistent_grid(fn, threads: int, smem: int, sms: int, fallback: int) -> int:
    """Blocks of a persistent kernel: as many as fit on every SM at once (``fallback`` per SM
    without an occupancy query in this CuPy: the register budget's count); 0 if none fits."""
    try:
        per_sm = _cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(fn.kernel.ptr, threads, smem)
    except Exception:  # noqa: BLE001
        per_sm = fallback
    return max(0, int(per_sm)) * sms


def _setup_lookahead(plan: _Plan, dev_id: int, in_dtype, out_dtype) -> None:
    """Dynamic shared memory and persistent grid of a "lookahead" plan (0 for the others).

    Raises
    ------
    RuntimeError
        If the kernel's shared-memory ring does not fit one block on this GPU's SMs.
    """
    plan.la_smem = plan.la_grid = 0
    if plan.device != "lookahead":
        return
    smem = plan.tuning.lookahead_smem(in_dtype, out_dtype)
    try:
        for role in ("scan_incl", "scan_excl"):
            plan.funcs[role].max_dynamic_shared_size_bytes = smem
        grid = _persistent_grid(plan.funcs["scan_incl"], plan.threads, smem, _device_info(dev_id)["sms"],
                                plan.tuning.min_blocks)
    except Exception:  # noqa: BLE001 - the driver refuses the size
        grid = 0
    if grid == 0:
        raise RuntimeError(f"the look-ahead scan kernel needs {smem} bytes of shared memory per block, "
                           f"more than GPU {dev_id} gives")
    plan.la_smem, plan.la_grid = smem, grid


# "auto" runs the look-ahead kernel (kernels/agent_lookahead.cuh) where a scan moves (reads plus
# writes) lookahead_min_bytes() or more and the kernel's shared-memory ring fits the GPU, and the
# look-back (with the reduction lead) under that: by the wider of the input and output items,
# from 2^25 bytes when it has 8 bytes or more (2^21 8-byte items), else from 2^26 (2^23 4-byte
# items).  Measured, sums, look-ahead / "auto" of before (the look-back, with its lead from 2^23
# items), H100 and H200 in one bench_gpu run each (benchmarks/RESULTS.md, "Issue 10, thirteenth
# pass"): 8-byte 2^20 0.89-0.90 and 0.87, 2^21 1.06-1.09 and 1.06, 2^22 1.03-1.05 and 1.03-1.08;
# 4-byte 2^22 0.93 and 0.90-0.92, 2^23 1.06 and 0.98-1.00.  The look-ahead reads each tile once
# into shared memory; the lead kernel reads it twice (the second time from L2).
LOOKAHEAD_MIN_BYTES = 1 << 26
LOOKAHEAD_MIN_BYTES_WIDE = 1 << 25  # items of 8 bytes or more


def lookahead_min_bytes(in_size: int, out_size: int) -> int:
    """Bytes moved from which "auto" scans items of these sizes with the look-ahead kernel."""
    return LOOKAHEAD_MIN_BYTES_WIDE if in_size >= 8 or out_size >= 8 else LOOKAHEAD_MIN_BYTES


def uses_lookahead(n: int, in_size: int, out_size: int) -> bool:
    """Whether "auto" scans n items of these sizes (bytes) with the look-ahead kernel."""
    return n * (in_size + out_size) >= lookahead_min_bytes(in_size, out_size)


def _large_plan(plan: _Plan) -> _Plan:
    """The plan "auto" uses where :func:`uses_lookahead`: the look-ahead one where it fits, else
    ``plan`` itself.  Forcing the lead (``_LEAD_OVERRIDE``) keeps the lead kernel."""
    if plan.large_key is None or _LEAD_OVERRIDE is not None:
        return plan
    if plan.large is None:
        try:
            plan.large = _plan(*plan.large_key, "lookahead")
        except RuntimeError:
            plan.large = plan
    return plan.large


# The look-back's reduction runs ahead of its scans by the tiles that stream through DRAM in
# LEAD_SECONDS (Little's law: the latency to cover times the bandwidth; tile bytes = read +
# written).  Measured, 4- and 8-byte sums at 2^29 as a ratio to copy (benchmarks/RESULTS.md,
# "Issue 10"): H100 (3.35 TB/s) 66 tiles 0.90-0.93, 132 0.92-0.95, 198 0.94-0.95, 264
# 0.92-0.93, 528 and more 0.66-0.72; H200 (4.9 TB/s) 132 0.73-0.83, 198 0.77-0.83, 264
# 0.82-0.84, 330 0.82-0.84.  The collapse past ~400 tiles is the L2: the tiles between a
# reduction and its scan, read, re-read and written, no longer fit, so the scan reads DRAM
# again; the cap keeps that traffic within LEAD_L2_SHARE of the L2.  Without a bandwidth
# figure: LEAD_PER_SM tiles per SM.  Below LEAD_MIN_LEADS leads of tiles the pipeline's fill
# and drain cost more than the waits it removes (2^20 items: 0.53-0.56 of copy with a lead
# against 0.57-0.63 without).
LEAD_SECONDS = 3.75e-6
LEAD_PER_SM = 1.5
LEAD_L2_SHARE = 0.5
LEAD_MIN_LEADS = 3


def _setup_lead(plan: _Plan, dev_id: int, algorithm: str) -> None:
    """plan.lead: the reduction lead of an "auto" look-back plan (0: one tile per block)."""
    plan.lead = 0
    if algorithm != "auto" or plan.device != "lookback":
        return
    info = _device_info(dev_id)
    if info["dram_bw"]:
        lead = round(LEAD_SECONDS * info["dram_bw"] / (plan.tile * (plan.in_size + plan.out_size)))
    else:
        lead = round(LEAD_PER_SM * info["sms"])
    fit = int(LEAD_L2_SHARE * info["l2"]) // (plan.tile * (2 * plan.in_size + plan.out_size))
    plan.lead = max(1, min(lead, fit))


def _lead(plan: _Plan, num_tiles: int) -> int:
    if _LEAD_OVERRIDE is not None:
        return _LEAD_OVERRIDE if plan.lead else 0
    return plan.lead if num_tiles >= LEAD_MIN_LEADS * plan.lead else 0


def _plan(dev_id: int, in_dtype, types: ScanTypes, op: Op, algorithm: str = "auto") -> _Plan:
    key = (dev_id, in_dtype, types.acc, types.result, op.functor, _TUNING_OVERRIDE, algorithm)
    plan = _PLANS.get(key)
    if plan is None:
        mkey = module_key(in_dtype, types, op, algorithm)
        kacc, shape, device = mkey.acc_dtype, mkey.tuning, mkey.device
        plan = _Plan()
        plan.funcs = cc.get_functions(mkey, dev_id)
        plan.tuning = shape
        plan.kacc = kacc
        plan.k_words = (kacc.itemsize + 3) // 4
        plan.in_size = np.dtype(in_dtype).itemsize
        plan.out_size = np.dtype(types.result).itemsize
        plan.tile = shape.tile_items
        plan.window = shape.window
        plan.threads = shape.launch_threads(device)
        plan.identity_k = kacc.type(op.neutral(types.acc))
        plan.device = device
        _setup_lookahead(plan, dev_id, in_dtype, types.result)
        _setup_lead(plan, dev_id, algorithm)
        plan.large_key = (dev_id, in_dtype, types, op) if algorithm == "auto" else None
        plan.large = None
        plan.reduce_grid = None
        _PLANS[key] = plan
        _ADD_PLANS.setdefault((dev_id, types.result, kacc, op.functor, _TUNING_OVERRIDE), plan)
    return plan


# combine() needs only the add kernels, which depend on (output, accumulator, operator):
# reuse any module already compiled for them instead of compiling one more.
_ADD_PLANS: dict = {}


def _add_plan(dev_id: int, types: ScanTypes, op: Op) -> _Plan:
    kacc = cc.kernel_acc_dtype(types.acc)
    plan = _ADD_PLANS.get((dev_id, types.result, kacc, op.functor, _TUNING_OVERRIDE))
    return plan if plan is not None else _plan(dev_id, types.result, types, op)


def tuning(in_dtype, types: ScanTypes, algorithm: str = "auto", *, default: bool = False) -> cc.Tuning:
    """The tile shape of the scan kernel ``algorithm`` names; ``default``: the shape chosen
    without ``_TUNING_OVERRIDE``."""
    block, device = cc.kernel_algorithm(algorithm)
    return cc.choose_tuning(in_dtype, cc.kernel_acc_dtype(types.acc), types.result,
                            None if default else _TUNING_OVERRIDE, block, device)


def module_key(in_dtype, types: ScanTypes, op: Op, algorithm: str = "auto"):
    """The compile key of one scan (for :func:`distscan.backends.cuda.compile.precompile`)."""
    block, device = cc.kernel_algorithm(algorithm)
    return cc.ModuleKey(np.dtype(in_dtype), cc.kernel_acc_dtype(types.acc), np.dtype(types.result), op.functor,
                        tuning(in_dtype, types, algorithm), block, device)


def error_depth(n: int, in_dtype, types: ScanTypes) -> int:
    """``L`` of the accuracy bound in this module's docstring, for a scan of ``n`` items."""
    shapes = [tuning(in_dtype, types)]
    if uses_lookahead(n, np.dtype(in_dtype).itemsize, np.dtype(types.result).itemsize):  # its tile shape
        shapes.append(tuning(in_dtype, types, "lookahead"))
    # thread: ITEMS; warp: 5 (lanes) + block: log2(threads) (warps in order, <= threads/32);
    # look-back: 5 + 5 (two butterflies) + 3 (anchor, sub-windows, sub-window, own prefix);
    # one anchor hop per window.
    return max(t.items + int(math.log2(t.block_threads)) + 16 + -(-max(n, 1) // (t.tile_items * t.window))
               for t in shapes)


def _identity(op: Op, types: ScanTypes, w: int) -> np.ndarray:
    return np.full(w, op.identity(types.acc), dtype=types.acc)


def _first_is_identity(op: Op, types: ScanTypes) -> bool:
    """Whether an unseeded exclusive scan's first result must be rewritten after the kernel.

    The kernels start every prefix from the operator's neutral element (``kernels/operators.cuh``:
    -0.0 for float sums, so that a prefix of negative zeros keeps its sign), and so write it as
    the first result of an unseeded exclusive scan.  What an empty prefix gives is the identity
    (+0.0, as NumPy's ``np.add.identity`` and the CPU backend): for float and complex results of
    sums the host then sets that one item's bytes to zero (+0.0)."""
    if types.result.kind not in "fc":
        return False
    neutral = np.asarray(op.neutral(types.acc), types.result)
    return neutral.tobytes() != np.asarray(op.identity(types.acc), types.result).tobytes()


def _memset_async(ptr: int, value: int, nbytes: int, stream_ptr: int) -> None:
    _cp.cuda.runtime.memsetAsync(ptr, value, nbytes, stream_ptr)


# --------------------------------------------------------------------------------------
# protocol
# --------------------------------------------------------------------------------------
def _scan_1d(plan, x, out, n, exclusive, seed_k, has_seed, d_total_ptr, dev_id, stream_ptr, op=None):
    """Contiguous 1-D x -> out (n >= 1): one launch of scan_tiles_kernel, or for
    "hierarchical" three steps (tiles alone, the scan of their totals, the totals added back)."""
    if plan.device == "hierarchical":
        _scan_hierarchical(plan, x, out, n, exclusive, seed_k, has_seed, d_total_ptr, dev_id, stream_ptr, op)
        return
    if uses_lookahead(n, plan.in_size, plan.out_size):
        plan = _large_plan(plan)
    _launch_tiles(plan, x, out, n, exclusive, seed_k, has_seed, d_total_ptr, dev_id, stream_ptr)


def _scan_hierarchical(plan, x, out, n, exclusive, seed_k, has_seed, d_total, dev_id, stream_ptr, op):
    """Multi-kernel scan: each tile scans alone and leaves its total; the tile totals are
    scanned (exclusive, from the seed) by the same method, recursively, until they fit in
    one tile; each tile's prefix is added back to its items."""
    cp = _cp
    num_tiles = -(-n // plan.tile)
    d_tiles = cp.empty(num_tiles, plan.kacc)
    _launch_tiles(plan, x, out, n, exclusive, plan.identity_k, False, d_tiles, dev_id, stream_ptr)
    acc = ScanTypes(plan.kacc, plan.kacc, plan.kacc)
    if num_tiles == 1:  # the end of the recursion: one tile's prefix is the seed
        prefix = cp.full(1, seed_k if has_seed else plan.identity_k, plan.kacc)
    else:
        # from the neutral element when unseeded: the tile prefixes are folded into the tiles'
        # own items, whose signs a +0.0 first prefix would change
        seed = np.array([seed_k if has_seed else plan.identity_k], plan.kacc)
        prefix, _ = scan(d_tiles, op, acc, exclusive=True, seed=seed, algorithm="hierarchical")
    if num_tiles > 1 or has_seed:
        grid = int(max(1, min(8 * _device_info(dev_id)["sms"], -(-n // 256))))
        plan.funcs["add_tile_prefix"]((grid,), (256,), (out, np.int64(n), np.int64(plan.tile), prefix))
    if isinstance(d_total, cp.ndarray):
        d_total[:1] = _combine_device(op, acc, prefix[-1:], d_tiles[-1:])


def _combine_device(op, types, a, b):
    """``a op b`` of two one-element device arrays, through the operator's NumPy ufunc on the host."""
    return _cp.asarray(np.asarray(op.ufunc(a.get(), b.get())).astype(types.acc))


# A launch claims num_tiles (+ its persistent grid) tile ids, counted in the low 32 bits of the
# launch word (kernels/tile_state.cuh, LAUNCH STATE), and launches at most 2^31 - 1 blocks:
# 2^40 items or more at the smallest tiles, more than any GPU holds today.
_MAX_CLAIMS = (1 << 31) - 1


def _launch_shape(plan, n: int):
    """``(grid, dynamic shared memory, lead)`` of one scan of n items: the look-ahead kernel
    runs a persistent grid; the others one block per tile claim, num_tiles + lead of them
    (lead: the look-back's reduction lead, 0 for the other strategies)."""
    num_tiles = -(-n // plan.tile)
    if plan.la_grid:
        shape, claims = (min(num_tiles, plan.la_grid), plan.la_smem, 0), num_tiles + plan.la_grid
    else:
        lead = _lead(plan, num_tiles)
        shape = num_tiles + lead, 0, lead
        claims = num_tiles + lead
    if claims > _MAX_CLAIMS:
        raise ValueError(f"a scan of {n} items needs more tiles than one kernel launch can count")
    return shape


def _launch_tiles(plan, x, out, n, exclusive, seed_k, has_seed, d_total_ptr, dev_id, stream_ptr):
    """One launch of scan_tiles_kernel over contiguous 1-D x -> out (n >= 1)."""
    num_tiles = -(-n // plan.tile)
    # A launch recorded into a caller's graph gets status words of its own (_CAPTURED).
    scratch = (_captured_scratch(num_tiles, plan.window, plan.k_words) if _is_capturing(stream_ptr)
               else _scratch(dev_id, stream_ptr))
    vector_ok = int(x.data.ptr % 16 == 0 and out.data.ptr % 16 == 0)
    grid, smem, lead = _launch_shape(plan, n)
    fn = plan.funcs["scan_excl" if exclusive else "scan_incl"]
    with scratch.lock:
        scratch.prepare(num_tiles, plan.window, plan.k_words)
        fn((grid,), (plan.threads,),
           (x, out, np.int64(n), scratch.words, scratch.subaggs, scratch.anchors, scratch.launch_state, seed_k,
            np.int32(has_seed), d_total_ptr, np.int32(vector_ok), np.int64(lead)),
           shared_mem=smem)


class _ArgBlock:
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


# Hot path of scan() for the common call (1-D or (n, 1) contiguous input, contiguous `out`
# of the same shape or none, no total): one dict lookup for plan, scratch and kernel, and a
# launch through cuLaunchKernel with a ctypes argument block kept per entry (only the changing
# fields are rewritten: the scratch pointers only after the scratch was reallocated),
# bypassing CuPy's per-argument packing, or the replay of a CUDA graph of the same call.  At
# 2^16 items the call is host-bound (8 us through the API on the H200's host, 4-5 of them the
# launch): each attribute lookup and Python call here shows, so the sizes' launch shapes and
# the scratch's capacity are kept per entry.
_FAST: dict = {}
# A _FAST (or _REDUCE) value for calls the hot path does not take (several kernels, flagged
# product carries, a CuPy without driver.launchKernel): they go the general way.
_NOT_FAST = object()
# Launch shapes each entry keeps (sizes a loop of calls repeats).
_MAX_SHAPES = 64
# CUDA graphs of repeated calls: a one-kernel graph replayed costs the host half a
# cuLaunchKernel (H100 host: 2.32 against 4.88 us, benchmarks/logs/probe-pdl-graph-h100.txt).
# With the epoch and the tile ids on the device, an unseeded call's arguments are fixed by
# (x, out, n) and the scratch, so an entry makes a graph of a call it sees the second time
# (CuPy's pool and the result ring make loops repeat their pointers) and replays it after.
# At most this many per entry (all dropped when full, and when the scratch is reallocated).
_GRAPHS_PER_ENTRY = 16
# From this many bytes moved (read plus written) a hot-path launch is a programmatic dependent
# of the kernel before it on the stream (_dependent_launch; compute capability 9.0+): where the
# GPU bounds a loop of calls, the launch overlaps the previous kernel's tail (H100, loops of
# calls: 2^22 4-byte items 12.1 us per call against 13.2 with graphs; 2^24 8-byte 94 against
# 95-96).  Below it the host bounds the loop, and a graph's replay costs it less (2^20 4-byte
# items, 8 MB: 6.9 us against 8.1; 2^20 8-byte, 16 MB: 8.8 against 9.3).  benchmarks/RESULTS.md,
# "Issue 10, twelfth pass".
_DEPENDENT_MIN_BYTES = 1 << 25
_SEEN_ONCE = object()  # a _FastEntry.graphs value: no graph yet
_CAPTURE_STREAMS: dict = {}  # device -> the stream graphs are captured on (a graph runs on any stream)
_CAPTURE_LOCK = threading.Lock()


def _runtime_function(name: str):
    """CuPy's ``cupy.cuda.runtime.<name>``, or None (no CuPy, or one without it)."""
    try:
        return getattr(_cp.cuda.runtime, name)
    except AttributeError:
        return None


_graph_launch = _runtime_function("graphLaunch")
_capture_status = _runtime_function("streamIsCapturing")


def _is_capturing(stream_ptr: int) -> bool:
    """Whether the stream records into a graph (someone's capture) rather than runs."""
    if _capture_status is None:  # a CuPy without the query cannot capture either
        return False
    try:
        return _capture_status(stream_ptr) != 0
    except Exception:  # noqa: BLE001 - e.g. the legacy stream while another stream captures:
        return True    # the plain launch reports what CUDA thinks of that


class _FastEntry:
    """One kind of hot-path call (device, stream, dtypes, operator, direction, overrides):
    scan_tiles_kernel's 12 arguments as an :class:`_ArgBlock`, the plan, scratch and kernel
    handle, the launch shapes of the sizes seen, and the graphs of repeated calls."""

    def __init__(self, plan, scratch, kernel_ptr, launch, result_type, dependent=None):
        c = ctypes
        self.plan, self.scratch, self.launch = plan, scratch, launch
        self.dependent = dependent  # a DependentLaunch of the kernel, or None (before sm_90)
        self.result_type = result_type  # what cupy.ndarray takes fastest for the result dtype
        # the dtype object CuPy keeps in the results (the ring compares dtypes by identity)
        self.result_dtype = _cp.ndarray((0,), result_type).dtype
        self.kernel_ptr = kernel_ptr  # the module stays loaded: plan.funcs holds the kernel
        self.first_is_identity = False  # set by _fast_entry: see _first_is_identity
        self.args = _ArgBlock(c.c_uint64, c.c_uint64, c.c_int64, c.c_uint64, c.c_uint64, c.c_uint64, c.c_uint64,
                              plan.kacc.itemsize, c.c_int32, c.c_uint64, c.c_int32, c.c_int64)
        (self.x, self.out, self.n, self.words, self.subaggs, self.anchors, self.state, self.seed, self.has_seed,
         self.total, self.vec, self.lead) = self.args.values
        self.seed.raw = plan.identity_k.tobytes()
        self.seeded = False  # whether the block holds a seed (rewritten to the identity when not)
        self.generation = -1  # of the scratch whose pointers are in the block (none yet)
        self.max_tiles = -1  # the most tiles that scratch holds for this plan
        self.shapes = {}  # n -> (num_tiles, grid, smem, lead, dependent)
        # (x ptr, out ptr, n) -> _SEEN_ONCE or the call's graph; None: no graphs (a CuPy without
        # the runtime calls, or a driver that refused a capture)
        self.graphs = {} if _graph_launch is not None and _capture_status is not None else None

    def point_at_scratch(self):
        s = self.scratch
        if s.words is not None:  # else capacity -1: the general path prepares the scratch first
            self.words.value = s.words.data.ptr
            self.subaggs.value = s.subaggs.data.ptr
            self.anchors.value = s.anchors.data.ptr
            self.state.value = s.launch_state.data.ptr
        self.max_tiles = s.capacity(self.plan.window, self.plan.k_words)
        self.generation = s.generation
        if self.graphs:
            self.graphs.clear()  # they point at the old arrays

    def launch_shape(self, n: int):
        """``(num_tiles,) + _launch_shape(plan, n) + (dependent,)``, kept for the last sizes;
        ``dependent``: whether n items are launched as a programmatic dependent."""
        shape = self.shapes.get(n)
        if shape is None:
            if len(self.shapes) >= _MAX_SHAPES:
                self.shapes.clear()
            plan = self.plan
            dependent = self.dependent is not None and n * (plan.in_size + plan.out_size) >= _DEPENDENT_MIN_BYTES
            shape = self.shapes[n] = (-(-n // plan.tile),) + _launch_shape(plan, n) + (dependent,)
        return shape

    def set_args(self, xp, op_, n, vector_ok, lead, seed_k) -> None:
        """The changing arguments (the scratch pointers current: :meth:`point_at_scratch`)."""
        if seed_k is not None or self.seeded:
            self.set_seed(seed_k)
        self.x.value = xp
        self.out.value = op_
        self.n.value = n
        self.vec.value = vector_ok
        self.lead.value = lead

    def launch_at(self, xp, op_, n, vector_ok, lead, seed_k, grid, smem, stream_ptr) -> None:
        """One launch of the entry's kernel with these changing arguments."""
        self.set_args(xp, op_, n, vector_ok, lead, seed_k)
        self.launch(self.kernel_ptr, grid, 1, 1, self.plan.threads, 1, 1, smem, stream_ptr, self.args.ptr, 0)

    def launch_dependent(self, xp, op_, n, vector_ok, lead, seed_k, grid, smem, stream_ptr) -> None:
        """:meth:`launch_at` as a programmatic dependent of the kernel before it."""
        self.set_args(xp, op_, n, vector_ok, lead, seed_k)
        self.dependent(grid, smem, stream_ptr, self.args.ptr)

    def launch_graphed(self, xp, op_, n, vector_ok, lead, grid, smem, stream_ptr) -> None:
        """An unseeded launch: the replay of this (x, out, n)'s graph, made the second time
        the call is seen; a plain launch the first time."""
        key = (xp, op_, n)
        graph = self.graphs.get(key)
        if graph is None:
            if len(self.graphs) >= _GRAPHS_PER_ENTRY:
                self.graphs.clear()
            self.graphs[key] = _SEEN_ONCE
        else:
            if graph is _SEEN_ONCE:
                self.set_args(xp, op_, n, vector_ok, lead, None)
                graph = self.capture(grid, smem)
                if graph is not None:  # None: graphs are off for this entry
                    self.graphs[key] = graph
            if graph is not None:
                _graph_launch(graph.graphExec, stream_ptr)
                return
        self.launch_at(xp, op_, n, vector_ok, lead, None, grid, smem, stream_ptr)

    def capture(self, grid, smem):
        """A CUDA graph of one launch with the argument block as it is (captured on a stream
        of the device's own), or None where CUDA refuses: graphs then stay off for the entry."""
        dev_id = _current_device()
        try:
            with _CAPTURE_LOCK:
                stream = _CAPTURE_STREAMS.get(dev_id)
                if stream is None:
                    stream = _CAPTURE_STREAMS[dev_id] = _cp.cuda.Stream(non_blocking=True)
                stream.begin_capture()  # relaxed: other threads' calls cannot spoil it
                try:
                    self.launch(self.kernel_ptr, grid, 1, 1, self.plan.threads, 1, 1, smem, stream.ptr,
                                self.args.ptr, 0)
                finally:
                    graph = stream.end_capture()
            return graph
        except Exception:  # noqa: BLE001 - a driver or CuPy without what graphs need
            self.graphs = None
            return None

    def set_seed(self, seed_k) -> None:
        """The seed argument: ``seed_k`` (a NumPy scalar of the kernel's accumulator), or None."""
        if seed_k is None:
            if self.seeded:
                self.seed.raw = self.plan.identity_k.tobytes()
                self.has_seed.value, self.seeded = 0, False
            return
        self.seed.raw = seed_k.tobytes()
        self.has_seed.value, self.seeded = 1, True


def _seed_scalar(plan, seed, types: ScanTypes):
    """A one-column seed (host array or scalar in ``types.acc``; None stays None) as the kernel's
    accumulator scalar."""
    if seed is None:
        return None
    return plan.kacc.type(np.asarray(seed, dtype=types.acc).reshape(-1)[0])


def _fast_entry(key, dev_id, stream_ptr, x_dtype, op, types, exclusive, algorithm, large):
    """The :class:`_FastEntry` of a new kind of call (remembered under ``key``), or _NOT_FAST."""
    launch = getattr(_cp.cuda.driver, "launchKernel", None)
    plan = _plan(dev_id, x_dtype, types, op, algorithm)
    if large:
        plan = _large_plan(plan)
    if launch is None or plan.device == "hierarchical" or zero_absorbs(op, types.acc):
        ent = _NOT_FAST
    else:
        kernel = plan.funcs["scan_excl" if exclusive else "scan_incl"]
        rt = types.result.type if np.dtype(types.result.type) == types.result else types.result
        dependent = (DependentLaunch(kernel.kernel.ptr, plan.threads) if _dependent_launch_available()
                     and _capture_status is not None and _device_info(dev_id)["cc"] >= 90 else None)
        ent = _FastEntry(plan, _scratch(dev_id, stream_ptr), kernel.kernel.ptr, launch, rt, dependent)
        ent.first_is_identity = exclusive and _first_is_identity(op, types)
    return _remember(_FAST, key, ent, 4 * _MAX_STREAM_ENTRIES)


def _scan_fast(x, op, types, exclusive, out, algorithm, seed=None):
    """The hot path (see _FAST) for n >= 1 items: ``out``, or the new result when ``out`` is
    None; None when the call must take the general path."""
    cp = _cp
    dev_id = x.data.device_id
    stream_ptr = cp.cuda.get_current_stream().ptr
    if _is_capturing(stream_ptr):
        return None  # a caller's graph records this launch: the general path gives it words of its own
    stream = stream_ptr if stream_ptr != _PER_THREAD_STREAM else _stream_key(stream_ptr)
    n = x.size
    in_size, out_size = x.itemsize, types.result.itemsize
    nbytes = n * out_size
    # "auto": the look-ahead plan (uses_lookahead, inline)
    large = (n * in_size + nbytes >= (LOOKAHEAD_MIN_BYTES_WIDE if in_size >= 8 or out_size >= 8
                                      else LOOKAHEAD_MIN_BYTES) and _LEAD_OVERRIDE is None)
    key = (dev_id, stream, x.dtype, types.acc, types.result, op.functor, exclusive, _TUNING_OVERRIDE,
           _LEAD_OVERRIDE, algorithm, large)
    ent = _FAST.get(key)
    if ent is None:
        ent = _fast_entry(key, dev_id, stream_ptr, x.dtype, op, types, exclusive, algorithm, large)
    if ent is _NOT_FAST:
        return None
    num_tiles, grid, smem, lead, dependent = ent.launch_shape(n)
    seed_k = None if seed is None else _seed_scalar(ent.plan, seed, types)
    scratch = ent.scratch
    small = nbytes <= _SPARE_MAX_BYTES
    with scratch.lock:
        if ent.generation != scratch.generation:
            ent.point_at_scratch()
        if num_tiles > ent.max_tiles:
            return None  # the general path (re)allocates the scratch
        # Without out=, a small result is one its caller let go of (_recycle), else new: its
        # memory the spare or taken now, wrapped in an array after the launch (host
        # bookkeeping that need not delay the kernel).
        mem = None
        if out is None:
            out = scratch.results.take(x.shape, ent.result_dtype) if small else None
            if out is None:
                spare, scratch.spare = scratch.spare, None
                mem = spare[1] if spare is not None and spare[0] == nbytes else cp.cuda.alloc(nbytes)
        xp, op_ = x.data.ptr, (out.data.ptr if mem is None else mem.ptr)
        if dependent:
            ent.launch_dependent(xp, op_, n, (xp | op_) & 15 == 0, lead, seed_k, grid, smem, stream_ptr)
        elif seed_k is None and ent.graphs is not None:
            ent.launch_graphed(xp, op_, n, (xp | op_) & 15 == 0, lead, grid, smem, stream_ptr)
        else:
            ent.launch_at(xp, op_, n, (xp | op_) & 15 == 0, lead, seed_k, grid, smem, stream_ptr)
        if ent.first_is_identity and seed_k is None:
            _memset_async(op_, 0, out_size, stream_ptr)  # see _first_is_identity
        if mem is None:
            return out
        result = cp.ndarray(x.shape, ent.result_type, mem)  # the shape it was given; memptr positional is cheaper
        if small:
            scratch.results.keep(result)
            try:
                scratch.spare = (nbytes, cp.cuda.alloc(nbytes))
            except Exception:  # noqa: BLE001 - out of memory (any allocator's error): the kernel
                pass           # is queued and its result stands; the next call allocates first
    return result


def lean_arrays(x, out, types: ScanTypes) -> bool:
    """Whether ``x`` is a contiguous 1-D CuPy array on the current device and ``out`` None or a
    contiguous CuPy array of its shape, device and ``types.result`` that does not overlap it: the
    calls :func:`fast_scan` and the distributed lean path (``ScanPlan.call_1d``) take.  The
    overlap test compares bounds (cheaper than ``cupy.may_share_memory``, and as safe)."""
    if type(x) is not _cp.ndarray or x.ndim != 1 or not x._c_contiguous:
        return False
    dev_id = x.data.device_id
    if dev_id != _current_device():
        return False  # the API makes its device current, then takes the general path
    if out is None:
        return True
    if (type(out) is not _cp.ndarray or out.shape != x.shape or out.dtype != types.result or not out._c_contiguous
            or out.data.device_id != dev_id):
        return False
    xp, op_ = x.data.ptr, out.data.ptr
    return not (xp < op_ + out.nbytes and op_ < xp + x.nbytes)


def scan_lean(x, op: Op, types: ScanTypes, exclusive: bool, out, seed=None):
    """``scan(x, ..., seed=seed, out=out)[0]`` for arrays :func:`lean_arrays` accepted, without
    checking them again."""
    if x.size:
        r = _scan_fast(x, op, types, exclusive, out, "auto", seed)
        if r is not None:
            return r
    result = scan(x, op, types, exclusive=exclusive, seed=seed, out=out)[0]
    return result if out is None else out


def fast_scan(x, op: Op, types: ScanTypes, exclusive: bool, out):
    """The API's single-rank hot path (the module docstring of :mod:`distscan.backends`):
    ``scan(x, ...)[0]`` for the arrays of :func:`lean_arrays`; None for any other call."""
    if not lean_arrays(x, out, types):
        return None
    return scan_lean(x, op, types, exclusive, out)


def scan(x, op: Op, types: ScanTypes, *, exclusive=False, seed=None, out=None, want_total=False, algorithm="auto"):
    if (not want_total and _cp is not None
            and type(x) is _cp.ndarray and x._c_contiguous
            and x.size > 0 and (x.ndim == 1 or (x.ndim == 2 and x.shape[1] == 1))
            and (out is None or (type(out) is _cp.ndarray and out._c_contiguous and out.shape == x.shape
                                 and out.dtype == types.result))):
        r = _scan_fast(x, op, types, exclusive, out, algorithm, seed)
        if r is not None:
            return r, None
    cp = _require_cupy()
    if out is not None and (out.dtype != types.result or out.size != x.size):  # the kernels would write past it
        raise TypeError(f"out must hold {x.size} items of {types.result}, not {out.size} of {out.dtype}")
    if zero_absorbs(op, types.acc) and types.result != types.acc:
        # float16 products: fix the zeros where the accumulator's values are (a float16 result
        # overflows to inf where the float32 running product is still finite), then round.
        wide, total = scan(x, op, ScanTypes(types.input, types.acc, types.acc), exclusive=exclusive, seed=seed,
                           want_total=want_total, algorithm=algorithm)
        if out is None:
            return wide.astype(types.result), total
        out[...] = wide
        return out, total
    if x.ndim == 1:  # one column; the result keeps the caller's 1-D shape
        rows, total = scan(x.reshape(-1, 1), op, types, exclusive=exclusive, seed=seed,
                           out=None if out is None else out.reshape(-1, 1), want_total=want_total, algorithm=algorithm)
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
            total = seed.copy() if seed is not None else _identity(op, types, w)
        if result is not None and result is not out:
            result[...] = out
            out = result
        return out, total

    stream_ptr = cp.cuda.get_current_stream().ptr
    if want_total or zero_absorbs(op, types.acc) or (seed is not None and w > _NARROW_COLUMNS):
        # a total, the repair of products' zeros and a row of seeds all pass through the host
        _refuse_in_capture(stream_ptr, "a scan that returns its total, a float product, or a seeded scan of "
                                       f"more than {_NARROW_COLUMNS} columns")
    plan = _plan(dev_id, x.dtype, types, op, algorithm)
    d_total = None
    if w == 1:
        seed_k = plan.kacc.type(seed[0]) if seed is not None else plan.kacc.type(op.neutral(types.acc))
        if want_total:
            d_total = cp.empty(1, dtype=plan.kacc)
        _scan_1d(plan, x, out, n, exclusive, seed_k, seed is not None, d_total if want_total else np.uint64(0),
                 dev_id, stream_ptr, op)
    elif w <= _NARROW_COLUMNS:
        xt = cp.ascontiguousarray(x.T)
        ot = cp.empty((w, n), dtype=types.result)
        d_total = cp.empty(w, dtype=plan.kacc)
        for c in range(w):
            seed_k = plan.kacc.type(seed[c]) if seed is not None else plan.kacc.type(op.neutral(types.acc))
            _scan_1d(plan, xt[c], ot[c], n, exclusive, seed_k, seed is not None, d_total[c:], dev_id, stream_ptr, op)
        out[...] = ot.T
    else:
        d_total = cp.empty(w, dtype=plan.kacc)
        d_seeds = cp.asarray(seed.astype(plan.kacc)) if seed is not None else d_total  # unread when no seed
        fn = plan.funcs["columns_excl" if exclusive else "columns_incl"]
        fn((-(-w // 256),), (256,), (x, out, np.int64(n), np.int64(w), d_seeds, np.int32(seed is not None), d_total))
    absorbed = None
    if zero_absorbs(op, types.acc):
        absorbed = absorb_zeros(cp, x, out, seed, exclusive)
    if exclusive and seed is None and _first_is_identity(op, types):
        out[0] = 0  # the identity, +0.0 (see _first_is_identity)
    if result is not None and result is not out:
        result[...] = out
        out = result
    total = None
    if want_total:
        total = d_total.get().astype(types.acc)
        if absorbed is not None and absorbed.any():
            last = out[-1].astype(types.acc)
            if exclusive:
                last = last * x[-1].astype(types.acc)  # one sequential step: no tile grouping
            total = np.where(absorbed, last.get(), total).astype(types.acc)
    return out, total


def array_module():
    """The array module of this backend's arrays."""
    return _require_cupy()


def _reduce_grid(n: int, in_size: int, max_grid: int) -> int:
    """Blocks of reduce_partials_kernel for n items (the partials' count, so the association):
    one four-vector round per thread at least, at most ``max_grid``."""
    return int(max(1, min(max_grid, -(-n // (256 * max(1, 16 // in_size) * 4)))))


def _reduce_max_grid(plan: _Plan, dev_id: int) -> int:
    """The most blocks of the plan's reduce_partials_kernel: every SM full (as many loads in
    flight as the GPU holds).  The cap of 4 blocks of 256 per SM read 3.7 (float32) and 3.9
    (int64) TB/s on the H200 at 2^29, under the 4.2 of a copy (benchmarks/RESULTS.md)."""
    if plan.reduce_grid is None:
        sms = _device_info(dev_id)["sms"]
        plan.reduce_grid = _persistent_grid(plan.funcs["reduce_partials"], 256, 0, sms, 4) or 4 * sms
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
        cp = _cp
        self.plan, self.launch = plan, launch
        self.lock = threading.Lock()
        self.max_grid = _reduce_max_grid(plan, dev_id)
        self.partials = cp.empty(self.max_grid, plan.kacc)
        self.result = cp.empty(1, plan.kacc)
        self.host = np.frombuffer(cp.cuda.alloc_pinned_memory(plan.kacc.itemsize), plan.kacc, 1)
        self.partials_ptr = plan.funcs["reduce_partials"].kernel.ptr
        self.final_ptr = plan.funcs["reduce_final"].kernel.ptr
        c = ctypes
        self.partials_args = _ArgBlock(c.c_uint64, c.c_int64, c.c_uint64, c.c_int32)
        self.final_args = _ArgBlock(c.c_uint64, c.c_int32, c.c_uint64)

    def run(self, col, n: int, stream_ptr: int) -> np.ndarray:
        grid = _reduce_grid(n, self.plan.in_size, self.max_grid)
        ptr, part, res = col.data.ptr, self.partials.data.ptr, self.result.data.ptr
        rt = _cp.cuda.runtime
        with self.lock:
            self.launch(self.partials_ptr, grid, 1, 1, 256, 1, 1, 0, stream_ptr,
                        self.partials_args.set(ptr, n, part, int(ptr % 16 == 0)), 0)
            self.launch(self.final_ptr, 1, 1, 1, 256, 1, 1, 0, stream_ptr, self.final_args.set(part, grid, res), 0)
            rt.memcpyAsync(self.host.ctypes.data, res, self.host.nbytes, rt.memcpyDeviceToHost, stream_ptr)
            rt.streamSynchronize(stream_ptr)
            return self.host.copy()


_REDUCE: dict = {}


def _reduce_1d(col, op: Op, types: ScanTypes):
    """The reduction of a contiguous one-column CuPy array of n >= 1 items, as ``(1,)`` in the
    kernel's accumulator: two launches and one copy of a word into page-locked memory.  None
    for a CuPy without ``driver.launchKernel`` (the general path then launches through CuPy)."""
    cp = _cp
    dev_id = col.data.device_id
    stream_ptr = cp.cuda.get_current_stream().ptr
    key = (dev_id, _stream_key(stream_ptr), col.dtype, types.acc, types.result, op.functor, _TUNING_OVERRIDE)
    ent = _REDUCE.get(key)
    if ent is None:
        launch = getattr(cp.cuda.driver, "launchKernel", None)
        ent = _NOT_FAST if launch is None else _ReduceEntry(_plan(dev_id, col.dtype, types, op), dev_id, launch)
        _remember(_REDUCE, key, ent, 4 * _MAX_STREAM_ENTRIES)
    if ent is _NOT_FAST:
        return None
    return ent.run(col, col.size, stream_ptr)


def reduce(x, op: Op, types: ScanTypes) -> np.ndarray:
    cp = _require_cupy()
    if x.ndim == 1:
        x = x.reshape(-1, 1)
    n, w = x.shape
    if n == 0 or w == 0:
        return _identity(op, types, w)
    _refuse_in_capture(cp.cuda.get_current_stream().ptr, "a reduction (and so a scan across ranks)")
    if w == 1 and x._c_contiguous:
        total = _reduce_1d(x.reshape(-1), op, types)
        if total is not None:
            return total.astype(types.acc)
    if not x.flags.c_contiguous:
        x = cp.ascontiguousarray(x)
    dev_id = x.device.id
    plan = _plan(dev_id, x.dtype, types, op)
    cols = cp.ascontiguousarray(x.T)
    d_res = cp.empty(w, dtype=plan.kacc)
    grid = _reduce_grid(n, plan.in_size, _reduce_max_grid(plan, dev_id))
    partials = cp.empty(grid, dtype=plan.kacc)  # the launches are ordered on the stream: one buffer serves all
    for c in range(w):
        _launch_reduce(plan, cols[c], n, partials, d_res[c:], grid)
    return d_res.get().astype(types.acc)


def combine(y, op: Op, types: ScanTypes, offset) -> None:
    cp = _require_cupy()
    if y.ndim == 1:
        y = y.reshape(-1, 1)
    n, w = y.shape
    if n == 0 or w == 0:
        return
    if not y.flags.c_contiguous:
        raise ValueError("combine needs a C-contiguous array (it works in place)")
    dev_id = y.device.id
    plan = _add_plan(dev_id, types, op)
    offset = np.asarray(offset, dtype=types.acc).reshape(w)
    sms = _device_info(dev_id)["sms"]
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


def synchronize() -> None:
    """Wait for the work queued on the current CuPy stream (used by the API's timings)."""
    _require_cupy().cuda.get_current_stream().synchronize()


# --------------------------------------------------------------------------------------
# test surface
# --------------------------------------------------------------------------------------
def clear_caches() -> None:
    """Forget every plan, hot-path entry, reduction entry and stream scratch (after the work queued
    on their devices is done), as a new process would start.  Scratches of launches recorded into
    callers' graphs stay (_CAPTURED): those graphs may still be replayed."""
    if _cp is None:
        return
    devices = {key[0] for key in list(_SCRATCH) + list(_FAST) + list(_REDUCE)}
    for dev_id in devices:
        with _cp.cuda.Device(dev_id):
            _cp.cuda.runtime.deviceSynchronize()
    for cache in (_FAST, _SCRATCH, _REDUCE, _PLANS, _ADD_PLANS, _CAPTURE_STREAMS, _SIDE_STREAMS):
        cache.clear()
    _HOLDERS.clear()


def stats() -> dict:
    """What the caches hold now: counts by kind (tests and benchmarks read them)."""
    entries = [e for e in _FAST.values() if e is not _NOT_FAST]
    return {"plans": len(_PLANS), "hot-path entries": len(entries), "reductions": len(_REDUCE),
            "stream scratches": len(_SCRATCH), "captured scratches": len(_CAPTURED),
            "graphs": sum(1 for e in entries for g in (e.graphs or {}).values() if g is not _SEEN_ONCE),
            "kept results": sum(len(s.results.arrays) for s in _SCRATCH.values())}
