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
    A chunk's auxiliary inputs (``layout.aux``) come with it, read in the file's dtype, and are
    scanned in the form the plan reads them (bool flags, coefficients in the accumulator dtype:
    converted into buffers of their own where the file holds another dtype); they are freed
    once the chunk is scanned or dropped.
    """

    name = "cpu"
    backend = "cpu"
    default_strategy = "scan_then_add"  # the add after the exchange is 10x cheaper than a scan (measured)
    read_ahead = chunks.READ_AHEAD      # chunks read ahead of the compute
    # Whether a part may be prescanned (configure).  Assumption: a chunk's scan is a function of
    # its rows, auxiliary rows, the seed's bytes and the projected initial alone (the host's
    # loops are), so a rescan from a seed of the same bytes as the prescan's writes the same output.
    prescans = True

    def configure(self, layout: Layout, plan: ScanPlan, budget: int, *, final_now: bool, initial=None) -> dict:
        """Buffers, the mode (``resident`` if what this rank holds fits ``budget`` bytes, else
        ``streamed``) and the write slots; ``initial``: a projected initial value
        (:func:`distscan.pipeline.chunks.initial_row`), given to every chunk's scan."""
        self.lay, self.plan, self.initial = layout, plan, initial
        # nancumsum/nancumprod of floats into an integer --dtype: NaN is the identity before the
        # conversion (Op.nan_replacement), as the API's calls give it
        self._nan_first = plan.op.core.nan_replacement(layout.in_dt, plan.types.compute)
        # --dtype float16 of wider input: every input is rounded to float16 before the float32
        # accumulator sees it, as numpy.cumsum(dtype=) and the API's calls (_call.Part) do: once,
        # when the chunk comes (put), into a buffer of its own; the file's rows go back at once
        self._round_to = plan.types.compute if plan.types.rounds_inputs else None
        self._free_rounded = []
        self._rounded_bytes = max(layout.chunk_rows * layout.w * (self._round_to.itemsize if self._round_to else 0), 1)
        self.in_place = (not plan.exclusive) and layout.in_dt == layout.out_dt
        self._in_bytes = max(layout.chunk_rows * layout.w * layout.in_dt.itemsize, 1)
        self._out_bytes = max(layout.chunk_rows * layout.w * layout.out_dt.itemsize, 1)
        self._free_in, self._free_out = [], []
        # per auxiliary input: raw buffers (the file's dtype), converted ones (the scan's), sizes
        self._free_aux = [([], []) for _ in layout.aux]
        self._aux_bytes = [(max(layout.chunk_rows * a.header.row_bytes, 1), max(layout.chunk_rows * a.row_bytes, 1))
                           for a in layout.aux]
        self.inp, self.out, self._own = {}, {}, {}
        self.aux, self._aux_own = {}, {}
        self._out_of = {}  # a prescanned chunk's own output buffer, until it settles
        n, w = layout.n, layout.w
        aux_bytes = n * sum(a.row_bytes for a in layout.aux)
        holds_output = final_now or plan.strategy == "scan_then_add" or self.in_place
        if holds_output and not self.in_place:
            held = n * w * layout.out_dt.itemsize  # rank 0: what waits for the disk, at worst all
        else:
            held = n * w * layout.in_dt.itemsize
        if not final_now and plan.strategy == "reduce_then_scan":
            held += aux_bytes  # kept from the carry to the scan
        # A rank after the first whose scan has flags or coefficients scans its part before the
        # exchange (prescan) when input, auxiliary inputs and output all fit: after the exchange
        # it rescans chunks only until its running state is the one the prescan had (a segment
        # started, or the coefficients' product vanished; see chunks.run_chunks).
        prescan_held = n * w * (layout.in_dt.itemsize + layout.out_dt.itemsize) + aux_bytes
        prescan = (self.prescans and not final_now and plan.strategy == "reduce_then_scan" and n > 0
                   and plan.op.state is not None and bool(plan.op.state.aux) and not plan.carries.flagged
                   and prescan_held <= budget)
        if prescan:
            held, holds_output = prescan_held, True
        resident = held <= budget
        # Outputs in flight: all of a held part, else a ring of buffers reused as writes finish.
        self.out_slots = (1 << 62) if resident and holds_output else WRITE_RING
        return {"mode": "resident" if resident else "streamed", "chunk_rows": layout.chunk_rows,
                "held_bytes": held if resident else 0, "prescan": prescan}

    @staticmethod
    def _take(free: list, nbytes: int) -> np.ndarray:
        return free.pop() if free else np.empty(nbytes, np.uint8)

    def in_buffer(self, k: int) -> np.ndarray:
        return self._take(self._free_in, self._in_bytes)

    def aux_buffer(self, k: int, i: int) -> np.ndarray:
        """A buffer for chunk ``k``'s rows of auxiliary input ``i``, in the file's dtype."""
        return self._take(self._free_aux[i][0], self._aux_bytes[i][0])

    def put(self, k: int, rows: np.ndarray, buf: np.ndarray, aux=()) -> None:
        """Chunk ``k``'s rows (in ``buf``) and its auxiliary inputs ``[(rows, buffer), ...]``."""
        if self._nan_first is not None:
            np.copyto(rows, self._nan_first, where=np.isnan(rows))
        if self._round_to is None:
            self._own[k] = (buf, self._free_in)
        else:  # as rows.astype(float16)
            rows, self._own[k] = self._converted(rows, self._round_to, buf, self._free_in, self._free_rounded,
                                                 self._rounded_bytes)
        self.inp[k] = rows
        if self.lay.aux:
            owned = []
            self.aux[k] = tuple(self._scan_form(i, a, abuf, owned) for i, (a, abuf) in enumerate(aux))
            self._aux_own[k] = owned

    def _scan_form(self, i: int, rows: np.ndarray, buf: np.ndarray, owned: list) -> np.ndarray:
        """Auxiliary input ``i``'s rows as the plan scans them (a flag integer != 0 is True; a
        coefficient cast as NumPy casts it); the buffers it holds go into ``owned``."""
        spec, (raw, conv) = self.lay.aux[i], self._free_aux[i]
        shape = spec.shape(rows.shape[0])
        if rows.dtype == spec.dt:
            owned.append((buf, raw))
            return rows.reshape(shape)
        out, held = self._converted(rows.reshape(shape), spec.dt, buf, raw, conv, self._aux_bytes[i][1])
        owned.append(held)
        return out

    def _converted(self, rows: np.ndarray, dt: np.dtype, buf: np.ndarray, raw_free: list, conv_free: list,
                   conv_bytes: int):
        """``rows`` cast to ``dt`` as NumPy casts (a flag: ``!= 0``) in a buffer of ``conv_free``'s
        pool, and that (buffer, pool) to give back when the chunk is done; the file's buffer ``buf``
        goes back to ``raw_free`` at once (its rows are no longer needed)."""
        cbuf = self._take(conv_free, conv_bytes)
        out = cbuf[: rows.size * dt.itemsize].view(dt).reshape(rows.shape)
        if dt == np.bool_:
            np.not_equal(rows, 0, out=out)
        else:
            np.copyto(out, rows, casting="unsafe")
        raw_free.append(buf)
        return out, (cbuf, conv_free)

    def _free_aux_of(self, k: int) -> None:
        self.aux.pop(k, None)
        for buf, free in self._aux_own.pop(k, ()):
            free.append(buf)

    def carry(self, k: int):
        return self._carry_rows(self.inp[k], self.aux.get(k, ()))

    def scan(self, k: int, seed, want_total: bool):
        x = self.inp.pop(k)
        aux = self.aux.get(k, ())
        if self.in_place:
            out = x
        else:
            obuf = self._take(self._free_out, self._out_bytes)
            out = self._out_view(obuf, x)
        total = self._scan_rows(x, seed, out, want_total, aux)
        self._free_aux_of(k)
        if not self.in_place:
            self.done(k)  # the input's buffer
            self._own[k] = (obuf, self._free_out)
        self.out[k] = out
        return total

    def _out_view(self, obuf: np.ndarray, x: np.ndarray) -> np.ndarray:
        """The output rows of chunk rows ``x`` in the output buffer ``obuf``."""
        return obuf[: x.size * self.lay.out_dt.itemsize].view(self.lay.out_dt).reshape(x.shape)

    def add(self, k: int, offset, first: bool = False) -> None:
        """``offset op`` every row of chunk ``k`` (``scan_then_add``'s finish); ``first``: the part's
        first chunk in scan order, whose first row in an exclusive scan is the offset itself (the
        local scan put the identity there, and ``offset op identity`` is not the offset for every
        operator: ``gcd(-6, 0)`` is 6, ``-0.0 + 0.0`` is 0.0)."""
        out, plan = self.out[k], self.plan
        plan.add_offset(out, offset)
        if first and plan.exclusive and offset is not None and plan.op.state is None and not plan.carries.flagged \
                and out.shape[0]:
            row = -1 if plan.reverse else 0
            out[row] = np.asarray(offset).reshape(out[row].shape)

    # A prescanned part (configure's "prescan"): each chunk is scanned into an output buffer of its
    # own before the exchange, keeping its input and auxiliary inputs for a rescan from the true
    # seed after it, until settle() frees them.
    def prescan(self, k: int, seed):
        """Chunk ``k`` scanned from ``seed`` (the running state of this part, None at its start)
        into its own output; its total (the running state after it)."""
        x = self.inp[k]
        obuf = self._take(self._free_out, self._out_bytes)
        self._out_of[k] = obuf
        self.out[k] = self._out_view(obuf, x)
        return self._scan_rows(x, seed, self.out[k], True, self.aux.get(k, ()))

    def rescan(self, k: int, seed, want_total: bool):
        """Prescanned chunk ``k`` scanned again from ``seed``, into the same output."""
        return self._scan_rows(self.inp[k], seed, self.out[k], want_total, self.aux.get(k, ()))

    def settle(self, k: int) -> None:
        """Prescanned chunk ``k``'s output is final: its inputs' buffers are free, its output's
        is freed once written (:meth:`done`)."""
        self.inp.pop(k, None)
        self._free_aux_of(k)
        self.done(k)
        self._own[k] = (self._out_of.pop(k), self._free_out)

    # The compute of one chunk's host rows: NumPy here; the GPU engine sends them through a GPU.
    def _carry_rows(self, x: np.ndarray, aux=()):
        return self.plan.local_carry(x, aux)

    def _scan_rows(self, x: np.ndarray, seed, out: np.ndarray, want_total: bool, aux=()):
        """``out`` (host rows, possibly ``x`` itself) = the scan of ``x`` (and its auxiliary inputs
        ``aux``) from ``seed``; the total if wanted."""
        return self.plan.seeded_scan(x, seed, out=out, want_total=want_total, aux=aux, initial=self.initial)[1]

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
        self._free_aux_of(k)
        self.done(k)

    def computed(self) -> None:
        """Every chunk is scanned (only writes remain): nothing to let go of on the host."""

    def check(self) -> None:
        """Raise what went wrong outside the chunks (nothing, on the host)."""

    def report(self, ctx: Context) -> None:
        """Put this rank's engine facts into ``ctx`` (the host has none beyond ``ctx.host``)."""
        ctx.backend_used = "cpu"

    def release(self) -> None:
        self._free_in.clear()
        self._free_rounded.clear()
        self._free_out.clear()
        self._free_aux.clear()
        self.inp.clear()
        self.out.clear()
        self._own.clear()
        self.aux.clear()
        self._aux_own.clear()
        self._out_of.clear()


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
            budget = host_budget(job.memory_limit)
            layout = chunks.layout_for(ctx, budget=budget)
            initial = chunks.initial_row(job, plan)
            engine = make_engine(layout, plan, local)
            config = engine.configure(layout, plan, budget, final_now=plan.first, initial=initial)
        ctx.host = {"mode": config["mode"], "prescan": config["prescan"], "strategy": plan.strategy,
                    "chunk_rows": layout.chunk_rows,
                    "engine": engine.name, "reverse": plan.reverse,
                    "aux_inputs": [a.name for a in layout.aux]}
        chunks.run_chunks(job, ctx, engine, plan, layout, config, initial)
        with phase(ctx, "check"):
            engine.check()  # a failure that no chunk met (a GPU that --backend cuda asked for)
        engine.report(ctx)
    finally:
        if engine is not None:
            engine.release()
    ctx.times["scan"] = ctx.times.pop("compute")
    ctx.scan_timings.update({"scan": ctx.times["scan"], "exscan": ctx.times["exscan"]})
    finish(job, ctx)
