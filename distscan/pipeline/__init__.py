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
way out), for every scan (reverse, segmented, compensated and recurrences too), with a
different compute step: :func:`run_cpu` (NumPy, used for every
backend without a pipeline of its own) and :func:`run_cuda`
(:mod:`distscan.pipeline.cuda`: host -> device, scan, device -> host).

Failure handling: every phase ends in an agreement (:func:`_phase`), so a
failure on any rank raises the same exception on every rank, the temporary
output is removed, and the caller sees one error.
"""

from __future__ import annotations

import time
from typing import Callable, Optional

from .. import io as _io
import numpy as np

from ..ops.options import call_op
from .._dtypes import check_coefficients, scan_types
from ..ops import get_op
from .context import Context, Job, default_output, null_progress  # noqa: F401 - the pipeline's names
from .finish import inputs_unchanged, run_empty
from .host import run_cpu
from .report import report as _report


def _gpu_pipeline(name: str) -> Callable:
    """The pipeline ``name`` of :mod:`distscan.pipeline.cuda`, that module loaded when a run calls
    it: not at the command's start-up, nor ever under ``--backend cpu``."""
    def run_pipeline(job: Job, ctx: Context) -> None:
        from . import cuda  # deferred: the GPU pipeline's code is for runs that may use a GPU
        getattr(cuda, name)(job, ctx)
    run_pipeline.__name__ = run_pipeline.__qualname__ = name
    return run_pipeline


#: backend name -> pipeline function.  ``auto``: each rank takes its GPU where one is visible and
#: its part is large enough, else the host (:func:`distscan.pipeline.cuda.run_auto`).
PIPELINES: dict = {"cpu": run_cpu, "cuda": _gpu_pipeline("run_gpu"), "auto": _gpu_pipeline("run_auto")}


