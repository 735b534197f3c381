"""File pipelines: read an ``.npy`` slice on every rank -> scan -> write one ``.npy`` in parallel.

:func:`run` is what the command line calls.  It resolves everything that can be
known from the header alone (operator, result dtype, output name) before reading
a byte, opens the output (a temporary file) before the slow phases so an
unwritable destination fails fast, and publishes the output only after every
rank succeeded (and, with ``verify``, after the independent check passed).

:data:`PIPELINES` maps a backend name to a function ``pipeline(job, ctx) -> None``
that fills ``ctx.times`` and writes through ``ctx.writer``.  Both pipelines are
one chunked skeleton (:mod:`distscan.pipeline.chunks`: positional reads and writes on
thread pools overlapping the compute, one exchange, the offset applied on the
way out) with a different compute step: :func:`run_cpu` (NumPy, used for every
backend without a pipeline of its own) and :func:`run_cuda`
(:mod:`distscan.pipeline.cuda`: host -> device, scan, device -> host).

Failure handling: every phase ends in an agreement (:func:`_phase`), so a
failure on any rank raises the same exception on every rank, the temporary
output is removed, and the caller sees one error.
"""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Optional

from .. import io as _io
from ..dist.agree import agree
from .._dtypes import ScanTypes, scan_types
from ..ops import Op, get_op

# Output names for the common operators; others are "scan-<op>".
_OUTPUT_WORDS = {"sum": "cumsum", "prod": "cumprod", "max": "cummax", "min": "cummin"}


def default_output(input_path: str, op, exclusive: bool = False) -> str:
    """The output name beside the input: ``data.npy`` -> ``data.cumsum.npy``.

    ``data.exclusive-cumsum.npy`` for exclusive scans; ``data.scan-bitwise_xor.npy``
    (``data.exclusive-scan-bitwise_xor.npy``) for operators without a NumPy ``cum*`` name.
    """
    name = get_op(op).name
    word = _OUTPUT_WORDS.get(name, f"scan-{name}")
    if exclusive:
        word = f"exclusive-{word}"
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
    gpu_memory_limit: Optional[str] = None  # --gpu-memory-limit: e.g. "2G" (default: 85 % of free)
    memory_limit: Optional[str] = None      # --memory-limit: host memory a rank may hold (default: a share)
    fsync: bool = False                     # --fsync: the output durable before the rename


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
    verify_summary: Optional[dict] = None
    gpu: Optional[dict] = None
    spans: dict = field(default_factory=dict)   # phase -> (start, end) seconds from t_start
    t_start: Optional[float] = None
    host: Optional[dict] = None                 # the chunked pipeline's mode and sizes

    @property
    def rank(self) -> int:
        return 0 if self.comm is None else self.comm.Get_rank()

    @property
    def size(self) -> int:
        return 1 if self.comm is None else self.comm.Get_size()


@contextmanager
def _phase(ctx: Context, name: str):
    """Time a phase (max over ranks is taken at the end) and agree on its failure."""
    error = None
    t0 = time.perf_counter()
    try:
        yield
    except Exception as exc:  # noqa: BLE001 - agreed on every rank
        error = exc
    ctx.times[name] = ctx.times.get(name, 0.0) + time.perf_counter() - t0
    agree(ctx.comm, error)


def _null_progress(label, total):
    from .progress import NullProgress
    return NullProgress(total, label)


def run_cpu(job: Job, ctx: Context) -> None:
    """The CPU pipeline: :mod:`distscan.pipeline.chunks` with the NumPy engine."""
    from . import chunks as _flow

    engine = _flow.CpuEngine()
    with _phase(ctx, "plan"):
        plan = _flow.make_plan(job, ctx, engine.backend, engine.default_strategy)
        layout = _flow.layout_for(ctx)
        config = engine.configure(layout, plan, _flow.host_budget(job.memory_limit), final_now=ctx.rank == 0)
    ctx.backend_used = "cpu"
    ctx.host = {"mode": config["mode"], "strategy": plan.strategy, "chunk_rows": layout.chunk_rows}
    try:
        _flow.run_chunks(job, ctx, engine, plan, layout, config)
    finally:
        engine.release()
    ctx.times["scan"] = ctx.times.pop("compute")
    ctx.scan_timings.update({"scan": ctx.times["scan"], "exscan": ctx.times["exscan"]})
    finish(job, ctx)


