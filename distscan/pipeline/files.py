"""A rank's positional reads and writes for the chunked pipeline (:mod:`distscan.pipeline.chunks`),
on thread pools: the rows of the input, the same rows of its auxiliary inputs (segment flags,
a recurrence's coefficients), and the rows of the output.

Reads are ``os.preadv`` through :func:`distscan.io.read_rows` into the caller's buffers; writes
go through :meth:`distscan.io.NpyWriter.write_rows`.  The auxiliary inputs are read on the same
read pool as the input, each chunk's rows of every file together, so that they arrive with the
rows they belong to.
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .. import io as _io

#: Threads reading the input (and its auxiliary inputs).
READ_THREADS = 4

#: Threads writing the output.
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


class Spans:
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
    """This rank's reads of the input (and of ``layout.aux``, its auxiliary inputs) and writes of
    the output, on thread pools.  ``layout``: a :class:`distscan.pipeline.chunks.Layout`."""

    def __init__(self, header, writer, layout):
        self.hdr, self.writer, self.lay = header, writer, layout
        self._open = []
        self.reads, self.writes = Spans(), Spans()
        try:
            self.fd = self._fd(header)
            self.aux_fds = [self._fd(a.header) for a in layout.aux]
        except BaseException:
            self._close_files()
            raise
        reads, writes = io_threads()
        self._rpool = ThreadPoolExecutor(reads, thread_name_prefix="distscan-read")
        self._wpool = ThreadPoolExecutor(writes, thread_name_prefix="distscan-write")

    def _fd(self, header) -> int:
        f = _io.open_regular(header.path)
        self._open.append(f)
        _io.check_same_file(header, f.fileno())  # not renamed over nor rewritten since its header was read
        return f.fileno()

    def read(self, lo: int, hi: int, buf: np.ndarray):
        """A future of rows ``[lo, hi)`` of this part, read into ``buf`` (native byte order, ``(m, w)``)."""
        return self._rpool.submit(self._read, self.hdr, self.fd, lo, hi, buf, (hi - lo, self.lay.w))

    def read_aux(self, i: int, lo: int, hi: int, buf: np.ndarray):
        """A future of rows ``[lo, hi)`` of auxiliary input ``i``, read into ``buf`` (native byte order,
        the file's dtype, shape ``(m,)`` for a 1-D file, else ``(m, items per row)``)."""
        aux = self.lay.aux[i]
        return self._rpool.submit(self._read, aux.header, self.aux_fds[i], lo, hi, buf, aux.shape(hi - lo))

    def _read(self, hdr, fd, lo, hi, buf, shape):
        t0 = time.perf_counter()
        m = hi - lo
        rows = buf[: m * hdr.row_bytes].view(hdr.dtype).reshape((m,) + tuple(hdr.shape[1:]))
        rows = _io.read_rows(hdr, self.lay.start + lo, self.lay.start + hi, out=rows, fd=fd)
        self.reads.add(t0, time.perf_counter(), m * hdr.row_bytes)
        return rows.reshape(shape)

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
        self._close_files()

    def _close_files(self) -> None:
        for f in self._open:
            f.close()
        self._open.clear()
