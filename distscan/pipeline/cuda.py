"""The GPU file pipeline: the CPU's chunked pipeline with each chunk's scan sent through this rank's GPU.

Registered as ``distscan.pipeline.PIPELINES["cuda"]`` (``--backend cuda``, and ``--backend auto``
where a GPU is visible).  A rank reads, holds and writes its rows exactly as the CPU pipeline
does (:mod:`distscan.pipeline.chunks`, :class:`distscan.pipeline.host.CpuEngine`: positional
reads and writes on thread pools, the same residency rule, one exchange); only the compute of a
chunk differs: host rows -> device -> the CUDA backend's seeded scan or reduction -> host rows
(:class:`distscan.pipeline.device_chunks.DeviceChunks`).

Start-up off the critical path: CUDA starts on a thread (:class:`~distscan.pipeline.gpu_start.GpuStart`)
while the first chunks are read.  A chunk that is ready before the GPU is scans on the host when
the result cannot depend on where it is computed (:func:`exact_anywhere`: integer sums, products,
bitwise and logical scans; max and min); otherwise the engine waits for the GPU (reading on
meanwhile), so that a file gives the same bytes on every run.  The scans that carry a state
(``--segments``, ``--compensated``, recurrences) always wait: the GPU's kernels associate a
float state's steps by tiles, the host's loops one row after another, so their chunks never mix
(a reverse plain scan follows the plain rule).  A chunk's auxiliary inputs go to the GPU with its
rows (:class:`~distscan.pipeline.device_chunks.DeviceChunks`).

Which GPU: :func:`distscan.gpus.device_or_host`.  Ranks beyond the GPUs of their node scan on the
host unless ``DISTSCAN_ALLOW_SHARED_GPU=1``.  The choice is each rank's own and changes no
collective: every rank runs the same chunked pipeline, and carries are host arrays whichever
processor made them.  With ``--backend cuda`` a rank that was given a GPU and could not start it
fails (agreed on every rank); with ``auto`` it scans on the host and the report says why.
Once every chunk of a rank is scanned, a start still under way is cancelled
(:meth:`GpuEngine.computed`): it ends at its next step instead of making buffers and loading
modules that no chunk will use.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import numpy as np

from ..dist.options import EXACT
from .chunks import READ_AHEAD
from .context import parse_bytes
from .gpu_env import gpu_visible, staging_from_env
from .host import CpuEngine, run_chunked

if TYPE_CHECKING:
    from .gpu_start import GpuStart

#: The operators that select one of their operands: exact in any association, in any dtype.
_SELECTING = frozenset({"max", "min", "nanmax", "nanmin"})


def exact_anywhere(op, types) -> bool:
    """Whether a chunk's scan gives the same bytes on the host and on a GPU, so that chunks may go to
    either as they come: the operators whose integer scans are exact in any association
    (:data:`distscan.dist.options.EXACT`, wrapping arithmetic included; not lcm, whose overflow
    is not associative, nor gcd, nor a declared operator), on integer and boolean accumulators;
    and the operators that select an operand (max, min, fmax, fmin) in any dtype.  Never a state
    operator (segmented, compensated, affine): those wait for the GPU."""
    return op.state is None and ((op.name in EXACT and types.acc.kind in "biu") or op.name in _SELECTING)


class GpuEngine(CpuEngine):
    """:class:`CpuEngine` whose chunks are computed on the GPU of ``start`` once it is up."""

    name = "cuda"
    # A chunk may be computed on the host or the GPU, which need not give the same bits (float
    # states): a prescan's output and a rescan's could differ.  Not prescanned.
    prescans = False

    def __init__(self, start: GpuStart, *, required: bool, exact: bool, note=None):
        self.start = start
        self.required = required    # --backend cuda: a GPU this rank was given must work
        self.exact = exact          # exact_anywhere: chunks may go to the host while CUDA starts
        self.note = note or (lambda text: None)
        self.chunks = {"gpu": 0, "host": 0}
        self.waited = 0.0           # seconds the compute waited for CUDA to start
        self.first_gpu = self.last_gpu = None
        self._said = None

    def configure(self, layout, plan, budget, *, final_now, initial=None):
        config = super().configure(layout, plan, budget, final_now=final_now, initial=initial)
        # A part held in memory is read ahead in full while the GPU starts (the reads are the
        # start-up's overlap); a streamed part keeps the skeleton's bounded ring.
        self.read_ahead = max(READ_AHEAD, len(layout.chunks)) if config["mode"] == "resident" else READ_AHEAD
        return config

    def _device(self):
        dev = self.start.ready()
        if dev is None and not (self.exact and not self.start.done):
            t0 = time.perf_counter()
            dev = self.start.wait()
            self.waited += time.perf_counter() - t0
        if dev is None and self.start.done:
            self._raise_if_required()
        if self.start.why != self._said:
            self._said = self.start.why
            self.note(f"GPU: {self.start.why}" if dev is not None or self.start.done else "GPU starting")
        return dev

    def _raise_if_required(self) -> None:
        if self.required and self.start.error is not None:
            raise RuntimeError(f"--backend cuda: {self.start.why}") from self.start.error

    def _compute(self, on_gpu, on_host):
        """One chunk's compute: ``on_gpu(dev)`` once the GPU is up, else ``on_host()``; counted and timed."""
        dev = self._device()
        if dev is None:
            self.chunks["host"] += 1
            return on_host()
        self.chunks["gpu"] += 1
        if self.first_gpu is None:
            self.first_gpu = time.perf_counter()
        result = on_gpu(dev)
        self.last_gpu = time.perf_counter()
        return result

    def _carry_rows(self, x: np.ndarray, aux=()):
        return self._compute(lambda dev: dev.carry(x, aux), lambda: super(GpuEngine, self)._carry_rows(x, aux))

    def _scan_rows(self, x: np.ndarray, seed, out: np.ndarray, want_total: bool, aux=()):
        return self._compute(lambda dev: dev.scan(x, seed, out, want_total, aux, self.initial),
                             lambda: super(GpuEngine, self)._scan_rows(x, seed, out, want_total, aux))

    def computed(self) -> None:
        """Every chunk is scanned: a GPU still starting is not needed, its start ends at its next
        checkpoint (:meth:`~distscan.pipeline.gpu_start.GpuStart.cancel`) while the writes drain."""
        self.start.cancel()

    def check(self) -> None:
        """``--backend cuda``: a GPU this rank was given must have started (its context up), even if
        every chunk went to the host while it started (waits for the start to end, which a cancel
        brings to its first checkpoint after the context)."""
        if self.required:
            self.start.wait()
            self._raise_if_required()

    def report(self, ctx) -> None:
        """This rank's GPU facts, spans and GPU times into ``ctx`` (after the chunks)."""
        # (a start this run cancelled, given a moment to stop at its checkpoint: the report then
        # names where; under load the report was read between the cancel and the checkpoint)
        self.start.settle(SETTLE_S)
        s, dev = self.start, self.start.ready()
        origin = ctx.t_start if ctx.t_start is not None else s.t0
        ctx.backend_used = "cuda" if self.chunks["gpu"] else "cpu"
        ctx.gpu = {"device": None if s.binding is None else s.binding.device, "why": s.why,
                   "shared": bool(s.binding is not None and s.binding.shared),
                   "chunks_on_gpu": self.chunks["gpu"], "chunks_on_host": self.chunks["host"],
                   "waited_for_gpu_s": round(self.waited, 6), "context_s": None if s.t1 is None else s.t1 - s.t0,
                   # s.steps once: a published mapping, never changed (a start not waited for may publish another)
                   "start_steps_s": {k: round(v, 6) for k, v in s.steps.items()},
                   "staging": None if dev is None else dev.staging, "slot_rows": None if dev is None else dev.slot_rows}
        if s.t1 is not None:
            ctx.spans["context"] = (s.t0 - origin, s.t1 - origin)
            ctx.times["context"] = s.t1 - s.t0
        if self.first_gpu is not None:
            ctx.spans["gpu"] = (self.first_gpu - origin, self.last_gpu - origin)
        for k, v in ({} if dev is None else dev.times()).items():
            ctx.times[k] = ctx.times.get(k, 0.0) + v

    def release(self) -> None:
        # The GPU first: it unregisters the host buffers (staging "register") before they are freed.
        self.start.close()
        super().release()


