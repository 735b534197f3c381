"""The GPU file pipeline (``--backend cuda``): pinned chunks, copy streams, the add fused on the way out.

Registered as ``distscan.pipeline.PIPELINES["cuda"]``.  Each rank binds its GPU
(:func:`distscan._binding.bind_gpu`), then scans its block of rows ``[start, stop)``
of the input in one of two modes, chosen from the GPU memory budget
(``--gpu-memory-limit``, default 85 % of the device's free memory):

``resident`` (the shard's input and output fit in the budget)
    *load*: the shard is read from the file in chunks into two pinned host buffers
    (the next chunk is read while the previous one travels host -> device on the
    copy-in stream); *scan*: one launch over the shard on the compute stream
    (``scan_then_add``: local scan, total from the accumulator; ``reduce_then_scan``:
    reduce, then after the ``Exscan`` a scan seeded with the offset); *exscan*: the
    totals through MPI (:func:`distscan.hierarchy.exclusive_prefix`); *store*: per
    chunk, the offset is added on the device (``scan_then_add``) just before the
    chunk's device -> host copy on the copy-out stream, and the previous chunk is
    written to the file meanwhile.  Bytes through device memory: 4N for
    ``scan_then_add`` and 3N for ``reduce_then_scan`` -- both far below the disk and
    PCIe times, which are the real cost; the file is read once and written once.

``streamed`` (the shard does not fit)
    Chunks that fit the budget twice over (double-buffered), two passes over the
    file: *pass 1* reads and reduces each chunk (skipped on the last rank, whose
    total nobody needs); *exscan*; *pass 2* reads each chunk again, scans it seeded
    with the carry (the offset, then the running total of the chunks before it),
    copies it back and writes it.  The input is read twice (the second time often
    from the page cache); nothing is held beyond two chunks.

Times in the report: ``read`` and ``write`` (disk, host thread), ``h2d``, ``scan``,
``d2h`` (GPU engine busy time from CUDA events), ``exscan`` (MPI), and the wall of
``load`` / ``store``; every phase ends in a collective agreement, so a failure on
any rank (out of device memory, a read error) raises the same error everywhere.

The device is reached through a small adapter, :class:`CudaDevice`; :class:`HostDevice`
implements the same calls with NumPy and the ``cpu`` backend so the chunking, carry
and agreement logic runs (and is tested) on machines without a GPU.
"""

from __future__ import annotations

import contextlib
import re
import time

import numpy as np

from . import io as _io
from ._core import ScanPlan, resolve_strategy

#: Host chunk (bytes of input per chunk) for reads, host -> device and device -> host copies.
CHUNK_BYTES = 64 << 20
#: Share of the device's free memory used when no ``--gpu-memory-limit`` is given.
DEFAULT_BUDGET_SHARE = 0.85

_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?)\s*([kmgt]?)(i?b?)\s*$", re.IGNORECASE)


def parse_bytes(text) -> int:
    """``"512M"``, ``"2G"``, ``"1.5GiB"``, ``"1000000"`` -> bytes (K/M/G/T are powers of 1024).

    Raises
    ------
    ValueError
        For anything else, or a size below one byte.
    """
    if isinstance(text, (int, np.integer)):
        value = int(text)
    else:
        m = _SIZE.match(str(text))
        if not m:
            raise ValueError(f"bad size {text!r}: use bytes or a number with K, M, G or T (e.g. 512M, 2G)")
        value = int(float(m.group(1)) * (1 << (10 * " KMGT".index(m.group(2).upper() or " "))))
    if value < 1:
        raise ValueError(f"size must be at least 1 byte, got {text!r}")
    return value


# ----------------------------------------------------------------------------------------
# device adapters
# ----------------------------------------------------------------------------------------

class CudaDevice:
    """CuPy on the current device: three streams (copy-in, compute, copy-out), pinned buffers, events."""

    name = "cuda"

    def __init__(self):
        import cupy

        from .backends import get_backend
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
        from .backends import get_backend
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


