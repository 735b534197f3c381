"""The file pipeline in chunks, shared by every backend: read -> compute -> write, overlapped.

Each rank's rows ``[start, stop)`` flow in chunks:

    positional read (a thread pool, ``os.preadv``)  ->  compute (the engine)  ->  positional write
    (a thread pool, ``os.pwritev`` through :meth:`distscan.io.NpyWriter.write_at`)

with several reads ahead of the compute and several writes in flight, so the writes, the
bottleneck, are never idle.  Only the compute step differs between backends: an *engine*
(:class:`CpuEngine` here, :class:`distscan.pipeline.cuda.GpuEngine` for CUDA) takes a
chunk's input, forms its carry, scans it from a seed, adds an offset, and hands back host
rows to write.  The chunking, the carries, the one exchange and the offsets are here:

*pass A*
    every chunk is read; rank 0, whose offset is the identity, scans each chunk from the
    running total and writes it at once.  The other ranks, when their part fits the memory
    budget (*resident*), keep it: ``scan_then_add`` scans each chunk from the running total
    (the part's carry is its last value), ``reduce_then_scan`` keeps the input and forms each
    chunk's carry (:meth:`ScanPlan.local_carry`, combined with :meth:`ScanPlan.combine`;
    float products need these flagged carries, never the bare last value).  A part that does
    not fit (*streamed*) only forms its carry (the last rank, whose carry nobody reads, skips
    the pass).
*exchange*
    one :meth:`ScanPlan.exchange` of the part's carry gives the offset, and agrees on any
    failure of pass A on every rank.
*pass B* (ranks > 0)
    the offset is applied on the way out: ``add_offset`` on each kept chunk
    (``scan_then_add``), or a scan of each kept (or, streamed, re-read) chunk seeded with the
    offset and then the running total (``reduce_then_scan``), and the chunk is written.

Memory: a resident part is held once (in place where the scan keeps the dtype); otherwise
a bounded ring of chunks.  Times (``ctx.times``): ``read`` and ``write`` are the wall spans
of the reads and of the writes (they overlap everything else), ``scan`` the compute on the
main thread (``compute``), ``exscan`` the exchange (waiting for the other ranks included), ``load`` and
``store`` the walls of pass A and pass B; ``spans`` their start and end from the run's start.
"""

from __future__ import annotations

import collections
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from .. import io as _io
from ..dist.plan import ScanPlan
from .context import phase

#: Bytes of input (or output, the larger) per chunk.
CHUNK_BYTES = 16 << 20

#: Threads reading the input, and chunks read ahead of the compute.
READ_THREADS = 4

READ_AHEAD = 6

#: Threads writing the output; writes in flight when the output is not held (a ring of buffers).
WRITE_THREADS = 8

#: ``DISTSCAN_IO_THREADS=READ,WRITE``: threads per rank for reads and writes instead of the above.
IO_THREADS_ENV = "DISTSCAN_IO_THREADS"


def io_threads(env=None) -> tuple:
    """``(read threads, write threads)`` per rank: ``DISTSCAN_IO_THREADS`` or the defaults.

    Raises
    ------
    ValueError
        For a value that is not two positive integers (the message names the variable).
    """
    value = ((os.environ if env is None else env).get(IO_THREADS_ENV) or "").strip()
    if not value:
        return READ_THREADS, WRITE_THREADS
    parts = value.split(",")
    if len(parts) != 2 or not all(p.strip().isdigit() and 0 < int(p) <= 256 for p in parts):
        raise ValueError(f"{IO_THREADS_ENV} must be READ,WRITE: two thread counts from 1 to 256, got {value!r}")
    return int(parts[0]), int(parts[1])

WRITE_RING = 16


@dataclass
class Layout:
    """This rank's part and how it is cut: rows ``[start, stop)``, ``w`` elements per row."""

    start: int
    n: int
    w: int
    in_dt: np.dtype     # native byte order
    out_dt: np.dtype
    chunk_rows: int

    @property
    def chunks(self) -> list:
        return [(lo, min(self.n, lo + self.chunk_rows)) for lo in range(0, self.n, self.chunk_rows)]


def layout_for(ctx, chunk_bytes: int = 0) -> Layout:
    """This rank's :class:`Layout` in host chunks of about ``chunk_bytes`` (default :data:`CHUNK_BYTES`)."""
    hdr = ctx.header
    w = hdr.row_items
    out_dt = ctx.types.result
    return Layout(start=ctx.start, n=ctx.stop - ctx.start, w=w, in_dt=hdr.dtype.newbyteorder("="), out_dt=out_dt,
                  chunk_rows=chunk_rows_for(hdr.row_bytes, w * out_dt.itemsize, chunk_bytes))