def finish(job: Job, ctx: Context) -> None:
    """Close the output (collective; data complete under the temporary name), then ``--verify``."""
    t0 = time.perf_counter()
    ctx.writer.close()
    ctx.times["write"] = ctx.times.get("write", 0.0) + time.perf_counter() - t0
    if job.verify:
        from . import chunks as _flow
        from .verify import verify
        t0 = time.perf_counter()
        local = _flow.input_view(ctx.header, ctx.start, ctx.stop)
        ctx.verify_summary = verify(ctx.writer.temp_path, local, ctx.start, ctx.op, ctx.types,
                                    exclusive=job.exclusive, total_rows=ctx.header.rows, out_shape=ctx.header.shape,
                                    comm=ctx.comm)
        ctx.times["verify"] = time.perf_counter() - t0


def run_cuda(job: Job, ctx: Context) -> None:
    """The GPU pipeline (pinned chunks, copy streams, fused add): :mod:`distscan.pipeline.cuda`."""
    from .cuda import run_gpu
    run_gpu(job, ctx)


#: backend name -> pipeline function; backends without an entry use :func:`run_cpu`.
PIPELINES: dict = {"cpu": run_cpu, "cuda": run_cuda}


def prepare(job: Job, comm=None) -> tuple:
    """Collective: read the header on rank 0, resolve the operator and dtypes on every rank.

    Returns ``(header, op, types)``.  Raises the same exception on every rank for a
    bad input, an unknown operator or dtype, or an operator the dtype does not support.
    """
    header = _io.open_input(job.input, comm)  # agreed by broadcast
    # Pure functions of the header and the arguments: every rank gets the same answer.
    op = get_op(job.op)
    types = scan_types(op, header.dtype, job.dtype)
    return header, op, types


def run_empty(job: Job, ctx: Context) -> None:
    """An array with no elements (a zero-length axis anywhere): only the header is written.

    Nothing is read or scanned, whatever the number of rows (``(2**59, 0)`` is a
    valid, empty array); with ``verify`` the written header is checked.
    """
    with _phase(ctx, "write"):
        pass
    ctx.writer.close()
    ctx.times.setdefault("read", 0.0)
    ctx.times["scan"] = 0.0
    if job.verify:
        t0 = time.perf_counter()
        problem = None
        if ctx.rank == 0:
            try:
                hdr = _io.read_header(ctx.writer.temp_path)
                if hdr.shape != ctx.header.shape or hdr.dtype != ctx.types.result:
                    problem = (f"written header says {hdr.shape} {hdr.dtype}, expected {ctx.header.shape} "
                               f"{ctx.types.result}")
            except Exception as exc:  # noqa: BLE001 - a header we cannot read back is a failed check
                problem = f"cannot read the result back: {exc}"
        if ctx.comm is not None and ctx.size > 1:
            problem = ctx.comm.bcast(problem, root=0)
        if problem is not None:
            from .verify import VerificationError
            raise VerificationError(f"verification failed: {problem}")
        ctx.verify_summary = {
            "passed": True, "checked_rows": 0, "skipped_rows": 0, "every_row_checked": True,
            "rank_boundaries_checked": 0, "rank_boundaries": 0, "max_abs_error": 0.0, "tolerance": "exact",
            "summary": f"the array has no elements: only the header ({ctx.header.shape} {ctx.types.result}) "
                       "was checked",
        }
        ctx.times["verify"] = time.perf_counter() - t0


def run(job: Job, comm=None, *, progress: Optional[Callable] = None, notice: Optional[Callable] = None,
        before_publish: Optional[Callable] = None) -> dict:
    """Scan ``job.input`` into ``job.output`` on every rank of ``comm``; returns the report.

    Collective.  Every rank returns the same report (times are the maximum over
    ranks) or raises the same exception; on failure no output file is left.
    ``notice(message)`` (rank 0) is told about stale temporary files removed.
    ``before_publish(report, writer)`` runs on every rank after the output is
    complete (and verified) but before it is renamed into place: whatever it
    writes with ``writer.attach`` is published with the output, and if it
    raises, nothing is published.  The report's times stop there.

    Raises
    ------
    FileNotFoundError, IsADirectoryError, PermissionError, NotADirectoryError
        Input or output path problems.
    FileExistsError
        The output exists and ``job.force`` is false, or it is not a regular file.
    ValueError
        Not an ``.npy``, truncated, pickled, Fortran order, 0-d, output == input.
    TypeError
        The operator does not support the dtype.
    distscan.pipeline.verify.VerificationError
        ``job.verify`` found a wrong result (the output is then not published).
    distscan.DistScanError
        Any other failure on some rank.
    """
    t_start = time.perf_counter()
    progress = progress or _null_progress
    header, op, types = prepare(job, comm)
    size = 1 if comm is None else comm.Get_size()
    rank = 0 if comm is None else comm.Get_rank()
    empty = header.size == 0
    start, stop = (0, 0) if empty else _io.block_split(header.rows, size, rank)
    ctx = Context(comm=comm, header=header, op=op, types=types, start=start, stop=stop, progress=progress,
                  t_start=t_start)
    pipeline = run_empty if empty else PIPELINES.get(job.backend, run_cpu)
    t0 = time.perf_counter()
    writer = _io.NpyWriter(job.output, header.shape, types.result, comm=comm, force=job.force,
                           protect=(job.input,), notice=notice, fsync=job.fsync)
    with writer:
        ctx.times["open"] = time.perf_counter() - t0
        ctx.writer = writer
        pipeline(job, ctx)
        ctx.times["total"] = time.perf_counter() - t_start
        report = _report(job, ctx)
        if empty:
            report["rows_per_rank"] = {"min": 0, "max": 0}
        if before_publish is not None:
            before_publish(report, writer)
    return report