class _Reader:
    """Reads rows of this rank's block into pinned buffers (native byte order), counting time."""

    def __init__(self, ctx, times):
        self.hdr = ctx.header
        self.start = ctx.start
        self.native = self.hdr.dtype.newbyteorder("=")
        self.times = times
        self.f = open(self.hdr.path, "rb", buffering=0)

    def read(self, lo: int, hi: int, buf: np.ndarray, progress=None) -> np.ndarray:
        t0 = time.perf_counter()
        nbytes = (hi - lo) * self.hdr.row_bytes
        view = memoryview(buf[:nbytes])
        pos = self.hdr.offset + (self.start + lo) * self.hdr.row_bytes
        done = 0
        while done < nbytes:
            step = min(_io.CHUNK_BYTES, nbytes - done)
            got = self.f.readinto(view[done: done + step]) if self.f.tell() == pos + done else None
            if got is None:
                self.f.seek(pos + done)
                got = self.f.readinto(view[done: done + step])
            if not got:
                raise ValueError(f"{self.hdr.path} is truncated: file ended {nbytes - done} bytes early "
                                 f"while reading rows [{self.start + lo}, {self.start + hi})")
            done += got
        rows = buf[:nbytes].view(self.hdr.dtype).reshape(hi - lo, self.hdr.row_items)
        if not self.hdr.dtype.isnative:
            rows = rows.byteswap(inplace=True).view(self.native)
        self.times["read"] += time.perf_counter() - t0
        if progress is not None:
            progress(nbytes)
        return rows

    def close(self):
        self.f.close()


def _budget(job, device) -> int:
    limit = getattr(job, "gpu_memory_limit", None)
    if limit:
        return parse_bytes(limit)
    return int(device.free_bytes() * DEFAULT_BUDGET_SHARE)


def _scanner(job, ctx, device) -> ScanPlan:
    """The distributed scan of this job's rows, on the device's backend (:mod:`distscan._core`)."""
    hdr = ctx.header
    return ScanPlan(ctx.op, hdr.dtype.newbyteorder("="), dtype=job.dtype, exclusive=job.exclusive,
                    trailing=tuple(hdr.shape[1:]), comm=ctx.comm, backend=device.backend, strategy=job.strategy,
                    hierarchy=job.hierarchy)


# ----------------------------------------------------------------------------------------
# the pipeline
# ----------------------------------------------------------------------------------------

def run_gpu(job, ctx, device=None) -> None:
    """``PIPELINES["cuda"]``: see the module docstring.  Collective over ``ctx.comm``."""
    from ._binding import bind_gpu
    from .pipeline import _phase

    if device is None:
        with _phase(ctx, "bind"):
            strategy = resolve_strategy(job.strategy)
        binding = bind_gpu(ctx.comm, gpu=getattr(job, "gpu", None))  # collective, agreed
        with _phase(ctx, "bind"):
            device = CudaDevice()
        ctx.gpu = {"device": binding.device, "source": binding.source, "shared": binding.shared}
    else:
        with _phase(ctx, "bind"):
            strategy = resolve_strategy(job.strategy)
        ctx.gpu = {"device": device.device_id, "source": device.name, "shared": False}
    ctx.backend_used = "cuda" if device.name == "cuda" else device.name
    times = ctx.times
    for k in ("read", "write", "exscan", "h2d", "scan", "d2h"):
        times.setdefault(k, 0.0)

    hdr, types = ctx.header, ctx.types
    n, w = ctx.stop - ctx.start, hdr.row_items
    in_dt = hdr.dtype.newbyteorder("=")
    out_dt = types.result
    state = {}
    with _phase(ctx, "plan"):
        budget = _budget(job, device)
        plan = plan_chunks(n, hdr.row_bytes, w * out_dt.itemsize, budget)
        state["plan"] = plan
    modes = [plan["mode"]] if ctx.comm is None else ctx.comm.allgather(plan["mode"])
    ctx.gpu.update({"mode": plan["mode"], "modes": sorted(set(modes)), "budget_bytes": budget,
                    "chunk_rows": plan["chunk_rows"], "strategy": strategy if plan["mode"] == "resident"
                    else "reduce_then_scan"})
    try:
        if plan["mode"] == "resident":
            _resident(job, ctx, device, plan, strategy, n, w, in_dt, out_dt)
        else:
            _streamed(job, ctx, device, plan, n, w, in_dt, out_dt)
    finally:
        eng = {}
        with contextlib.suppress(Exception):
            eng = device.engine_times()
        for k in ("h2d", "scan", "d2h"):
            times[k] += eng.get(k, 0.0)
        with contextlib.suppress(Exception):
            device.release()

    t0 = time.perf_counter()
    ctx.writer.close()  # collective; data on disk under the temporary name
    times["write"] += time.perf_counter() - t0
    if job.verify:
        from ._verify import verify
        t0 = time.perf_counter()
        local = _input_view(hdr, ctx.start, ctx.stop)
        ctx.verify_summary = verify(ctx.writer.temp_path, local, ctx.start, ctx.op, ctx.types,
                                    exclusive=job.exclusive, total_rows=hdr.rows, out_shape=hdr.shape,
                                    comm=ctx.comm)
        times["verify"] = time.perf_counter() - t0


