"""The file scan of the scans that carry a state or run backwards: ``--reverse``, ``--segments``,
``--compensated`` and linear recurrences (``distscan recurrence A.npy B.npy``).

Each rank reads its rows of every input (the values, and the segment flags and coefficients of
the same rows) with positional reads on a thread pool, scans them with the library's own call
across ranks (:func:`distscan.scan` or :func:`distscan.linear_recurrence` on the job's
communicator: one exchange of one state per rank, the same kernels as the API), and writes its
rows with positional writes on a thread pool.  Unlike the chunked pipeline
(:mod:`distscan.pipeline.chunks`) a rank holds its part while it scans: its inputs and its
output must fit the host memory budget (``--memory-limit``) and, with ``--backend cuda``, the
GPU's memory.  A part that does not fit is refused on every rank before anything is read (use
more ranks).  The assumption the route rests on: every rank reaches the same call with the
same options (they come from the command line and the headers, the same on every rank), so
the library's collectives match.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .. import api
from .. import io as _io
from ..gpus import bind_gpu
from .chunks import READ_THREADS, WRITE_THREADS, chunk_rows_for
from .context import Context, Job, host_budget, phase
from .finish import finish


def _read_part(header, start: int, stop: int) -> np.ndarray:
    """Rows ``[start, stop)`` of an input, read in chunks on a thread pool (native byte order)."""
    shape = (stop - start,) + tuple(header.shape[1:])
    out = np.empty(shape, header.dtype)
    step = chunk_rows_for(header.row_bytes, 0)
    with _io.open_regular(header.path) as f, ThreadPoolExecutor(READ_THREADS) as pool:
        jobs = [pool.submit(_io.read_rows, header, start + lo, start + min(stop - start, lo + step),
                            out=out[lo: lo + step], fd=f.fileno()) for lo in range(0, stop - start, step)]
        for j in jobs:
            j.result()
    if not out.dtype.isnative:
        out = out.view(out.dtype.newbyteorder("="))  # read_rows swapped each piece in place
    return out


def _write_part(writer, start: int, rows: np.ndarray) -> None:
    """``rows`` at global row ``start``, written in chunks on a thread pool."""
    step = chunk_rows_for(0, max(1, rows[:1].nbytes))
    with ThreadPoolExecutor(WRITE_THREADS) as pool:
        jobs = [pool.submit(writer.write_rows, start + lo, rows[lo: lo + step]) for lo in range(0, len(rows), step)]
        for j in jobs:
            j.result()


def part_bytes(ctx: Context, aux_headers) -> int:
    """Host bytes this rank holds: its input rows, their flags and coefficients, and its output."""
    n = ctx.stop - ctx.start
    held = n * (ctx.header.row_bytes + ctx.header.row_items * ctx.types.result.itemsize)
    return held + sum(n * h.row_bytes for h in aux_headers if h is not None)


def run_general(job: Job, ctx: Context) -> None:
    """Read this rank's rows, scan them across ranks with the library's call, write them."""
    hdr, n = ctx.header, ctx.stop - ctx.start
    flags_hdr, coef_hdr = ctx.aux_headers
    with phase(ctx, "plan"):
        need, budget = part_bytes(ctx, (flags_hdr, coef_hdr)), host_budget(job.memory_limit)
        if need > budget:
            raise MemoryError(f"this rank's part ({n:,} rows) and its output need {need / 2**30:.2f} GiB, more than "
                              f"the memory budget of {budget / 2**30:.2f} GiB: --reverse, --segments, "
                              "--compensated and recurrences hold their part in memory; use more ranks "
                              "(or --memory-limit)")
    xp = np
    if job.backend == "cuda":
        binding = bind_gpu(ctx.comm, gpu=job.gpu)  # collective, agreed
        import cupy
        xp = cupy
        ctx.gpu = {"device": binding.device, "source": binding.source, "shared": binding.shared,
                   "mode": "resident", "strategy": "library call"}
    ctx.backend_used = "cuda" if xp is not np else "cpu"
    t0 = time.perf_counter()
    with phase(ctx, "read"):
        x = _read_part(hdr, ctx.start, ctx.stop)
        flags = None if flags_hdr is None else _read_part(flags_hdr, ctx.start, ctx.stop).reshape(n)
        coef = None if coef_hdr is None else _read_part(coef_hdr, ctx.start, ctx.stop)
        ctx.spans["read"] = (t0 - ctx.t_start, time.perf_counter() - ctx.t_start)
    t0 = time.perf_counter()
    kw = dict(comm=ctx.comm, reverse=job.reverse, dtype=job.dtype, backend=ctx.backend_used,
              segments=None if flags is None else xp.asarray(flags))
    with phase(ctx, "scan"):
        if coef is not None:
            y = api.linear_recurrence(xp.asarray(coef), xp.asarray(x), initial=job.initial, **kw)
        else:
            y = api.scan(xp.asarray(x), job.op, exclusive=job.exclusive, compensated=job.compensated, **kw)
        if xp is not np:
            y = y.get()
        ctx.spans["scan"] = (t0 - ctx.t_start, time.perf_counter() - ctx.t_start)
    del x, flags, coef
    t0 = time.perf_counter()
    with phase(ctx, "write"):
        _write_part(ctx.writer, ctx.start, np.ascontiguousarray(y, ctx.types.result))
        ctx.spans["write"] = (t0 - ctx.t_start, time.perf_counter() - ctx.t_start)
    finish(job, ctx)
