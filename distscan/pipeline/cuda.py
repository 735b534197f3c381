"""The GPU file pipeline (``--backend cuda``): the chunked skeleton of :mod:`distscan.pipeline.chunks`
with a GPU compute step.

Registered as ``distscan.pipeline.PIPELINES["cuda"]``.  Each rank binds its GPU
(:func:`distscan.gpus.bind_gpu`); chunks are read by a thread pool into pinned host
buffers, copied host -> device on the copy-in stream, scanned (or reduced) on the compute
stream, and copied device -> host on the copy-out stream into a ring of pinned buffers
that the write pool drains.  The chunking, the carries, the one exchange and the offset
applied on the way out are the CPU pipeline's (:func:`distscan.pipeline.chunks.run_chunks`); only
:class:`GpuEngine` differs.  The GPU memory budget (``--gpu-memory-limit``, default 85 %
of the device's free memory) picks the mode:

``resident`` (the shard's input and output fit in the budget)
    the shard stays on the device between the passes: rank 0 scans each chunk as it
    arrives and sends it back; the other ranks scan (``scan_then_add``) or reduce
    (``reduce_then_scan``, the default) each chunk, exchange, then add the offset
    (fused, just before the chunk's device -> host copy) or scan from it.  The file is
    read once and written once.

``streamed`` (the shard does not fit)
    two chunk slots on the device; *pass 1* reads and reduces each chunk (skipped on the
    last rank, whose total nobody needs); *exchange*; *pass 2* reads each chunk again,
    scans it seeded with the carry, copies it back and writes it.  Rank 0, whose offset is
    the identity, needs one pass only.

Times in the report: ``read`` and ``write`` (wall spans of the I/O threads), ``h2d``,
``scan``, ``d2h`` (GPU engine busy time from CUDA events), ``exscan`` (MPI), and the wall
of ``load`` / ``store`` (pass A / pass B); every phase ends in a collective agreement, so
a failure on any rank (out of device memory, a read error) raises the same error everywhere.

The device is reached through a small adapter, :class:`CudaDevice`; :class:`HostDevice`
implements the same calls with NumPy and the ``cpu`` backend so the chunking, carry
and agreement logic runs (and is tested) on machines without a GPU.
"""

from __future__ import annotations

import contextlib

import numpy as np

from . import chunks
from .context import parse_bytes, phase
from .finish import finish
from ..dist.plan import resolve_strategy
from ..backends import get_backend
from ..gpus import bind_gpu

#: Host chunk (bytes of input per chunk) for reads, host -> device and device -> host copies.
CHUNK_BYTES = chunks.CHUNK_BYTES
#: Share of the device's free memory used when no ``--gpu-memory-limit`` is given.
DEFAULT_BUDGET_SHARE = 0.85


# ----------------------------------------------------------------------------------------
# device adapters
# ----------------------------------------------------------------------------------------


class CudaDevice:
    """CuPy on the current device: three streams (copy-in, compute, copy-out), pinned buffers, events."""

    name = "cuda"

    def __init__(self):
        import cupy

        self.cp = cupy
        self.backend = get_backend("cuda")
        self.device_id = cupy.cuda.Device().id
        self.copy_in = cupy.cuda.Stream(non_blocking=True)
        self.compute = cupy.cuda.Stream(non_blocking=True)
        self.copy_out = cupy.cuda.Stream(non_blocking=True)
        self._spans = {"h2d": [], "scan": [], "d2h": []}
        self._pinned = []

    def free_bytes(self) -> int:
        self.cp.get_default_memory_pool().free_all_blocks()
        free, _ = self.cp.cuda.runtime.memGetInfo()
        return int(free)

    def empty(self, shape, dtype):
        return self.cp.empty(shape, dtype=dtype)

    def pinned(self, nbytes: int) -> np.ndarray:
        import cupyx
        buf = cupyx.empty_pinned((max(int(nbytes), 1),), dtype=np.uint8)
        self._pinned.append(buf)
        return buf

    def _copy(self, kind: str, dst_ptr: int, src_ptr: int, nbytes: int, stream):
        e0, e1 = self.cp.cuda.Event(), self.cp.cuda.Event()
        e0.record(stream)
        self.cp.cuda.runtime.memcpyAsync(dst_ptr, src_ptr, nbytes, 1 if kind == "h2d" else 2, stream.ptr)
        e1.record(stream)
        self._spans[kind].append((e0, e1))
        return e1

    def h2d(self, dst, src: np.ndarray):
        """Asynchronous host (pinned) -> device copy on the copy-in stream; returns its event."""
        return self._copy("h2d", dst.data.ptr, src.ctypes.data, src.nbytes, self.copy_in)

    def d2h(self, dst: np.ndarray, src, after=None):
        """Asynchronous device -> host (pinned) copy on the copy-out stream after event ``after``."""
        if after is not None:
            self.copy_out.wait_event(after)
        return self._copy("d2h", dst.ctypes.data, src.data.ptr, dst.nbytes, self.copy_out)

    @staticmethod
    def wait(event) -> None:
        if event is not None:
            event.synchronize()

    @contextlib.contextmanager
    def computing(self, after=None):
        """Run the block's kernels on the compute stream (after event ``after``); yields nothing.

        The block's span is timed with events; the end event is left in ``self.last``.
        """
        if after is not None:
            self.compute.wait_event(after)
        e0, e1 = self.cp.cuda.Event(), self.cp.cuda.Event()
        e0.record(self.compute)
        with self.compute:
            yield
        e1.record(self.compute)
        self._spans["scan"].append((e0, e1))
        self.last = e1

    def engine_times(self) -> dict:
        self.cp.cuda.Device().synchronize()
        return {k: sum(self.cp.cuda.get_elapsed_time(a, b) for a, b in v) * 1e-3 for k, v in self._spans.items()}

    def release(self) -> None:
        self.cp.cuda.Device().synchronize()
        self._pinned.clear()
        self.cp.get_default_memory_pool().free_all_blocks()


