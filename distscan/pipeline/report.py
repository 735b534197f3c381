"""The report of a file scan: every rank's times and facts gathered, the maximum of each phase."""

from __future__ import annotations

import os

from .context import Context, Job


def report(job: Job, ctx: Context) -> dict:
    hdr, types = ctx.header, ctx.types
    times = dict(ctx.times)
    scan_phases = {k: float(v) for k, v in ctx.scan_timings.items() if isinstance(v, (int, float))}
    # One gather of everything, whatever each rank ran (a GPU of its own or not): the same
    # collective on every rank.
    local = (times, scan_phases, ctx.stop - ctx.start, dict(ctx.spans), ctx.host, ctx.backend_used, ctx.gpu)
    gathered = [local] if ctx.comm is None else ctx.comm.allgather(local)
    used = [g[5] for g in gathered]
    gpus = [g[6] for g in gathered]
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
        "reverse": job.reverse,
        "segments": None if job.segments is None else os.path.abspath(job.segments),
        "compensated": job.compensated,
        "coefficients": None if job.coefficients is None else os.path.abspath(job.coefficients),
        "shape": list(hdr.shape),
        "elements": n,
        "input_dtype": str(hdr.dtype),
        "result_dtype": str(types.result),
        "accumulator_dtype": str(types.acc),
        "input_bytes": in_bytes,
        "output_bytes": out_bytes,
        "ranks": ctx.size,
        "rows_per_rank": {"min": min(rows), "max": max(rows)},
        "backend": {"requested": job.backend, "used": "+".join(sorted(set(used), reverse=True)),
                    "ranks": {b: [r for r, u in enumerate(used) if u == b] for b in sorted(set(used))},
                    "why": ctx.backend_why or job.backend},
        "strategy": job.strategy,
        "hierarchy": job.hierarchy,
        "times_s": {
            "read": tmax.get("read", 0.0),
            "scan": scan_t,
            "scan_phases": smax,
            "write": tmax.get("write", 0.0),
            "verify": tmax.get("verify"),
            **{k: tmax[k] for k in ("startup", "context", "h2d", "d2h", "exscan", "load", "store", "read_busy", "write_busy")
               if k in tmax},
            # a job with GPUs reports their copies, 0.0 where every chunk ran on the host (integer sums
            # while CUDA started): the same keys whichever engine took the chunks
            **({k: tmax.get(k, 0.0) for k in ("h2d", "d2h")} if any(g is not None for g in gpus) else {}),
            "open": tmax.get("open", 0.0),
            "total": total,
            "spans": {k: [round(a, 6), round(b, 6)] for k, (a, b) in sorted(spans.items(), key=lambda i: i[1])},
            "note": "maximum over ranks of each phase; read and write: wall span from the first to the last "
                    "read (write) of a rank, overlapping the other phases; read_busy/write_busy: summed over "
                    "the I/O threads; scan: compute; startup: the process's life before the command began (interpreter, "
                    "imports, MPI_Init); context: CUDA's start, on a thread beside the reads; spans: [start, end] of each phase over all ranks, in "
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
        **({"gpu": {"per_rank": gpus,
                    "note": "per rank: its GPU (None: it scanned on the host) and why, chunks on each, the "
                            "CUDA start (context_s, spans.context) and the end of each of its steps reached, "
                            "in seconds after it began (start_steps_s: import = CuPy and the device count, "
                            "context = the device's context, modules = its buffers and kernels), the wait "
                            "for it; times h2d, scan, d2h: "
                            "GPU busy time (CUDA events), max over ranks"}}
           if any(g is not None for g in gpus) else {}),
    }
