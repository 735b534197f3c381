"""What the CUDA backend may be told to do otherwise: tile shape, reduction lead, thresholds.

One object, :data:`SETTINGS`, read by the modules of the backend on every call; tests and
benchmarks change it only through :func:`distscan.backends.cuda.overrides` (a context manager
that puts the old values back).  Caches keyed on a setting (plans, hot-path entries) keep the
entries of each value apart.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Settings:
    #: (threads, items, window, min_blocks[, stages, depth, behind]) forces a tile shape; None:
    #: the measured choice (tuning.choose_tuning).
    tuning: tuple = None
    #: An int forces the look-back's reduction lead (tiles; 0: none) at every size for
    #: algorithm="auto"; None: the measured rule (plans.lead_of).
    lead: int = None
    #: From this many bytes moved (read plus written) a hot-path launch is a programmatic
    #: dependent of the kernel before it on the stream (dependent.py; compute capability 9.0+):
    #: where the GPU bounds a loop of calls, the launch overlaps the previous kernel's tail
    #: (H100, loops of calls: 2^22 4-byte items 12.1 us per call against 13.2 with graphs;
    #: 2^24 8-byte 94 against 95-96).  Below it the host bounds the loop, and a graph's replay
    #: costs it less (2^20 4-byte items, 8 MB: 6.9 us against 8.1; 2^20 8-byte, 16 MB: 8.8
    #: against 9.3).  benchmarks/RESULTS.md, issue 10.
    dependent_min_bytes: int = 1 << 25
    #: A call without ``out=`` of a result up to this size takes the memory its stream's scratch
    #: set aside after the previous such call's launch, and sets aside the next: the allocation
    #: (1.4 us on the H200 host) then overlaps a kernel instead of delaying the launch.  One
    #: buffer per stream at most, of the last such result's size.  Results up to this size are
    #: also kept for reuse once nothing can reach them (recycle.py; two per stream).
    spare_max_bytes: int = 1 << 22
    #: Caches keyed by stream keep at most this many entries (code that makes a stream per call
    #: would otherwise hold a scratch of >= 512 KB per stream it ever used); the oldest go first.
    #: An evicted scratch's memory returns to CuPy's pool for the stream that allocated it, so
    #: work still queued there is done before the memory is handed out again.
    max_stream_entries: int = 64


SETTINGS = Settings()