#: Seconds the report waits for a cancelled GPU start to reach its checkpoint (GpuStart.settle).
SETTLE_S = 0.25

#: ``--backend auto`` starts a rank's GPU only where the host's scan of its part would take longer
#: than this, for a scan whose chunks run on the host while CUDA starts (:func:`exact_anywhere`:
#: integer sums, max, min...).  Measured on the H200 host (2026-11-23, benchmarks/RESULTS.md, "The
#: command"): CUDA's start beside the reads took 1.2-1.9 s, and the GPU engine was slower than the
#: host's at 2^29 int64 on 1, 2 and 8 ranks.  On 2×H200 (2026-11-24, 2^29 and 2^30 int64 and
#: float32) cuda at 8 ranks took 1.09-1.33× the time of cpu at 8 ranks.  Again with CuPy imported
#: first and the short switch interval (one H200 host under MPICH, 2026-11-25, best of 2, 1 rank:
#: "The GPU engine against the host's at the same rank count"): int64 cuda 2.34 s against cpu 1.80
#: s at 2^29 (estimate 1.6 s) and 3.98 against 3.60 s at 2^30 (2.6 s): the GPU still saves nothing.
AUTO_MIN_HOST_SCAN_S = 2.0
#: The same for a scan whose chunks wait for the GPU (float sums and products, state scans): the
#: host's sequential float scan is the slow one there.  Same run: float32 cuda 1.96 s against cpu
#: 2.22 s at 2^29 (estimate 1.61 s) and 2.75 against 4.99 s at 2^30; smaller parts were not
#: measured, so the threshold sits just below the measured win.
AUTO_MIN_HOST_SCAN_WAITING_S = 1.5
#: The host's scan per element, for that estimate (``np.cumsum`` on the H200 host: 2.4 ns int64,
#: 3.1 ns float32, with the reads and writes running beside it).
HOST_SCAN_S_PER_ELEMENT = 3e-9


