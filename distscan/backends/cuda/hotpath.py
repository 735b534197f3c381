"""The hot path of a scan (see FAST): one dictionary lookup for plan, scratch and kernel, and a
launch through cuLaunchKernel with a ctypes argument block kept per entry, or the replay of a
CUDA graph of the same call, or a programmatic dependent launch."""

from __future__ import annotations

import ctypes
import threading

import numpy as np

from ..._carry import zero_absorbs
from ..._dtypes import ScanTypes
from .dependent import DependentLaunch, available as dependent_available
from .device import cp, current_device, device_info, graphs_available, remember, stream_capture_status
from .device import runtime_function
from .device import PER_THREAD_STREAM, stream_key
from .launch import ArgBlock, first_row, launch_shape, write_first_row
from .plans import LOOKAHEAD_MIN_BYTES, LOOKAHEAD_MIN_BYTES_WIDE, large_plan, plan_of
from .scratch import scratch_of
from .settings import SETTINGS

# Hot path of scan() for the common call (1-D or (n, 1) contiguous input, contiguous `out`
# of the same shape or none, no total): one dict lookup for plan, scratch and kernel, and a
# launch through cuLaunchKernel with a ctypes argument block kept per entry (only the changing
# fields are rewritten: the scratch pointers only after the scratch was reallocated),
# bypassing CuPy's per-argument packing, or the replay of a CUDA graph of the same call.  At
# 2^16 items the call is host-bound (8 us through the API on the H200's host, 4-5 of them the
# launch): each attribute lookup and Python call here shows, so the sizes' launch shapes and
# the scratch's capacity are kept per entry.
FAST: dict = {}
# A FAST (or REDUCTIONS) value for calls the hot path does not take (several kernels, flagged
# product carries, a CuPy without driver.launchKernel): they go the general way.
NOT_FAST = object()
# Launch shapes each entry keeps (sizes a loop of calls repeats).
_MAX_SHAPES = 64
# CUDA graphs of repeated calls: a one-kernel graph replayed costs the host half a
# cuLaunchKernel (H100 host: 2.32 against 4.88 us, benchmarks/probe_pdl_graph.py).
# With the epoch and the tile ids on the device, an unseeded call's arguments are fixed by
# (x, out, n) and the scratch, so an entry makes a graph of a call it sees the second time
# (CuPy's pool and the result ring make loops repeat their pointers) and replays it after.
# At most this many per entry (all dropped when full, and when the scratch is reallocated).
_GRAPHS_PER_ENTRY = 16
SEEN_ONCE = object()  # a FastEntry.graphs value: no graph yet
_CAPTURE_STREAMS: dict = {}  # device -> the stream graphs are captured on (a graph runs on any stream)
_CAPTURE_LOCK = threading.Lock()


_graph_launch = runtime_function("graphLaunch")