def _report(job: Job, ctx: Context) -> dict:
    hdr, types = ctx.header, ctx.types
    times = dict(ctx.times)
    scan_phases = {k: float(v) for k, v in ctx.scan_timings.items() if isinstance(v, (int, float))}
    local = (times, scan_phases, ctx.stop - ctx.start, dict(ctx.spans), ctx.host)
    gathered = [local] if ctx.comm is None else ctx.comm.allgather(local)
    spans = {}
    for g in gathered:
        for k, (a, b) in g[3].items():
            spans[k] = (min(a, spans[k][0]), max(b, spans[k][1])) if k in spans else (a, b)
    hosts = [g[4] for g in gathered]
    gathered = [g[:3] for g in gathered]
    keys = sorted({k for t, _, _ in gathered for k in t})
    tmax = {k: max(t.get(k, 0.0) for t, _, _ in gathered) for k in keys}
    skeys = sorted({k for _, s, _ in gathered for k in s})
    smax = {k: max(s.get(k, 0.0) for _, s, _ in gathered) for k in skeys}
    rows = [r for _, _, r in gathered]
    n = hdr.size
    in_bytes = hdr.nbytes
    out_bytes = n * types.result.itemsize
    total = tmax.get("total", 0.0)
    scan_t = tmax.get("scan", 0.0)
    return {
        "input": os.path.abspath(job.input),
        "output": os.path.abspath(job.output),
        "op": ctx.op.name,
        "exclusive": job.exclusive,
        "shape": list(hdr.shape),
        "elements": n,
        "input_dtype": str(hdr.dtype),
        "result_dtype": str(types.result),
        "accumulator_dtype": str(types.acc),
        "input_bytes": in_bytes,
        "output_bytes": out_bytes,
        "ranks": ctx.size,
        "rows_per_rank": {"min": min(rows), "max": max(rows)},
        "backend": {"requested": job.backend, "used": ctx.backend_used},
        "strategy": job.strategy,
        "hierarchy": job.hierarchy,
        "times_s": {
            "read": tmax.get("read", 0.0),
            "scan": scan_t,
            "scan_phases": smax,
            "write": tmax.get("write", 0.0),
            "verify": tmax.get("verify"),
            **{k: tmax[k] for k in ("h2d", "d2h", "exscan", "load", "store", "read_busy", "write_busy")
               if k in tmax},
            "open": tmax.get("open", 0.0),
            "total": total,
            "spans": {k: [round(a, 6), round(b, 6)] for k, (a, b) in sorted(spans.items(), key=lambda i: i[1])},
            "note": "maximum over ranks of each phase; read and write: wall span from the first to the last "
                    "read (write) of a rank, overlapping the other phases; read_busy/write_busy: summed over "
                    "the I/O threads; scan: compute; spans: [start, end] of each phase over all ranks, in "
                    "seconds from the start; total: from the start until the output was ready to be "
                    "published (the final rename is not included)",
        },
        "throughput": {
            "elements_per_s": n / total if total > 0 else None,
            "bytes_per_s": (in_bytes + out_bytes) / total if total > 0 else None,
            "scan_elements_per_s": n / scan_t if scan_t > 0 else None,
            "note": "elements and bytes (input + output) over the total time; scan_* over the scan phase",
        },
        "verify": ctx.verify_summary,
        **({"pipeline": {"per_rank": hosts}} if any(h is not None for h in hosts) else {}),
        **({"gpu": _gpu_report(ctx)} if ctx.gpu is not None else {}),
    }


def _gpu_report(ctx: Context) -> dict:
    """Per-rank GPU facts (device, mode, budget) gathered to every rank."""
    mine = dict(ctx.gpu)
    per_rank = [mine] if ctx.comm is None else ctx.comm.allgather(mine)
    return {"per_rank": per_rank,
            "note": "h2d, scan, d2h: GPU engine busy time (CUDA events); read, write: disk; "
                    "load, store: wall of the overlapped phases; exscan: MPI"}
