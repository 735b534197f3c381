"""The status words and launch state that scans on one (device, stream) share
(``kernels/tile/tile_state.cuh``), and the scratches of launches recorded into callers' graphs."""

from __future__ import annotations

import threading
from contextlib import nullcontext

import numpy as np

from .device import cp, is_capturing, remember, side_stream, stream_key
from .recycle import ResultRing, memory_holders_check

SCRATCHES: dict = {}  # (device, stream key) -> TileScratch
# kernels/tile/tile_state.cuh, LaunchWord: the launch state's length, and where the three
# status-word arrays' sizes go.
_LAUNCH_WORDS, _LAUNCH_SIZES = 8, 3


def scratch_of(dev_id: int, stream_ptr: int) -> TileScratch:
    key = (dev_id, stream_key(stream_ptr))
    s = SCRATCHES.get(key)
    if s is None:
        s = remember(SCRATCHES, key, TileScratch())
    return s


class TileScratch:
    """Tile status words, the launch state (``kernels/tile/tile_state.cuh``, LaunchWord: the epoch
    and the tile counter), the spare result memory (``SETTINGS.spare_max_bytes``) and the small
    results handed out of one (device, stream).

    Status words carry the epoch of the launch that wrote them, so no clearing pass is needed
    between launches: each claim of a tile id returns the launch's epoch from the launch state,
    and the launch's last claim moves it on (the launch with the last epoch zeroes the words).  The host zeroes the words
    only when it (re)allocates them.  Only launches on this stream use this scratch, so they
    are ordered.  A launch recorded into a caller's graph takes a scratch of its own instead
    (:func:`captured_scratch`): a graph may be replayed on any stream, at any time.
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
        # its launch (see SETTINGS.spare_max_bytes); None when there is none.
        self.spare = None
        self.results = ResultRing(holders=_result_holders())  # small results handed out, for reuse once dropped
        self.stage = None  # SeedStage: the extended scans' seeds on their way to the device, made at the first

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
        capturing = is_capturing(cp.cuda.get_current_stream().ptr)
        with (side_stream() if capturing else nullcontext()) as side:
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

    def to_device(self, data: np.ndarray, stream_ptr: int):
        """``data``'s bytes (a small host row: a seed, a projected initial value) in new device
        memory, copied on the stream (:class:`SeedStage`); hold the scratch's lock."""
        if self.stage is None:
            self.stage = SeedStage()
        return self.stage.to_device(data, stream_ptr)

    def capacity(self, window: int, k: int) -> int:
        """The most tiles one launch of a plan with this window and ``k`` words per status may
        take without :meth:`prepare` reallocating (-1 before the first prepare)."""
        if self.words is None:
            return -1
        return min(self.words.size // k, 32 * (self.subaggs.size // k) - 1, window * (self.anchors.size // k) - 1)


class SeedStage:
    """Small host rows (the seeds and projected initial values of the extended scans) copied to new
    device memory on a stream, through page-locked slots of its own.

    ``cupy.asarray`` of such a row took 18-78 us of host time (its page-locked pool and a new event
    a call; H200, benchmarks/probe_seeded_scan.py, 2026-11-26), the whole seeded scan's surplus on
    the last of two ranks.  Here a copy is a slot write, ``cudaMemcpyAsync`` and an event record.

    Assumptions.  A slot is written only after the copy that last read it has finished (its event;
    with :data:`SLOTS` slots the host waits only when that many copies are still queued behind the
    stream's earlier work), so a queued copy never reads bytes of a later call.  The device memory
    is new for each call (the memory pool's, returned when the caller drops it after its launch),
    so a launch queued earlier, on this stream or on a stream that had this one's handle before,
    never sees it change.  Held under the scratch's lock (threads sharing a stream)."""

    SLOTS, SLOT_BYTES = 8, 1024

    def __init__(self):
        self._memory = cp.cuda.alloc_pinned_memory(self.SLOTS * self.SLOT_BYTES)  # held: the slots' pages
        self.host = np.frombuffer(self._memory, np.uint8, self.SLOTS * self.SLOT_BYTES)
        self.events = [None] * self.SLOTS
        self.next = 0

    def to_device(self, data: np.ndarray, stream_ptr: int):
        """A ``cupy.cuda.MemoryPointer`` to a device copy of ``data``'s bytes, queued on the stream
        (larger rows than a slot: ``cupy.asarray``'s own way)."""
        raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        nbytes = raw.size
        if nbytes > self.SLOT_BYTES:
            return cp.asarray(raw).data
        slot = self.next
        event = self.events[slot]
        if event is not None:
            event.synchronize()  # the copy that read this slot last has read it
        begin = slot * self.SLOT_BYTES
        self.host[begin:begin + nbytes] = raw
        device = cp.cuda.alloc(max(nbytes, 1))
        rt = cp.cuda.runtime
        rt.memcpyAsync(device.ptr, self.host.ctypes.data + begin, nbytes, rt.memcpyHostToDevice, stream_ptr)
        if event is None:
            event = self.events[slot] = cp.cuda.Event(disable_timing=True)
        rt.eventRecord(event.ptr, stream_ptr)
        self.next = (slot + 1) % self.SLOTS
        return device


_HOLDERS: list = []


def _result_holders():
    """The ring's check that nothing but a result array holds its memory (measured once, on an
    array made as the hot path makes its results; None where counts cannot be trusted)."""
    if not _HOLDERS:
        _HOLDERS.append(memory_holders_check(lambda: cp.ndarray((1,), np.int8, cp.cuda.alloc(1))))
    return _HOLDERS[0]


# Scratches of the launches recorded into callers' graphs, kept as long as the process: a graph
# may be replayed at any time on any stream, so the words its launch uses must be its own and
# must outlive it, and nothing tells when a caller's graph is destroyed.  Each is sized for its
# launch (8 bytes a tile per status word: 64 bytes for 2^16 4-byte items, 1 MiB for 2^29).
CAPTURED: list = []


def captured_scratch(num_tiles: int, window: int, k: int) -> TileScratch:
    """A scratch of its own for one launch recorded into a caller's graph (set up outside it)."""
    scratch = TileScratch(exact=True)
    scratch.prepare(num_tiles, window, k)
    CAPTURED.append(scratch)
    return scratch


def forget() -> None:
    """Forget every stream's scratch (callers' graphs keep theirs: CAPTURED)."""
    SCRATCHES.clear()
    _HOLDERS.clear()