class FastEntry:
    """One kind of hot-path call (device, stream, dtypes, operator, direction, overrides):
    scan_tiles_kernel's 12 arguments as an :class:`ArgBlock`, the plan, scratch and kernel
    handle, the launch shapes of the sizes seen, and the graphs of repeated calls."""

    def __init__(self, plan, scratch, kernel_ptr, launch, result_type, dependent=None):
        c = ctypes
        self.plan, self.scratch, self.launch = plan, scratch, launch
        self.dependent = dependent  # a DependentLaunch of the kernel, or None (before sm_90)
        self.result_type = result_type  # what cupy.ndarray takes fastest for the result dtype
        # the dtype object CuPy keeps in the results (the ring compares dtypes by identity)
        self.result_dtype = cp.ndarray((0,), result_type).dtype
        self.kernel_ptr = kernel_ptr  # the module stays loaded: plan.funcs holds the kernel
        self.first_row = None  # set by _fast_entry: launch.first_row
        self.args = ArgBlock(c.c_uint64, c.c_uint64, c.c_int64, c.c_uint64, c.c_uint64, c.c_uint64, c.c_uint64,
                              plan.kacc.itemsize, c.c_int32, c.c_uint64, c.c_int32, c.c_int64)
        (self.x, self.out, self.n, self.words, self.subaggs, self.anchors, self.state, self.seed, self.has_seed,
         self.total, self.vec, self.lead) = self.args.values
        self.seed.raw = plan.identity_k.tobytes()
        self.seeded = False  # whether the block holds a seed (rewritten to the identity when not)
        self.generation = -1  # of the scratch whose pointers are in the block (none yet)
        self.max_tiles = -1  # the most tiles that scratch holds for this plan
        self.shapes = {}  # n -> (num_tiles, grid, smem, lead, dependent)
        self.dependent_min_bytes = SETTINGS.dependent_min_bytes  # what the shapes were made with
        # (x ptr, out ptr, n) -> SEEN_ONCE or the call's graph; None: no graphs (a CuPy without
        # the runtime calls, or a driver that refused a capture)
        self.graphs = {} if _graph_launch is not None and graphs_available() else None

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
        """``(num_tiles,) + launch_shape(plan, n) + (dependent,)``, kept for the last sizes;
        ``dependent``: whether n items are launched as a programmatic dependent."""
        shape = self.shapes.get(n)
        if shape is None:
            if len(self.shapes) >= _MAX_SHAPES:
                self.shapes.clear()
            plan = self.plan
            dependent = self.dependent is not None and n * (plan.in_size + plan.out_size) >= self.dependent_min_bytes
            shape = self.shapes[n] = (-(-n // plan.tile),) + launch_shape(plan, n) + (dependent,)
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
            self.graphs[key] = SEEN_ONCE
        else:
            if graph is SEEN_ONCE:
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
        dev_id = current_device()
        try:
            with _CAPTURE_LOCK:
                stream = _CAPTURE_STREAMS.get(dev_id)
                if stream is None:
                    stream = _CAPTURE_STREAMS[dev_id] = cp.cuda.Stream(non_blocking=True)
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
    """The :class:`FastEntry` of a new kind of call (remembered under ``key``), or NOT_FAST."""
    launch = getattr(cp.cuda.driver, "launchKernel", None)
    plan = plan_of(dev_id, x_dtype, types, op, algorithm)
    if large:
        plan = large_plan(plan)
    if launch is None or plan.device == "hierarchical" or zero_absorbs(op, types.acc):
        ent = NOT_FAST
    else:
        kernel = plan.funcs["scan_excl" if exclusive else "scan_incl"]
        rt = types.result.type if np.dtype(types.result.type) == types.result else types.result
        dependent = (DependentLaunch(kernel.kernel.ptr, plan.threads) if dependent_available()
                     and graphs_available() and device_info(dev_id)["cc"] >= 90 else None)
        ent = FastEntry(plan, scratch_of(dev_id, stream_ptr), kernel.kernel.ptr, launch, rt, dependent)
        ent.first_row = first_row(op, types) if exclusive else None
    return remember(FAST, key, ent, 4 * SETTINGS.max_stream_entries)


def scan_fast(x, op, types, exclusive, out, algorithm, seed=None):
    """The hot path (see FAST) for n >= 1 items: ``out``, or the new result when ``out`` is
    None; None when the call must take the general path."""
    dev_id = x.data.device_id
    stream_ptr = cp.cuda.get_current_stream().ptr
    # is_capturing(stream_ptr), inline (each Python call shows in a small call's host time): a
    # caller's graph records this launch, and the general path gives it words of its own
    if stream_capture_status is not None:
        try:
            if stream_capture_status(stream_ptr) != 0:
                return None
        except Exception:  # noqa: BLE001 - e.g. the legacy stream while another stream captures
            return None
    stream = stream_ptr if stream_ptr != PER_THREAD_STREAM else stream_key(stream_ptr)
    n = x.size
    in_size, out_size = x.itemsize, types.result.itemsize
    nbytes = n * out_size
    # "auto": the look-ahead plan (uses_lookahead, inline)
    large = (n * in_size + nbytes >= (LOOKAHEAD_MIN_BYTES_WIDE if in_size >= 8 or out_size >= 8
                                      else LOOKAHEAD_MIN_BYTES) and SETTINGS.lead is None)
    key = (dev_id, stream, x.dtype, types.acc, types.result, op.functor, exclusive, SETTINGS.tuning,
           SETTINGS.lead, algorithm, large)
    ent = FAST.get(key)
    if ent is None:
        ent = _fast_entry(key, dev_id, stream_ptr, x.dtype, op, types, exclusive, algorithm, large)
    if ent is NOT_FAST:
        return None
    num_tiles, grid, smem, lead, dependent = ent.launch_shape(n)
    seed_k = None if seed is None else _seed_scalar(ent.plan, seed, types)
    scratch = ent.scratch
    small = nbytes <= SETTINGS.spare_max_bytes
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
        if ent.first_row is not None and seed_k is None:
            write_first_row(op_, ent.first_row, 1, stream_ptr)  # see launch.first_is_identity
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


def forget() -> None:
    """Forget every hot-path entry and the streams graphs are captured on."""
    FAST.clear()
    _CAPTURE_STREAMS.clear()


def settings_changed() -> None:
    """Drop what entries derived from the settings (the launch shapes keep whether a size is a
    dependent launch): :func:`distscan.backends.cuda.overrides` calls it.  It walks a snapshot of
    the entries: a call on another thread may publish one meanwhile (iterating the dict itself
    then raised "dictionary changed size during iteration")."""
    for ent in list(FAST.values()):  # list() copies under the GIL, in one C loop
        if ent is not NOT_FAST:
            ent.dependent_min_bytes = SETTINGS.dependent_min_bytes
            ent.shapes.clear()