def input_view(hdr, start: int, stop: int):
    """Rows ``[start, stop)`` of the input, mapped (not read): for ``--verify``."""
    shape = (stop - start,) + tuple(hdr.shape[1:])
    if stop == start:
        return np.empty(shape, hdr.dtype.newbyteorder("="))
    return np.memmap(hdr.path, dtype=hdr.dtype, mode="r", offset=hdr.offset + start * hdr.row_bytes, shape=shape)


def chunk_rows_for(in_row_bytes: int, out_row_bytes: int, chunk_bytes: int = 0) -> int:
    return max(1, (chunk_bytes or CHUNK_BYTES) // max(in_row_bytes, out_row_bytes, 1))


class _Spans:
    """First start and last end of the operations of one kind, and their busy time (thread-safe)."""

    def __init__(self):
        self.first, self.last, self.busy, self.bytes = None, None, 0.0, 0
        self._lock = threading.Lock()

    def add(self, t0: float, t1: float, nbytes: int) -> None:
        with self._lock:
            self.first = t0 if self.first is None else min(self.first, t0)
            self.last = t1 if self.last is None else max(self.last, t1)
            self.busy += t1 - t0
            self.bytes += nbytes

    @property
    def wall(self) -> float:
        return 0.0 if self.first is None else self.last - self.first


class Files:
    """This rank's reads of the input and writes of the output, on thread pools."""

    def __init__(self, header, writer, layout: Layout):
        self.hdr, self.writer, self.lay = header, writer, layout
        self.f = _io.open_regular(header.path)
        self.fd = self.f.fileno()
        self.reads, self.writes = _Spans(), _Spans()
        reads, writes = io_threads()
        self._rpool = ThreadPoolExecutor(reads, thread_name_prefix="distscan-read")
        self._wpool = ThreadPoolExecutor(writes, thread_name_prefix="distscan-write")

    def read(self, lo: int, hi: int, buf: np.ndarray):
        """A future of rows ``[lo, hi)`` of this part, read into ``buf`` (native byte order, ``(m, w)``)."""
        return self._rpool.submit(self._read, lo, hi, buf)

    def _read(self, lo, hi, buf):
        t0 = time.perf_counter()
        hdr, lay = self.hdr, self.lay
        m = hi - lo
        rows = buf[: m * hdr.row_bytes].view(hdr.dtype).reshape((m,) + tuple(hdr.shape[1:]))
        rows = _io.read_rows(hdr, lay.start + lo, lay.start + hi, out=rows, fd=self.fd)
        self.reads.add(t0, time.perf_counter(), m * hdr.row_bytes)
        return rows.reshape(m, lay.w)

    def write(self, lo: int, rows: np.ndarray):
        """A future of the write of ``rows`` (host, ``(m, w)`` of the output dtype) at row ``lo`` of this part."""
        return self._wpool.submit(self._write, lo, rows)

    def _write(self, lo, rows):
        t0 = time.perf_counter()
        self.writer.write_rows(self.lay.start + lo, rows.reshape((rows.shape[0],) + tuple(self.hdr.shape[1:])))
        self.writes.add(t0, time.perf_counter(), rows.nbytes)

    def close(self) -> None:
        """Wait for the operations under way; drop those not started."""
        for pool in (self._rpool, self._wpool):
            pool.shutdown(wait=True, cancel_futures=True)
        self.f.close()


class Done:
    """A result that is already there (the CPU's outputs), shaped like a future."""

    def __init__(self, value):
        self.value = value

    def result(self):
        return self.value


def make_plan(job, ctx, backend, default_strategy: str) -> ScanPlan:
    """The distributed scan of this job's rows (:mod:`distscan.dist.plan`), on ``backend``."""
    hdr = ctx.header
    strategy = job.strategy if job.strategy not in (None, "auto") else default_strategy
    return ScanPlan(ctx.op, hdr.dtype.newbyteorder("="), dtype=job.dtype, exclusive=job.exclusive,
                    trailing=tuple(hdr.shape[1:]), comm=ctx.comm, backend=backend, strategy=strategy,
                    hierarchy=job.hierarchy, algorithm=getattr(job, "algorithm", "auto"))


def run_chunks(job, ctx, engine, plan: ScanPlan, layout: Layout, config: dict) -> None:
    """Pass A, the exchange, pass B and the last writes of this rank (see the module docstring).

    Collective: raises the same exception on every rank when any rank fails (pass A's
    failures in the exchange, pass B's in the agreement that ends it).
    """
    times = ctx.times
    for k in ("read", "write", "compute", "exscan", "load", "store"):
        times.setdefault(k, 0.0)
    t_origin = ctx.t_start if getattr(ctx, "t_start", None) is not None else time.perf_counter()
    rank, size = ctx.rank, ctx.size
    final_now = rank == 0           # rank 0's offset is the identity: its chunks are final at once
    last = rank == size - 1
    resident = config["mode"] == "resident"
    strategy = plan.strategy
    flagged = plan.carries.flagged
    chunks = layout.chunks
    K = len(chunks)
    in_row = ctx.header.row_bytes
    out_row = layout.w * layout.out_dt.itemsize
    two_pass = not final_now and not resident
    total_bytes = layout.n * (in_row * (2 if two_pass and not last else 1) + out_row)
    bar = ctx.progress("scan", total_bytes)
    if hasattr(engine, "note"):
        engine.note = bar.note  # the engine's phases (a GPU starting) beside the bar
    ahead = getattr(engine, "read_ahead", READ_AHEAD)
    files = Files(ctx.header, ctx.writer, layout)
    ready = collections.deque()     # chunks whose output is final, waiting for a write slot
    writing = collections.deque()   # (chunk, future) in write order
    compute = [0.0]

    def harvest(block: bool) -> None:
        while writing and (writing[0][1].done() or block):
            k, fut = writing.popleft()
            fut.result()  # raises the write's error
            engine.done(k)
            bar.update(chunks[k][1] * out_row - chunks[k][0] * out_row)
            block = False

    def pump(block: bool) -> None:
        harvest(False)
        while ready:
            if len(writing) >= engine.out_slots:
                if not block:
                    return
                harvest(True)
                continue
            k = ready.popleft()
            rows = engine.output(k).result()
            writing.append((k, files.write(chunks[k][0], rows)))

    def reads(ids):
        ids = list(ids)
        queue = collections.deque()
        nxt = 0
        while nxt < len(ids) and len(queue) < ahead:
            k = ids[nxt]
            buf = engine.in_buffer(k)
            queue.append((k, buf, files.read(*chunks[k], buf)))
            nxt += 1
        while queue:
            k, buf, fut = queue.popleft()
            rows = fut.result()
            bar.update((chunks[k][1] - chunks[k][0]) * in_row)
            yield k, rows, buf
            if nxt < len(ids):
                k2 = ids[nxt]
                buf2 = engine.in_buffer(k2)
                queue.append((k2, buf2, files.read(*chunks[k2], buf2)))
                nxt += 1

    def timed(fn, *args):
        t0 = time.perf_counter()
        try:
            return fn(*args)
        finally:
            compute[0] += time.perf_counter() - t0

    spans = {}
    error, offset = None, None
    carry = plan.identity()
    t_a = time.perf_counter()
    try:
        try:
            running = None
            if not (two_pass and last):
                for k, rows, buf in reads(range(K)):
                    engine.put(k, rows, buf)
                    if final_now:
                        if flagged and not last:
                            carry = plan.combine(carry, timed(engine.carry, k))  # before an in-place scan
                        running = timed(engine.scan, k, running, True)
                        ready.append(k)
                        pump(block=not resident)
                    elif resident:
                        if strategy == "scan_then_add":
                            running = timed(engine.scan, k, running, True)
                        elif not last:
                            carry = plan.combine(carry, timed(engine.carry, k))
                    else:
                        if not last:
                            carry = plan.combine(carry, timed(engine.carry, k))
                        engine.drop(k)
            if not flagged and running is not None and (final_now or strategy == "scan_then_add"):
                carry = np.asarray(running, plan.types.acc).reshape(-1)
        except Exception as exc:  # noqa: BLE001 - agreed in the exchange, raised on every rank
            error = exc
        spans["load"] = (t_a, time.perf_counter())
        times["load"] += time.perf_counter() - t_a

        t0 = time.perf_counter()
        if size > 1:
            offset = plan.exchange(carry, error, rows=layout.n)
        elif error is not None:
            raise error
        spans["exscan"] = (t0, time.perf_counter())
        times["exscan"] += time.perf_counter() - t0

        t_b = time.perf_counter()
        with phase(ctx, "store"):
            if not final_now:
                if resident:
                    running = offset
                    for k in range(K):
                        if strategy == "scan_then_add":
                            timed(engine.add, k, offset)
                        else:
                            running = timed(engine.scan, k, running, k < K - 1)
                        ready.append(k)
                        pump(block=True)
                else:
                    running = offset
                    for k, rows, buf in reads(range(K)):
                        engine.put(k, rows, buf)
                        running = timed(engine.scan, k, running, True)
                        ready.append(k)
                        pump(block=True)
            pump(block=True)
            while writing:
                harvest(True)
        spans["store"] = (t_b, time.perf_counter())
    finally:
        files.close()
        bar.done()
    times["compute"] += compute[0]
    times["read"] += files.reads.wall
    times["write"] += files.writes.wall
    for name, sp in (("read", files.reads), ("write", files.writes)):
        if sp.first is not None:
            spans[name] = (sp.first, sp.last)
    ctx.spans.update({k: (a - t_origin, b - t_origin) for k, (a, b) in spans.items()})
    times["read_busy"] = files.reads.busy
    times["write_busy"] = files.writes.busy