class HostDevice:
    """The same calls on NumPy with the ``cpu`` backend (synchronous): the pipeline's logic without a GPU."""

    name = "host"

    def __init__(self, free_bytes: int = 1 << 40):
        self.backend = get_backend("cpu")
        self._free = free_bytes
        self.device_id = None
        self.last = None
        self.copies = {"h2d": 0, "d2h": 0}

    def free_bytes(self) -> int:
        return self._free

    def empty(self, shape, dtype):
        return np.empty(shape, dtype)

    def pinned(self, nbytes: int) -> np.ndarray:
        return np.empty(max(int(nbytes), 1), np.uint8)

    def h2d(self, dst, src):
        dst.reshape(-1).view(np.uint8)[:] = src.reshape(-1).view(np.uint8)
        self.copies["h2d"] += src.nbytes
        return None

    def d2h(self, dst, src, after=None):
        dst.reshape(-1).view(np.uint8)[:] = src.reshape(-1).view(np.uint8)
        self.copies["d2h"] += dst.nbytes
        return None

    @staticmethod
    def wait(event) -> None:
        pass

    @contextlib.contextmanager
    def computing(self, after=None):
        yield

    def engine_times(self) -> dict:
        return {"h2d": 0.0, "scan": 0.0, "d2h": 0.0}

    def release(self) -> None:
        pass


# ----------------------------------------------------------------------------------------
# plan
# ----------------------------------------------------------------------------------------


