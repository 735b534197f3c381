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


def keep_for_capture(array):
    """``array`` (device memory a launch recorded into a caller's graph reads or writes: a
    temporary of its own) kept as long as the process, as CAPTURED keeps the status words: once
    the capture's call returns, the pool would hand its memory to the next allocation on that
    stream, which the graph's replays would then overwrite."""
    CAPTURED.append(array)
    return array


def captured_scratches() -> int:
    """The status words kept for callers' graphs (CAPTURED holds keep_for_capture's arrays too)."""
    return sum(1 for kept in list(CAPTURED) if isinstance(kept, TileScratch))


def forget() -> None:
    """Forget every stream's scratch (callers' graphs keep theirs: CAPTURED)."""
    SCRATCHES.clear()
    _HOLDERS.clear()
