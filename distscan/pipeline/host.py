"""The CPU pipeline: the chunked skeleton (:mod:`distscan.pipeline.chunks`) with NumPy's compute
step (:class:`CpuEngine`)."""

from __future__ import annotations

import numpy as np

from . import chunks
from ..dist.plan import ScanPlan
from .chunks import WRITE_RING, Done, Layout
from .context import Context, Job, host_budget, phase
from .finish import finish


class CpuEngine:
    """The compute step on the host: :meth:`ScanPlan.seeded_scan` / ``add_offset`` on NumPy chunks.

    Buffers come from free lists (reused, so the pages are touched once); a chunk's
    input is scanned in place where the result has the input's dtype (inclusive scans).
    """

    name = "cpu"
    backend = "cpu"
    default_strategy = "scan_then_add"  # the add after the exchange is 10x cheaper than a scan (measured)

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
        return self.plan.local_carry(self.inp[k])

    def scan(self, k: int, seed, want_total: bool):
        x = self.inp.pop(k)
        if self.in_place:
            out = x
        else:
            obuf = self._take(self._free_out, self._out_bytes)
            out = obuf[: x.size * self.lay.out_dt.itemsize].view(self.lay.out_dt).reshape(x.shape)
        _, total = self.plan.seeded_scan(x, seed, out=out, want_total=want_total)
        if not self.in_place:
            self.done(k)  # the input's buffer
            self._own[k] = (obuf, self._free_out)
        self.out[k] = out
        return total

    def add(self, k: int, offset) -> None:
        self.plan.add_offset(self.out[k], offset)

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

    def times(self) -> dict:
        return {}

    def release(self) -> None:
        self._free_in.clear()
        self._free_out.clear()
        self.inp.clear()
        self.out.clear()
        self._own.clear()


def run_cpu(job: Job, ctx: Context) -> None:
    """The CPU pipeline: :mod:`distscan.pipeline.chunks` with the NumPy engine."""
    engine = CpuEngine()
    with phase(ctx, "plan"):
        plan = chunks.make_plan(job, ctx, engine.backend, engine.default_strategy)
        layout = chunks.layout_for(ctx)
        config = engine.configure(layout, plan, host_budget(job.memory_limit), final_now=ctx.rank == 0)
    ctx.backend_used = "cpu"
    ctx.host = {"mode": config["mode"], "strategy": plan.strategy, "chunk_rows": layout.chunk_rows}
    try:
        chunks.run_chunks(job, ctx, engine, plan, layout, config)
    finally:
        engine.release()
    ctx.times["scan"] = ctx.times.pop("compute")
    ctx.scan_timings.update({"scan": ctx.times["scan"], "exscan": ctx.times["exscan"]})
    finish(job, ctx)