#: The GPU's algorithms for reverse scans and the scans that carry a state (``backends.cuda.plans.ext_device``).
EXTENDED_ALGORITHMS = ("auto", "lookback", "lookahead")


def check_algorithm(job, op) -> None:
    """Refuse, in the command's words, an ``--algorithm`` that the GPU's reverse and state scans do not
    take (the CUDA backend's refusal at the first chunk said ``algorithm='blelloch'``)."""
    algorithm = getattr(job, "algorithm", "auto")
    if (op.state is not None or getattr(job, "reverse", False)) and algorithm not in EXTENDED_ALGORITHMS:
        raise ValueError(f"--algorithm {algorithm} is for plain forward scans on a GPU; --reverse, --segments, "
                         f"--compensated and recurrences take {', '.join(EXTENDED_ALGORITHMS)} there")


def engine_for(job, ctx, layout, plan, local: tuple, *, required: bool, **stand_ins):
    """This rank's GPU engine, CUDA started now on its own thread (``stand_ins``: see
    :func:`~distscan.pipeline.gpu_start.starter`)."""
    check_algorithm(job, ctx.op)
    from .gpu_start import starter  # CUDA's start-up code loads only on a rank that takes its GPU

    budget = parse_bytes(job.gpu_memory_limit) if job.gpu_memory_limit else None
    start = starter(ctx, job, layout, plan.strategy, local=local, budget=budget, staging=staging_from_env(),
                    required=required, **stand_ins)
    return GpuEngine(start, required=required, exact=exact_anywhere(ctx.op, ctx.types))


def run_gpu(job, ctx, **stand_ins) -> None:
    """``PIPELINES["cuda"]``: every rank starts its GPU (or scans on the host beyond the GPUs).
    ``stand_ins`` (``chunks_class=``, ``count=``) replace the GPU in tests without one."""
    ctx.backend_why = "--backend cuda"
    run_chunked(job, ctx, lambda layout, plan, local: engine_for(job, ctx, layout, plan, local, required=True,
                                                                 **stand_ins))


def run_auto(job, ctx, *, visible=gpu_visible, **stand_ins) -> None:
    """``PIPELINES["auto"]``: a rank whose part is large enough and that sees a GPU takes the GPU
    engine (CUDA starting while it reads), every other rank the CPU's.  Each rank decides alone:
    the engines make the same collectives."""
    def make(layout, plan, local):
        likely, why = visible()
        host_s = layout.n * layout.w * HOST_SCAN_S_PER_ELEMENT
        waits = not exact_anywhere(ctx.op, ctx.types)  # its chunks wait for the GPU
        least = AUTO_MIN_HOST_SCAN_WAITING_S if waits else AUTO_MIN_HOST_SCAN_S
        if likely and host_s < least:
            likely, why = False, (f"a GPU is visible, but the host scans this rank's part in about {host_s:.2f} s, "
                                  f"less than CUDA takes to start and repay ({least} s for a scan whose chunks "
                                  f"{'wait for the GPU' if waits else 'run on the host while it starts'})")
        ctx.backend_why = f"auto: {why}"
        if not likely:
            return CpuEngine()
        return engine_for(job, ctx, layout, plan, local, required=False, **stand_ins)

    run_chunked(job, ctx, make)
