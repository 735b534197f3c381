"""The CPU pipeline: the chunked skeleton (:mod:`distscan.pipeline.chunks`) with NumPy's compute
step (:class:`CpuEngine`)."""

from __future__ import annotations

import numpy as np

from . import chunks
from ..dist.plan import ScanPlan
from .chunks import WRITE_RING, Done, Layout
from .context import Context, Job, host_budget, phase
from .finish import finish
from ..gpus import node_position


class CpuEngine:
    """The compute step on the host: :meth:`ScanPlan.seeded_scan` / ``add_offset`` on NumPy chunks.

    Buffers come from free lists (reused, so the pages are touched once); a chunk's
    input is scanned in place where the result has the input's dtype (inclusive scans).
    """

    name = "cpu"
    backend = "cpu"
    default_strategy = "scan_then_add"  # the add after the exchange is 10x cheaper than a scan (measured)
    read_ahead = chunks.READ_AHEAD      # chunks read ahead of the compute

    def configure(self, layout: Layout, plan: ScanPlan, budget: int, *, final_now: bool) -> dict:
        self.lay, self.plan = layout, plan
        self.in_place = (not plan.exclusive) and layout.in_dt == layout.out_dt
        self._in_bytes = max(layout.chunk_rows * layout.w * layout.in_dt.itemsize, 1)
        self._out_bytes = max(layout.chunk_rows * layout.w * layout.out_dt.itemsize, 1)
        self._free_in, self._free_out = [], []
        self.inp, self.out, self._own = {}, {}, {}
        n, w = layout.n, layout.w
        holds_output = final_now or plan.strategy == "scan_then_add" or self.in_place
        if holds_output and not self.in_place:
            held = n * w * layout.out_dt.itemsize  # rank 0: what waits for the disk, at worst all
        else:
            held = n * w * layout.in_dt.itemsize
        resident = held <= budget
        # Outputs in flight: all of a held part, else a ring of buffers reused as writes finish.
        self.out_slots = (1 << 62) if resident and holds_output else WRITE_RING
        return {"mode": "resident" if resident else "streamed", "chunk_rows": layout.chunk_rows,
                "held_bytes": held if resident else 0}

    @staticmethod
    def _take(free: list, nbytes: int) -> np.ndarray:
        return free.pop() if free else np.empty(nbytes, np.uint8)

    def in_buffer(self, k: int) -> np.ndarray:
        return self._take(self._free_in, self._in_bytes)

    def put(self, k: int, rows: np.ndarray, buf: np.ndarray) -> None:
        self.inp[k] = rows
        self._own[k] = (buf, self._free_in)

    def carry(self, k: int):
        return self._carry_rows(self.inp[k])

    def scan(self, k: int, seed, want_total: bool):
        x = self.inp.pop(k)
        if self.in_place:
            out = x
        else:
            obuf = self._take(self._free_out, self._out_bytes)
            out = obuf[: x.size * self.lay.out_dt.itemsize].view(self.lay.out_dt).reshape(x.shape)
        total = self._scan_rows(x, seed, out, want_total)
        if not self.in_place:
            self.done(k)  # the input's buffer
            self._own[k] = (obuf, self._free_out)
        self.out[k] = out
        return total

    def add(self, k: int, offset) -> None:
        self.plan.add_offset(self.out[k], offset)

    # The compute of one chunk's host rows: NumPy here; the GPU engine sends them through a GPU.
    def _carry_rows(self, x: np.ndarray):
        return self.plan.local_carry(x)

    def _scan_rows(self, x: np.ndarray, seed, out: np.ndarray, want_total: bool):
        """``out`` (host rows, possibly ``x`` itself) = the scan of ``x`` from ``seed``; the total if wanted."""
        return self.plan.seeded_scan(x, seed, out=out, want_total=want_total)[1]

    def output(self, k: int):
        return Done(self.out.pop(k))

    def done(self, k: int) -> None:
        """Chunk ``k`` is written (or its input used): its buffer is free again."""
        own = self._own.pop(k, None)
        if own is not None:
            own[1].append(own[0])

    def drop(self, k: int) -> None:
        """Chunk ``k``'s input is no longer needed (pass 1 of a streamed part)."""
        self.inp.pop(k, None)
        self.done(k)

    def check(self) -> None:
        """Raise what went wrong outside the chunks (nothing, on the host)."""

    def report(self, ctx: Context) -> None:
        """Put this rank's engine facts into ``ctx`` (the host has none beyond ``ctx.host``)."""
        ctx.backend_used = "cpu"

    def release(self) -> None:
        self._free_in.clear()
        self._free_out.clear()
        self.inp.clear()
        self.out.clear()
        self._own.clear()


def run_cpu(job: Job, ctx: Context) -> None:
    """The CPU pipeline: :mod:`distscan.pipeline.chunks` with the NumPy engine."""
    run_chunked(job, ctx, lambda layout, plan, local: CpuEngine())


def run_chunked(job: Job, ctx: Context, make_engine) -> None:
    """The chunked pipeline (:mod:`distscan.pipeline.chunks`) with the engine that
    ``make_engine(layout, plan, (local rank, local size))`` makes on this rank (None for the position
    under ``--backend cpu``, where no engine needs it).

    Every rank makes the same collectives whichever engine it runs (the choice of engine is a
    rank's own: a GPU of its own or not), and the carries are host arrays from either.
    """
    # The node position is for the GPU engines; --backend cpu is every rank's (the command line),
    # so every rank skips this collective alike.
    local = None if job.backend == "cpu" else node_position(ctx.comm)
    engine = None
    try:
        with phase(ctx, "plan"):
            plan = chunks.make_plan(job, ctx, CpuEngine.backend, CpuEngine.default_strategy)
            layout = chunks.layout_for(ctx)
            engine = make_engine(layout, plan, local)
            config = engine.configure(layout, plan, host_budget(job.memory_limit), final_now=ctx.rank == 0)
        ctx.host = {"mode": config["mode"], "strategy": plan.strategy, "chunk_rows": layout.chunk_rows,
                    "engine": engine.name}
        chunks.run_chunks(job, ctx, engine, plan, layout, config)
        with phase(ctx, "check"):
            engine.check()  # a failure that no chunk met (a GPU that --backend cuda asked for)
        engine.report(ctx)
    finally:
        if engine is not None:
            engine.release()
    ctx.times["scan"] = ctx.times.pop("compute")
    ctx.scan_timings.update({"scan": ctx.times["scan"], "exscan": ctx.times["exscan"]})
    finish(job, ctx)