def prepare(job: Job, comm=None) -> tuple:
    """Collective: read the headers on rank 0, resolve the operator and dtypes on every rank.

    Returns ``(header, op, types, aux_headers, dtype)``; ``aux_headers`` are the headers of the
    segment flags and of the coefficients (None where the job has none); ``dtype`` the dtype every
    plan of the job computes in (``dtype=`` of :class:`distscan.dist.plan.ScanPlan`: the job's, or
    for a recurrence without one NumPy's type of ``a*b + b``, as :func:`distscan.linear_recurrence`).  Raises the same exception on
    every rank for a bad input, an unknown operator or dtype, an operator the dtype does not
    support, or flags and coefficients that do not match the input's rows.
    """
    header = _io.open_input(job.input, comm)  # agreed by broadcast
    flags = None if job.segments is None else _io.open_input(job.segments, comm)
    coef = None if job.coefficients is None else _io.open_input(job.coefficients, comm)
    # Pure functions of the headers and the arguments: every rank gets the same answer.
    if flags is not None and (len(flags.shape) != 1 or flags.rows != header.rows or flags.dtype.kind not in "biu"):
        raise ValueError(f"--segments {job.segments}: expected one flag (bool or integer) per row of the input, "
                         f"a 1-D array of {header.rows} items; got {flags.dtype} {flags.shape}")
    if coef is not None:
        for name, h in (("A", coef), ("B", header)):
            if h.dtype.kind not in "biufc":  # before NumPy's promotion: a paragraph naming no file
                raise TypeError(f"recurrence: {name} {h.path} has dtype {h.dtype}; a recurrence takes bool, "
                                "integer, float or complex data")
    if coef is not None and coef.shape != header.shape:
        raise ValueError(f"recurrence: A {job.coefficients} has shape {coef.shape}, B {job.input} has "
                         f"{header.shape}; they must be the same")
    if job.verify and (job.reverse or flags is not None or coef is not None):
        raise ValueError("--verify checks forward scans (compensated sums too); it does not check --reverse, "
                         "--segments or recurrences yet")
    # The library's refusals of these (compensated=True, segments=, dtype=) in the command's words
    base = get_op(job.op)
    if job.compensated and flags is not None:
        raise ValueError("--compensated and --segments together are not supported")
    if job.compensated and base.name not in ("sum", "nansum"):
        raise ValueError(f"--compensated is for sums (--op sum or nansum), not --op {job.op}")
    if base.logical and job.dtype is not None and np.dtype(job.dtype) != np.dtype(bool):
        raise TypeError(f"--op {job.op} always gives bool; --dtype {np.dtype(job.dtype)} is not allowed")
    op = call_op(base, segments=None if flags is None else True, compensated=job.compensated,
                 coefficients=None if coef is None else True, reverse=job.reverse)
    if job.compensated:  # the library's "operator 'compensated sum' is not defined for input dtype int64"
        summed = header.dtype.newbyteorder("=") if job.dtype is None else np.dtype(job.dtype)
        if summed.kind in "biufc" and summed.kind not in op.kinds:
            raise TypeError("--compensated takes float or complex data; " + (
                f"{job.input} holds {summed} (add --dtype float64 to sum it as floats)" if job.dtype is None
                else f"--dtype {summed} is neither"))
    dtype = job.dtype
    if coef is not None and dtype is None:  # y = a*y + b in the dtype NumPy gives a*b + b
        dtype = np.result_type(coef.dtype, header.dtype)
    elif coef is not None:  # as the API: a float A with an integer --dtype is refused, not truncated
        try:
            check_coefficients(coef.dtype, dtype)
        except TypeError:
            raise TypeError(f"recurrence: A {job.coefficients} is {coef.dtype}, which --dtype {np.dtype(dtype)} "
                            f"would truncate (NumPy's a*y in {np.dtype(dtype)} refuses it: same_kind casting)") from None
    types = scan_types(op, header.dtype.newbyteorder("="), dtype)
    if op.state is not None and types.acc.char in "gG":  # the CPU's loops said "pass dtype=numpy.float64"
        raise TypeError(f"--segments, --compensated and recurrences take no {types.acc} (long double): "
                        "numba, which compiles their loops on the host, and CUDA have no such type; pass "
                        f"--dtype {'complex128' if types.acc.kind == 'c' else 'float64'}")
    return header, op, types, (flags, coef), dtype


def run(job: Job, comm=None, *, progress: Optional[Callable] = None, notice: Optional[Callable] = None,
        before_publish: Optional[Callable] = None, startup_s: Optional[float] = None) -> dict:
    """Scan ``job.input`` into ``job.output`` on every rank of ``comm``; returns the report.

    Collective.  Every rank returns the same report (times are the maximum over
    ranks) or raises the same exception; on failure no output file is left.
    ``notice(message)`` (rank 0) is told about stale temporary files removed.
    ``startup_s``: how long this process ran before the command began (its report's
    ``times_s.startup``, the maximum over ranks).
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
    progress = progress or null_progress
    header, op, types, aux_headers, dtype = prepare(job, comm)
    size = 1 if comm is None else comm.Get_size()
    rank = 0 if comm is None else comm.Get_rank()
    empty = header.size == 0
    start, stop = (0, 0) if empty else _io.block_split(header.rows, size, rank)
    ctx = Context(comm=comm, header=header, op=op, types=types, start=start, stop=stop, progress=progress,
                  t_start=t_start, aux_headers=aux_headers, dtype=dtype)
    if startup_s is not None:
        ctx.times["startup"] = startup_s
    pipeline = run_empty if empty else PIPELINES.get(job.backend, run_cpu)
    t0 = time.perf_counter()
    writer = _io.NpyWriter(job.output, header.shape, types.result, comm=comm, force=job.force,
                           protect=tuple(p for p in (job.input, job.segments, job.coefficients) if p is not None),
                           notice=notice, fsync=job.fsync)
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
        inputs_unchanged(ctx)  # the last step before the rename
    return report