def plan_chunks(rows: int, in_row_bytes: int, out_row_bytes: int, budget: int,
                chunk_bytes: int = CHUNK_BYTES) -> dict:
    """How a shard of ``rows`` rows is cut: ``{"mode", "chunk_rows", "device_bytes"}``.

    ``resident`` when the whole shard's input and output fit ``budget`` (plus a small
    reserve for the scan's tile state); else ``streamed`` with two (input, output)
    chunk slots that fit the budget.  Host chunks are at most ``chunk_bytes`` of input.

    Raises
    ------
    MemoryError
        If not even one row's input and output fit the budget twice.
    """
    per_row = in_row_bytes + out_row_bytes
    host_rows = max(1, chunk_bytes // max(in_row_bytes, out_row_bytes, 1))
    reserve = min(budget // 16, 64 << 20)
    usable = budget - reserve
    if rows * per_row <= usable:
        return {"mode": "resident", "chunk_rows": max(1, min(host_rows, rows)), "device_bytes": rows * per_row}
    slot_rows = usable // (2 * per_row)
    if slot_rows < 1:
        raise MemoryError(f"GPU memory budget of {budget} bytes is too small: one row needs {2 * per_row} "
                          f"bytes twice over (input and output, double-buffered) plus {reserve} in reserve")
    chunk_rows = max(1, min(host_rows, slot_rows))
    return {"mode": "streamed", "chunk_rows": chunk_rows, "device_bytes": 2 * chunk_rows * per_row}


def _chunks(rows: int, chunk_rows: int):
    return [(lo, min(rows, lo + chunk_rows)) for lo in range(0, rows, chunk_rows)]


class GpuEngine:
    """The compute step on a device (:class:`CudaDevice` or :class:`HostDevice`) for :func:`distscan.pipeline.chunks.run_chunks`."""

    default_strategy = resolve_strategy("auto")
    #: Pinned host buffers: reads in flight (the skeleton's read-ahead + 1), device -> host copies awaiting a write.
    IN_RING = chunks.READ_AHEAD + 1
    OUT_RING = 8

    def __init__(self, device):
        self.dev = device
        self.name = device.name
        self.backend = device.backend

    def configure(self, layout, plan, chunk_plan: dict, *, final_now: bool) -> dict:
        dev, lay = self.dev, layout
        self.lay, self.plan = lay, plan
        cr, w = lay.chunk_rows, lay.w
        self.resident = chunk_plan["mode"] == "resident"
        if self.resident:
            self.d_in = dev.empty((lay.n, w), lay.in_dt)
            self.d_out = dev.empty((lay.n, w), lay.out_dt)
        else:
            self.d_in = [dev.empty((cr, w), lay.in_dt) for _ in range(2)]
            self.d_out = [dev.empty((cr, w), lay.out_dt) for _ in range(2)]
        chunks = lay.chunks
        self.hin = [dev.pinned(cr * w * lay.in_dt.itemsize) for _ in range(min(self.IN_RING, max(len(chunks), 1)))]
        self.hout = [dev.pinned(cr * w * lay.out_dt.itemsize) for _ in range(min(self.OUT_RING, max(len(chunks), 1)))]
        self.out_slots = len(self.hout)
        self._in_events = [None] * len(self.hin)
        self.loaded, self.scanned = {}, {}
        return dict(chunk_plan)

    def _views(self, k):
        lo, hi = self.lay.chunks[k]
        if self.resident:
            return self.d_in[lo:hi], self.d_out[lo:hi]
        return self.d_in[k % 2][: hi - lo], self.d_out[k % 2][: hi - lo]

    def in_buffer(self, k: int):
        slot = k % len(self.hin)
        self.dev.wait(self._in_events[slot])  # the copy that last read this buffer is done
        return self.hin[slot]

    def put(self, k: int, rows, buf) -> None:
        d_in, _ = self._views(k)
        ev = self.dev.h2d(d_in, rows)
        self._in_events[k % len(self.hin)] = ev
        self.loaded[k] = ev

    def carry(self, k: int):
        d_in, _ = self._views(k)
        with self.dev.computing(after=self.loaded.get(k)):
            return self.plan.local_carry(d_in)

    def scan(self, k: int, seed, want_total: bool):
        d_in, d_out = self._views(k)
        with self.dev.computing(after=self.loaded.pop(k, None)):
            _, total = self.plan.seeded_scan(d_in, seed, out=d_out, want_total=want_total)
        self.scanned[k] = self.dev.last
        return total

    def add(self, k: int, offset) -> None:
        _, d_out = self._views(k)
        with self.dev.computing():
            self.plan.add_offset(d_out, offset)  # fused: just before this chunk leaves
        self.scanned[k] = self.dev.last

    def output(self, k: int):
        lo, hi = self.lay.chunks[k]
        _, d_out = self._views(k)
        out_dt, w = self.lay.out_dt, self.lay.w
        host = self.hout[k % len(self.hout)][: (hi - lo) * w * out_dt.itemsize].view(out_dt).reshape(hi - lo, w)
        self.dev.wait(self.dev.d2h(host, d_out, after=self.scanned.pop(k, None)))
        return chunks.Done(host)

    def done(self, k: int) -> None:
        pass

    def drop(self, k: int) -> None:
        self.loaded.pop(k, None)

    def release(self) -> None:
        self.d_in = self.d_out = None
        self.hin, self.hout = [], []
        self.dev.release()


def _budget(job, device) -> int:
    limit = getattr(job, "gpu_memory_limit", None)
    if limit:
        return parse_bytes(limit)
    return int(device.free_bytes() * DEFAULT_BUDGET_SHARE)


# ----------------------------------------------------------------------------------------
# the pipeline
# ----------------------------------------------------------------------------------------


def run_gpu(job, ctx, device=None) -> None:
    """``PIPELINES["cuda"]``: see the module docstring.  Collective over ``ctx.comm``."""

    if device is None:
        with phase(ctx, "bind"):
            resolve_strategy(job.strategy)
        binding = bind_gpu(ctx.comm, gpu=getattr(job, "gpu", None))  # collective, agreed
        with phase(ctx, "bind"):
            device = CudaDevice()
        ctx.gpu = {"device": binding.device, "source": binding.source, "shared": binding.shared}
    else:
        with phase(ctx, "bind"):
            resolve_strategy(job.strategy)
        ctx.gpu = {"device": device.device_id, "source": device.name, "shared": False}
    ctx.backend_used = "cuda" if device.name == "cuda" else device.name
    times = ctx.times
    for k in ("h2d", "scan", "d2h"):
        times.setdefault(k, 0.0)

    hdr, types = ctx.header, ctx.types
    n, w = ctx.stop - ctx.start, hdr.row_items
    engine = GpuEngine(device)
    state = {}
    try:
        with phase(ctx, "plan"):
            budget = _budget(job, device)
            plan = chunks.make_plan(job, ctx, device.backend, engine.default_strategy)
            chunk_plan = plan_chunks(n, hdr.row_bytes, w * types.result.itemsize, budget)
            layout = chunks.layout_for(ctx)
            layout.chunk_rows = chunk_plan["chunk_rows"]
            state["config"] = engine.configure(layout, plan, chunk_plan, final_now=ctx.rank == 0)
        mode = chunk_plan["mode"]
        modes = [mode] if ctx.comm is None else ctx.comm.allgather(mode)
        ctx.gpu.update({"mode": mode, "modes": sorted(set(modes)), "budget_bytes": budget,
                        "chunk_rows": chunk_plan["chunk_rows"], "strategy": plan.strategy})
        chunks.run_chunks(job, ctx, engine, plan, layout, state["config"])
    finally:
        eng = {}
        with contextlib.suppress(Exception):
            eng = device.engine_times()
        for k in ("h2d", "scan", "d2h"):
            times[k] += eng.get(k, 0.0)
        times.pop("compute", None)
        with contextlib.suppress(Exception):
            engine.release()
    finish(job, ctx)
