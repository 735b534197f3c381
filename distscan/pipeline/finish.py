"""The end of a file scan: the output closed (complete under its temporary name), then checked
with ``--verify``; the inputs checked unchanged before the output is published; and the scan of an
array with no elements (only its header is written)."""

from __future__ import annotations

import time

from .. import io as _io
from ..dist.agree import collectively
from .chunks import input_view
from .context import Context, Job, phase


def finish(job: Job, ctx: Context) -> None:
    """Close the output (collective; data complete under the temporary name), then ``--verify``."""
    t0 = time.perf_counter()
    ctx.writer.close()
    ctx.times["write"] = ctx.times.get("write", 0.0) + time.perf_counter() - t0
    if job.verify:
        inputs_unchanged(ctx)  # else a changed input would read as a wrong result
        from .verify import verify  # the check loads only for --verify
        t0 = time.perf_counter()
        local = input_view(ctx.header, ctx.start, ctx.stop)
        # a compensated sum is checked as the sum it is (its bound is the plain sum's, and more)
        ctx.verify_summary = verify(ctx.writer.temp_path, local, ctx.start, ctx.op.core, ctx.types,
                                    exclusive=job.exclusive, total_rows=ctx.header.rows, out_shape=ctx.header.shape,
                                    comm=ctx.comm)
        ctx.times["verify"] = time.perf_counter() - t0


def inputs_unchanged(ctx: Context) -> None:
    """Collective: refuse on every rank (the writer then removes the temporary output) if an input
    (the array, its segment flags, a recurrence's coefficients) was replaced, truncated or written
    to since its header was read (:func:`distscan.io.check_unchanged`: its inode, size and
    modification time).  Called just before the output is published, and before ``--verify``."""
    with collectively(ctx.comm):
        for h in (ctx.header, *(ctx.aux_headers or ())):
            if h is not None:
                _io.check_unchanged(h)


def run_empty(job: Job, ctx: Context) -> None:
    """An array with no elements (a zero-length axis anywhere): only the header is written.

    Nothing is read or scanned, whatever the number of rows (``(2**59, 0)`` is a
    valid, empty array); with ``verify`` the written header is checked.
    """
    with phase(ctx, "write"):
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
            from .verify import VerificationError  # as in finish: only for --verify
            raise VerificationError(f"verification failed: {problem}")
        ctx.verify_summary = {
            "passed": True, "checked_rows": 0, "skipped_rows": 0, "every_row_checked": True,
            "rank_boundaries_checked": 0, "rank_boundaries": 0, "max_abs_error": 0.0, "tolerance": "exact",
            "summary": f"the array has no elements: only the header ({ctx.header.shape} {ctx.types.result}) "
                       "was checked",
        }
        ctx.times["verify"] = time.perf_counter() - t0