def _input_view(hdr, start, stop):
    shape = (stop - start,) + tuple(hdr.shape[1:])
    if stop == start:
        return np.empty(shape, hdr.dtype.newbyteorder("="))
    return np.memmap(hdr.path, dtype=hdr.dtype, mode="r", offset=hdr.offset + start * hdr.row_bytes, shape=shape)


def _exscan(ctx, scanner, total, rows):
    t0 = time.perf_counter()
    offset = scanner.exchange(total, rows=rows)
    ctx.times["exscan"] += time.perf_counter() - t0
    return offset


def _write(ctx, lo, rows, bar):
    t0 = time.perf_counter()
    ctx.writer.write_rows(ctx.start + lo, rows.reshape((rows.shape[0],) + tuple(ctx.header.shape[1:])),
                          progress=bar.update)
    ctx.times["write"] += time.perf_counter() - t0


def _resident(job, ctx, device, plan, strategy, n, w, in_dt, out_dt):
    from .pipeline import _phase

    scanner = _scanner(job, ctx, device)
    strategy = scanner.strategy  # float products always reduce_then_scan (distscan._carry)
    last_rank = ctx.rank == ctx.size - 1
    chunks = _chunks(n, plan["chunk_rows"])
    st = {}
    with _phase(ctx, "load"):
        d_in = device.empty((n, w), in_dt)
        d_out = device.empty((n, w), out_dt)
        cr = plan["chunk_rows"]
        hin = [device.pinned(cr * w * in_dt.itemsize) for _ in range(2)]
        hout = [device.pinned(cr * w * out_dt.itemsize) for _ in range(2)]
        reader = _Reader(ctx, ctx.times)
        bar = ctx.progress("read", n * ctx.header.row_bytes)
        events = [None, None]
        try:
            for k, (lo, hi) in enumerate(chunks):
                device.wait(events[k % 2])  # the copy that last used this buffer is done
                rows = reader.read(lo, hi, hin[k % 2], bar.update)
                events[k % 2] = device.h2d(d_in[lo:hi], rows)
        finally:
            reader.close()
            bar.done()
        loaded = events[(len(chunks) - 1) % 2] if chunks else None
        with device.computing(after=loaded):
            if strategy == "scan_then_add":
                _, total = scanner.seeded_scan(d_in, None, out=d_out, want_total=not last_rank)
            else:
                total = scanner.local_carry(d_in, skip=last_rank)
        st["total"] = total if total is not None else scanner.identity()
        st["scanned"] = device.last

    offset = _exscan(ctx, scanner, st["total"], n)

    with _phase(ctx, "store"):
        if strategy == "reduce_then_scan":
            with device.computing():
                scanner.seeded_scan(d_in, offset, out=d_out)
            st["scanned"] = device.last
        bar = ctx.progress("write", n * w * out_dt.itemsize)
        pending = []  # (lo, hi, host rows, event)

        def enqueue(k):
            lo, hi = chunks[k]
            after = st["scanned"]
            if strategy == "scan_then_add" and offset is not None:
                with device.computing():
                    scanner.add_offset(d_out[lo:hi], offset)  # fused: just before this chunk leaves
                after = device.last
            host = hout[k % 2][: (hi - lo) * w * out_dt.itemsize].view(out_dt).reshape(hi - lo, w)
            pending.append((lo, host, device.d2h(host, d_out[lo:hi], after=after)))

        if chunks:
            enqueue(0)
        for k in range(len(chunks)):
            if k + 1 < len(chunks):
                enqueue(k + 1)  # overlaps with the write of chunk k
            lo, host, ev = pending.pop(0)
            device.wait(ev)
            _write(ctx, lo, host, bar)
        bar.done()
        del d_in, d_out


