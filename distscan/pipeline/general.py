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
import numpy as np

from .. import api
from ..gpus import bind_gpu
from .chunks import Files, Layout, chunk_rows_for
from .cuda import AUTO_MIN_HOST_SCAN_S, HOST_SCAN_S_PER_ELEMENT
from .gpu_start import gpu_visible
from .context import Context, Job, host_budget, phase
from .finish import finish


def _files(header, writer, start: int, stop: int, out_dt=None) -> Files:
    """The chunked pipeline's thread pools of positional reads and writes over rows ``[start, stop)``."""
    dt = header.dtype.newbyteorder("=")
    out_dt = dt if out_dt is None else out_dt
    layout = Layout(start=start, n=stop - start, w=header.row_items, in_dt=dt, out_dt=out_dt,
                    chunk_rows=chunk_rows_for(header.row_bytes, header.row_items * out_dt.itemsize))
    return Files(header, writer, layout)


def _read_part(header, start: int, stop: int) -> np.ndarray:
    """Rows ``[start, stop)`` of an input, read in chunks on the pipeline's read pool (native byte order)."""
    files = _files(header, None, start, stop)
    out = np.empty((stop - start,) + tuple(header.shape[1:]), header.dtype.newbyteorder("="))
    raw = out.reshape(-1).view(np.uint8)
    try:
        jobs = [files.read(lo, hi, raw[lo * header.row_bytes: hi * header.row_bytes])
                for lo, hi in files.lay.chunks]
        for j in jobs:
            j.result()
    finally:
        files.close()
    return out


def _write_part(writer, header, start: int, rows: np.ndarray) -> None:
    """``rows`` at global row ``start``, written in chunks on the pipeline's write pool."""
    files = _files(header, writer, start, start + len(rows), rows.dtype)
    flat = rows.reshape(len(rows), -1)
    try:
        jobs = [files.write(lo, flat[lo:hi]) for lo, hi in files.lay.chunks]
        for j in jobs:
            j.result()
    finally:
        files.close()


def part_bytes(ctx: Context, aux_headers) -> int:
    """Host bytes this rank holds: its input rows, their flags and coefficients, and its output."""
    n = ctx.stop - ctx.start
    held = n * (ctx.header.row_bytes + ctx.header.row_items * ctx.types.result.itemsize)
    return held + sum(n * h.row_bytes for h in aux_headers if h is not None)


def _gpu_for_all(job: Job, ctx: Context) -> tuple:
    """``(use the GPUs, why)``, the same on every rank (one small collective under ``auto``): ``cuda``
    always; ``auto`` when every rank sees a GPU and its host scan would take ``AUTO_MIN_HOST_SCAN_S``."""
    if job.backend != "auto":
        return job.backend == "cuda", f"--backend {job.backend}"
    likely, why = gpu_visible()
    host_s = (ctx.stop - ctx.start) * ctx.header.row_items * HOST_SCAN_S_PER_ELEMENT
    if likely and host_s < AUTO_MIN_HOST_SCAN_S:
        likely, why = False, f"a GPU is visible, but a part scans on the host in about {host_s:.2f} s"
    everyone = likely if ctx.comm is None else bool(ctx.comm.allreduce(int(likely), op=_min_op()))
    return everyone, f"auto: {why}" if everyone == likely else "auto: some rank sees no GPU, or holds little"


def _min_op():
    from mpi4py import MPI

    return MPI.MIN


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
    use_gpu, ctx.backend_why = _gpu_for_all(job, ctx)
    if use_gpu:
        # The library call's backend is every rank's (its exchange compares it): more ranks than GPUs
        # share them here, rather than some ranks scanning on the host.
        binding = bind_gpu(ctx.comm, gpu=job.gpu, allow_shared=True)  # collective, agreed
        import cupy
        xp = cupy
        ctx.gpu = {"device": binding.device, "why": f"GPU {binding.device} ({binding.source})",
                   "shared": binding.shared, "mode": "resident", "strategy": "library call"}
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
        _write_part(ctx.writer, hdr, ctx.start, np.ascontiguousarray(y, ctx.types.result))
        ctx.spans["write"] = (t0 - ctx.t_start, time.perf_counter() - ctx.t_start)
    finish(job, ctx)
