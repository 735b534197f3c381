"""What every file pipeline shares: the job as the command line describes it, the context a
pipeline runs in (header, operator, dtypes, writer, times), the output's default name, phases
that agree on their failures, and sizes and memory budgets given as text or by the machine."""

from __future__ import annotations

import os
import re
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from .. import io as _io
from .._dtypes import ScanTypes
from ..dist.agree import agree
from ..gpus import local_rank_from_env
from ..ops import Op, get_op
from .progress import NullProgress

# Output names for the common operators; others are "scan-<op>".
_OUTPUT_WORDS = {"sum": "cumsum", "prod": "cumprod", "max": "cummax", "min": "cummin"}


def default_output(input_path: str, op, exclusive: bool = False, *, reverse: bool = False,
                   segmented: bool = False, compensated: bool = False, recurrence: bool = False) -> str:
    """The output name beside the input: ``data.npy`` -> ``data.cumsum.npy``.

    ``data.exclusive-cumsum.npy`` for exclusive scans; ``data.scan-bitwise_xor.npy``
    (``data.exclusive-scan-bitwise_xor.npy``) for operators without a NumPy ``cum*`` name;
    ``reverse-``, ``segmented-`` and ``compensated-`` before the word for those scans, in that
    order (``data.reverse-segmented-cumsum.npy``); ``B.recurrence.npy`` for a recurrence of ``B``.
    """
    name = get_op(op).name
    word = "recurrence" if recurrence else _OUTPUT_WORDS.get(name, f"scan-{name}")
    for flag, prefix in ((compensated, "compensated"), (segmented, "segmented"), (exclusive, "exclusive"),
                         (reverse, "reverse")):
        if flag:
            word = f"{prefix}-{word}"
    stem = input_path[:-4] if input_path.lower().endswith(".npy") else input_path
    return f"{stem}.{word}.npy"


@dataclass
class Job:
    """One file scan, as the command line describes it."""

    input: str
    output: str
    op: str = "sum"
    exclusive: bool = False
    dtype: Optional[str] = None
    backend: str = "auto"
    strategy: str = "auto"
    hierarchy: str = "auto"
    algorithm: str = "auto"                 # --algorithm: a name of distscan.ALGORITHMS
    force: bool = False
    verify: bool = False
    gpu: Optional[str] = None               # --gpu: device index (default: by local rank)
    gpu_memory_limit: Optional[str] = None  # --gpu-memory-limit: e.g. "64M" (default: two chunk slots)
    memory_limit: Optional[str] = None      # --memory-limit: host memory a rank may hold (default: a share)
    fsync: bool = False                     # --fsync: the output durable before the rename
    reverse: bool = False                   # --reverse: suffix scans, the last rank's rows first
    segments: Optional[str] = None          # --segments FLAGS.npy: one flag per row, True starts a segment
    compensated: bool = False               # --compensated: float sums carried as (sum, error)
    coefficients: Optional[str] = None      # recurrence A.npy B.npy: y[i] = a[i] * y[i-1] + b[i], A here
    initial: Optional[complex] = None       # recurrence --initial: y[-1] (a float, or complex)


@dataclass
class Context:
    """What a pipeline gets: the resolved job and a place for its times.

    ``progress(label, total_bytes)`` returns an object with ``update(n)`` and
    ``done()`` (a bar on rank 0's terminal, silent elsewhere).
    """

    comm: object
    header: _io.NpyHeader
    op: Op
    types: ScanTypes
    start: int
    stop: int
    writer: Optional[_io.NpyWriter] = None
    progress: Callable = None
    times: dict = field(default_factory=dict)
    scan_timings: dict = field(default_factory=dict)
    backend_used: str = "cpu"
    backend_why: str = ""                       # why this backend (auto: what this rank saw)
    verify_summary: Optional[dict] = None
    gpu: Optional[dict] = None
    spans: dict = field(default_factory=dict)   # phase -> (start, end) seconds from t_start
    t_start: Optional[float] = None
    host: Optional[dict] = None                 # the chunked pipeline's mode and sizes
    aux_headers: tuple = (None, None)           # the headers of the segment flags and coefficients
    dtype: Optional[object] = None              # the plans' dtype=: the job's, or a recurrence's a*b+b type

    @property
    def rank(self) -> int:
        return 0 if self.comm is None else self.comm.Get_rank()

    @property
    def size(self) -> int:
        return 1 if self.comm is None else self.comm.Get_size()


@contextmanager
def phase(ctx: Context, name: str):
    """Time a phase (max over ranks is taken at the end) and agree on its failure."""
    error = None
    t0 = time.perf_counter()
    try:
        yield
    except Exception as exc:  # noqa: BLE001 - agreed on every rank
        error = exc
    ctx.times[name] = ctx.times.get(name, 0.0) + time.perf_counter() - t0
    agree(ctx.comm, error)


def null_progress(label, total):
    return NullProgress(total, label)


_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?)\s*([kmgt]?)(i?b?)\s*$", re.IGNORECASE)


def parse_bytes(text) -> int:
    """``"512M"``, ``"2G"``, ``"1.5GiB"``, ``"1000000"`` -> bytes (K/M/G/T are powers of 1024).

    Raises
    ------
    ValueError
        For anything else, or a size below one byte.
    """
    if isinstance(text, (int, np.integer)):
        value = int(text)
    else:
        m = _SIZE.match(str(text))
        if not m:
            raise ValueError(f"bad size {text!r}: use bytes or a number with K, M, G or T (e.g. 512M, 2G)")
        value = int(float(m.group(1)) * (1 << (10 * " KMGT".index(m.group(2).upper() or " "))))
    if value < 1:
        raise ValueError(f"size must be at least 1 byte, got {text!r}")
    return value


#: Share of the available memory (MemAvailable, split between the ranks of a node) a rank may hold.
HOST_MEMORY_SHARE = 0.5


def host_budget(limit=None, env=None) -> int:
    """Bytes of host memory this rank may hold: ``limit`` (e.g. ``"4G"``), else a share of
    MemAvailable split between the ranks on this node (launcher variables)."""
    if limit:
        return parse_bytes(limit)
    avail = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
                    break
    except OSError:
        pass
    if avail is None:
        try:
            avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            avail = 8 << 30
    local = local_rank_from_env(os.environ if env is None else env)
    ranks = local[1] if local is not None else 1
    return int(avail * HOST_MEMORY_SHARE / max(ranks, 1))
