"""Reading a ``.npy`` in parallel: the header once (rank 0, broadcast), then each rank its own
block of rows, in chunks of at most ``CHUNK_BYTES`` so slices past 2 GiB work."""

from __future__ import annotations

import os
from typing import Callable, Optional

import numpy as np

from ..dist.agree import decide_on_root
from .npy import NpyHeader, open_regular, read_header

#: Largest single read or write call, in bytes (MPI counts are C ints; POSIX reads may be short).
CHUNK_BYTES = 1 << 30


def open_input(path, comm=None) -> NpyHeader:
    """:func:`read_header` on rank 0, result (or exception) broadcast to every rank of ``comm``."""
    return decide_on_root(comm, lambda: read_header(path))


def block_split(n: int, size: int, rank: int) -> tuple[int, int]:
    """Rows ``[start, stop)`` of ``n`` rows that rank ``rank`` of ``size`` owns.

    Balanced block distribution: the first ``n % size`` ranks get ``n // size + 1``
    rows, the others ``n // size``; parts are contiguous, in rank order, and
    cover ``[0, n)`` exactly.

    Raises
    ------
    ValueError
        If ``n < 0``, ``size < 1`` or ``rank`` is not in ``[0, size)``.
    """
    if n < 0 or size < 1 or not 0 <= rank < size:
        raise ValueError(f"block_split: bad arguments n={n}, size={size}, rank={rank}")
    base, extra = divmod(n, size)
    start = rank * base + min(rank, extra)
    return start, start + base + (1 if rank < extra else 0)


def read_rows(header: NpyHeader, start: int, stop: int, *, out=None,
              progress: Optional[Callable[[int], None]] = None, chunk_bytes: int = 0, fd: Optional[int] = None) -> np.ndarray:
    """Read rows ``[start, stop)`` of the array described by ``header``; nothing else is read.

    Returns an array of shape ``(stop - start, *header.shape[1:])`` in native
    byte order (converted in place if the file is byte-swapped).  ``out`` (a
    C-contiguous array of the file's dtype and that shape) receives the rows.
    ``fd``: an open descriptor of the file (positional reads, safe from several
    threads at once); otherwise the file is opened for this call.  ``progress``,
    if given, is called with the number of bytes read after each chunk.

    Raises
    ------
    ValueError
        If the rows are out of range or the file ends early.
    OSError
        If reading fails.
    """
    if not 0 <= start <= stop <= header.rows:
        raise ValueError(f"rows [{start}, {stop}) out of range for {header.rows} rows")
    shape = (stop - start,) + tuple(header.shape[1:])
    if out is None:
        out = np.empty(shape, header.dtype)
    elif out.shape != shape or out.dtype != header.dtype or not out.flags.c_contiguous:
        raise ValueError(f"out must be a C-contiguous {header.dtype} array of shape {shape}")
    buf = memoryview(out.reshape(-1).view(np.uint8))
    total = len(buf)
    chunk = chunk_bytes or CHUNK_BYTES
    pos = header.offset + start * header.row_bytes
    done = 0
    f = open_regular(header.path) if fd is None else None
    try:
        rfd = f.fileno() if f is not None else fd
        while done < total:
            got = os.preadv(rfd, [buf[done: done + min(chunk, total - done)]], pos + done)
            if not got:
                raise ValueError(f"{header.path} is truncated: file ended {total - done} bytes early "
                                 f"while reading rows [{start}, {stop})")
            done += got
            if progress is not None:
                progress(got)
    finally:
        if f is not None:
            f.close()
    if not out.dtype.isnative:
        out = out.byteswap(inplace=True).view(out.dtype.newbyteorder("="))
    return out


def same_file(a, b) -> bool:
    """Whether paths ``a`` and ``b`` name the same file (resolving links; ``b`` may not exist)."""
    try:
        if os.path.exists(a) and os.path.exists(b):
            return os.path.samefile(a, b)
    except OSError:
        pass
    return os.path.realpath(a) == os.path.realpath(b)