def _streamed(job, ctx, device, plan, n, w, in_dt, out_dt):
    from .pipeline import _phase

    scanner = _scanner(job, ctx, device)
    last_rank = ctx.rank == ctx.size - 1
    chunks = _chunks(n, plan["chunk_rows"])
    cr = plan["chunk_rows"]
    st = {}
    with _phase(ctx, "load"):
        d_in = [device.empty((cr, w), in_dt) for _ in range(2)]
        d_out = [device.empty((cr, w), out_dt) for _ in range(2)]
        hin = [device.pinned(cr * w * in_dt.itemsize) for _ in range(2)]
        hout = [device.pinned(cr * w * out_dt.itemsize) for _ in range(2)]
        total = scanner.identity()
        if not last_rank:
            # Pass 1: the shard's total, chunk by chunk (each reduce returns to the host).
            reader = _Reader(ctx, ctx.times)
            bar = ctx.progress("read (pass 1)", n * ctx.header.row_bytes)
            try:
                for k, (lo, hi) in enumerate(chunks):
                    rows = reader.read(lo, hi, hin[k % 2], bar.update)
                    ev = device.h2d(d_in[k % 2][: hi - lo], rows)
                    with device.computing(after=ev):
                        part = scanner.local_carry(d_in[k % 2][: hi - lo])
                    total = scanner.combine(total, part)
            finally:
                reader.close()
                bar.done()
        st["total"] = total

    offset = _exscan(ctx, scanner, st["total"], n)

    with _phase(ctx, "store"):
        reader = _Reader(ctx, ctx.times)
        bar = ctx.progress("read+write (pass 2)", n * w * out_dt.itemsize)
        carry = offset
        prev = None  # (lo, host rows, event) of the chunk waiting to be written
        try:
            for k, (lo, hi) in enumerate(chunks):
                s = k % 2
                rows = reader.read(lo, hi, hin[s])
                ev = device.h2d(d_in[s][: hi - lo], rows)
                with device.computing(after=ev):
                    _, carry = scanner.seeded_scan(d_in[s][: hi - lo], carry, out=d_out[s][: hi - lo], want_total=True)
                host = hout[s][: (hi - lo) * w * out_dt.itemsize].view(out_dt).reshape(hi - lo, w)
                cur = (lo, host, device.d2h(host, d_out[s][: hi - lo], after=device.last))
                if prev is not None:
                    device.wait(prev[2])
                    _write(ctx, prev[0], prev[1], bar)
                prev = cur
            if prev is not None:
                device.wait(prev[2])
                _write(ctx, prev[0], prev[1], bar)
        finally:
            reader.close()
            bar.done()
        del d_in, d_out
