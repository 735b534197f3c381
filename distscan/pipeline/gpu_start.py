"""A rank's GPU for the file pipeline, started off the critical path, and the chunks it scans.

:class:`GpuStart` imports CuPy on the caller's thread (0.2 s; beside the pipeline's threads it took
ten times as long, :func:`_import_cupy_here`), then brings CUDA up on a thread of its own (the
device's context, the kernels' modules, a stream and two chunk slots on the device) while the
pipeline's first reads run: the first chunk's read waits for no context, module load or allocation.
While a start runs, the interpreter's switch interval is short (:class:`_ShortSwitchInterval`), so
that its many returns from C calls do not each wait 5 ms for the GIL held by the pipeline's threads.
:meth:`GpuStart.ready` is None until the GPU is up, and for good on a rank that has no GPU of
its own or where CUDA failed to start (:attr:`GpuStart.why` says which).  Once every chunk is
scanned (the host takes integer chunks while CUDA starts), the engine cancels a start still under
way (:meth:`GpuStart.cancel`): it ends at its next checkpoint, so the run waits at most for the
step in progress, not for the buffers and kernels' modules of a GPU that no chunk will use.

:attr:`GpuStart.steps` notes when each step ended (the CuPy import with the device count, the
context, the buffers and modules), which the report gives per rank: a start slowed beside the
pipeline's I/O shows which step took the time.

:class:`DeviceChunks` is that GPU seen from the pipeline: host rows in, host rows out.  Each call
copies a chunk's rows (and the same rows of its auxiliary inputs: segment flags, coefficients,
into slots of their own) to the device, runs the CUDA backend's seeded scan or reduction on them
and copies the result back, on one stream, and returns when the result is on the host.  A chunk
larger than the device slots (``--gpu-memory-limit``) goes through them in pieces, each seeded
with the total of the pieces before it in scan order (last piece first in reverse).

Assumptions, each tested in tests/pipeline/test_gpu_engine.py (host stand-ins) and
tests/gpu/test_command.py (a GPU):

- only the pipeline's main thread calls a :class:`DeviceChunks` once :meth:`GpuStart.ready` has
  returned it; the start thread never touches it after that (it publishes it last);
- after :meth:`GpuStart.cancel` returns, the start publishes no device: a device it finishes
  meanwhile is closed on the start thread and never published, so every device is closed once,
  by whoever holds it (that thread, or :meth:`GpuStart.close` for a published one);
- the checkpoints lie between the start's steps (before the CuPy import, before the context, and
  in :class:`DeviceChunks` once the context is up, before its stream and buffers), never inside a
  CUDA call, which a cancel cannot cut short; a start that ends at one has made nothing on the
  device that a close would have to free (the context stays with the process, as it would);
- under ``must_start`` (``--backend cuda``) a cancel does not end the start before its context is
  up: a GPU the rank was given that cannot start still fails the run;
- the chunk's host rows are not touched by anyone else during a call (the engine owns them);
- carries, seeds and totals are host arrays in the accumulator dtype (a state operator's: its
  state dtype) on both backends (:mod:`distscan.backends`), so a chunk scanned on the GPU
  continues a prefix that the host began, and the other way round;
- the auxiliary inputs come in the forms the plan scans (bool flags ``(m,)``, coefficients of
  the accumulator dtype), C-contiguous rows of the engine's own buffers (registered once, like
  the rows).
"""

from __future__ import annotations

import sys
import threading
import time
from types import MappingProxyType
from typing import Callable, Mapping, Optional

import numpy as np

from ..dist.plan import ScanPlan
from ..gpus import device_or_host
from .gpu_env import DEFAULT_STAGING, gpu_count_guess


class DeviceChunks:
    """One GPU that scans host chunks (see the module docstring); made on the start thread."""

    name = "cuda"
    backend = "cuda"  # the backend of the plan it runs

    def __init__(self, device_id: int, plan: ScanPlan, slot_rows: int, w: int, in_dt, out_dt,
                 staging: str = DEFAULT_STAGING, aux=(), checkpoint: Callable[[], None] = lambda: None):
        import cupy

        self.cp = cupy
        self.id = device_id
        self.plan = plan
        self.staging = staging
        self._registered = {}  # host buffer address -> bytes, page-locked by us (staging="register")
        cupy.cuda.Device(device_id).use()  # the context
        checkpoint()  # a cancelled start ends here (GpuStart): nothing of ours is on the device yet
        self.stream = cupy.cuda.Stream(non_blocking=True)
        self.slot_rows = max(1, int(slot_rows))
        with self.stream:
            self.d_in = cupy.empty((self.slot_rows, w), in_dt)
            self.d_out = cupy.empty((self.slot_rows, w), out_dt)
            # the auxiliary inputs' slots (aux: (dtype, row shape) of each, as the plan scans them)
            self.d_aux = [cupy.zeros((self.slot_rows,) + tuple(shape), dt) for dt, shape in aux]
            # The kernels' modules are compiled or loaded now, on this thread, at the slot's size
            # (the size picks the kernel): not on the first chunk.  The results are not read.
            self.d_in.fill(0)
            plan.seeded_scan(self.d_in, None, out=self.d_out, want_total=True, aux=tuple(self.d_aux))
            plan.local_carry(self.d_in, tuple(self.d_aux))
        self.stream.synchronize()
        self._events = {"h2d": [], "scan": [], "d2h": []}

    # -- one chunk --------------------------------------------------------------------------

    def _pieces(self, n: int) -> list:
        """``(lo, hi)`` of the pieces of ``n`` rows that fit the slots, in scan order (last first in
        reverse: the seed of a piece is the total of the pieces before it in that order)."""
        pieces = [(lo, min(n, lo + self.slot_rows)) for lo in range(0, n, self.slot_rows)]
        return pieces[::-1] if self.plan.reverse else pieces

    def scan(self, x: np.ndarray, seed, out: np.ndarray, want_total: bool, aux=(), initial=None):
        """``out`` = the scan of the host rows ``x`` (and their auxiliary inputs ``aux``, host arrays
        of the plan's forms) from ``seed`` (``out`` may be ``x``); ``initial``: a projected initial
        value; the total (host, accumulator dtype or state) when ``want_total`` or when the chunk
        goes in several pieces."""
        total = seed
        pieces = self._pieces(x.shape[0])
        for i, (lo, hi) in enumerate(pieces):
            more = i < len(pieces) - 1
            total = self._piece(x[lo:hi], total, out[lo:hi], want_total or more, [a[lo:hi] for a in aux], initial)
        return total if want_total else None

    def carry(self, x: np.ndarray, aux=()):
        """The carry of the host rows ``x`` (:meth:`ScanPlan.local_carry`), combined over the pieces
        in scan order."""
        cp = self.cp
        carry = None
        with cp.cuda.Device(self.id), self.stream:
            for lo, hi in self._pieces(x.shape[0]):
                piece = x[lo:hi]
                d_in = self.d_in[: piece.shape[0]]
                ev = self._mark()
                self._copy(d_in.data.ptr, piece, 1)
                d_aux = self._copy_aux([a[lo:hi] for a in aux])
                ev2 = self._mark()
                c = self.plan.local_carry(d_in, d_aux)
                self._events["h2d"].append((ev, ev2))
                self._events["scan"].append((ev2, self._mark()))
                carry = c if carry is None else self.plan.combine(carry, c)
        return carry

    def _copy_aux(self, pieces) -> tuple:
        """The host pieces of the auxiliary inputs copied into their slots (on the stream)."""
        out = []
        for slot, piece in zip(self.d_aux, pieces):
            d = slot[: piece.shape[0]]
            self._copy(d.data.ptr, piece, 1)
            out.append(d)
        return tuple(out)

    def _piece(self, x, seed, out, want_total, aux=(), initial=None):
        cp = self.cp
        m = x.shape[0]
        d_in, d_out = self.d_in[:m], self.d_out[:m]
        with cp.cuda.Device(self.id), self.stream:
            e0 = self._mark()
            self._copy(d_in.data.ptr, x, 1)
            d_aux = self._copy_aux(aux)
            e1 = self._mark()
            _, total = self.plan.seeded_scan(d_in, seed, out=d_out, want_total=want_total, aux=d_aux,
                                             initial=initial)
            e2 = self._mark()
            self._copy(d_out.data.ptr, out, 2)
            e3 = self._mark()
            e3.synchronize()  # the rows are the host's again: the write may start
        self._events["h2d"].append((e0, e1))
        self._events["scan"].append((e1, e2))
        self._events["d2h"].append((e2, e3))
        return total

    def _mark(self):
        ev = self.cp.cuda.Event()
        ev.record(self.stream)
        return ev

    def _copy(self, device_ptr: int, host: np.ndarray, kind: int) -> None:
        """host -> device (``kind`` 1) or device -> host (2) of ``host``'s bytes, on the stream."""
        assert host.flags.c_contiguous  # the engine's chunks are rows of whole buffers
        if self.staging == "register":
            self._register(host)
        dst, src = (device_ptr, host.ctypes.data) if kind == 1 else (host.ctypes.data, device_ptr)
        self.cp.cuda.runtime.memcpyAsync(dst, src, host.nbytes, kind, self.stream.ptr)

    def _register(self, host: np.ndarray) -> None:
        base = host
        while isinstance(base.base, np.ndarray):
            base = base.base
        ptr = base.ctypes.data
        if ptr not in self._registered:
            self.cp.cuda.runtime.hostRegister(ptr, base.nbytes, 0)
            self._registered[ptr] = base.nbytes

    # -- the end ------------------------------------------------------------------------------

    def times(self) -> dict:
        """Seconds of GPU work by kind (CUDA events): ``h2d``, ``scan``, ``d2h``."""
        self.stream.synchronize()
        get = self.cp.cuda.get_elapsed_time
        return {k: sum(get(a, b) for a, b in v) * 1e-3 for k, v in self._events.items()}

    def close(self) -> None:
        with self.cp.cuda.Device(self.id):
            self.stream.synchronize()
            for ptr in list(self._registered):
                self.cp.cuda.runtime.hostUnregister(ptr)
            self._registered.clear()
            self.d_in = self.d_out = None
            self.cp.get_default_memory_pool().free_all_blocks()


class _Stopped(Exception):
    """Raised at a checkpoint of a cancelled start: the start ends there, with no device."""


class GpuStart:
    """CUDA started on a thread of its own; see the module docstring.

    ``choose(visible)`` -> ``(Binding or None, why)`` picks this rank's GPU once the device count is
    known (:func:`distscan.gpus.device_or_host`); ``build(device_id, checkpoint)`` makes the
    :class:`DeviceChunks` on the start thread, calling ``checkpoint()`` once its context is up and
    before it makes anything on the device.  :meth:`cancel` (no chunk will ask for the GPU) stops
    the start at its next checkpoint: before the CuPy import, after it, or at ``build``'s; with
    ``must_start`` (``--backend cuda``: a GPU the rank was given must start) not before the
    context is up, so that a GPU that cannot start still fails the run.
    """

    def __init__(self, choose: Callable, build: Callable, *, count: Optional[Callable[[], int]] = None,
                 host_only: Optional[str] = None, must_start: bool = False):
        self._choose, self._build = choose, build
        self._count = count or _device_count
        self._must_start = must_start
        self._chunks = None
        self.binding = None
        self.error: Optional[BaseException] = None
        self.why = "CUDA is starting"
        self.stopped = False  # cancelled, and ended at a checkpoint (or closed what it made) without a device
        self.t0 = time.perf_counter()
        self.t1 = None
        # The end of each step reached, in seconds after t0 ("import": CuPy and the device count;
        # "context": the device's context up; "modules": its stream, buffers and kernels' modules):
        # where a slow start spends its time, for the report.  The start thread publishes a new
        # read-only mapping at each step and never changes one it published, so a reader (the
        # report, while a start the engine did not wait for still runs) iterates a mapping that
        # no thread changes.
        self.steps: Mapping[str, float] = MappingProxyType({})
        self._done = threading.Event()
        self._cancel = threading.Event()
        self._publish = threading.Lock()  # publishing a device and cancelling: one first, then not the other
        self._thread = None
        if host_only is not None:  # known without CUDA: this rank has no GPU of its own
            self.why, self.t1 = host_only, self.t0
            self._done.set()
            return
        if count is None:
            _import_cupy_here()
        self._thread = threading.Thread(target=self._run, name="distscan-gpu-start", daemon=True)
        _SHORT_SWITCH.enter()  # left by the thread when it ends (_run), or here if it never starts
        try:
            self._thread.start()
        except BaseException:
            _SHORT_SWITCH.leave()
            raise

    def _checkpoint(self, where: str = "before the device buffers", context_up: bool = True) -> None:
        """Between two steps of the start: end it here if it was cancelled (and, under ``must_start``,
        its context is up)."""
        if self._cancel.is_set() and (context_up or not self._must_start):
            raise _Stopped(where)

    def _step(self, name: str) -> None:
        self.steps = MappingProxyType({**self.steps, name: time.perf_counter() - self.t0})

    def _context_up(self) -> None:
        """``build``'s checkpoint, called once the context is up: noted, then a checkpoint."""
        self._step("context")
        self._checkpoint()

    def _run(self) -> None:
        try:
            self._checkpoint("before the CuPy import", context_up=False)
            binding, why = self._choose(self._count())
            self._step("import")
            self.binding, self.why = binding, why
            if binding is not None:
                self._checkpoint("before the context", context_up=False)
                chunks = self._build(binding.device, self._context_up)
                self._step("modules")
                with self._publish:
                    if not self._cancel.is_set():
                        self._chunks, chunks = chunks, None  # published last: see the assumptions
                if chunks is not None:  # made after a cancel: never published, so released here, once
                    chunks.close()
                    raise _Stopped("after making its device, which it closed unused")
        except _Stopped as stop:
            self.stopped = True
            gpu = self.why if self.binding is not None else "CUDA"
            self.why = f"{gpu}: not used, every chunk was scanned before it was up (its start stopped {stop})"
        except BaseException as exc:  # noqa: BLE001 - kept, raised where the engine must have the GPU
            self.error = exc
            if isinstance(exc, ImportError):
                self.why = f"CuPy did not import ({exc}): pip install 'distscan[gpu]'"
            else:
                self.why = f"CUDA did not start: {' '.join(str(exc).split()) or type(exc).__name__}"
        finally:
            self.t1 = time.perf_counter()
            _SHORT_SWITCH.leave()
            self._done.set()

    def ready(self) -> Optional[DeviceChunks]:
        """The GPU if it is up now (never waits)."""
        return self._chunks

    def wait(self) -> Optional[DeviceChunks]:
        """The GPU once the start has ended (None: this rank scans on the host; see :attr:`why`)."""
        self._done.wait()
        return self._chunks

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def cancel(self) -> None:
        """No chunk will ask for the GPU: the start ends at its next checkpoint, and publishes no device
        after this returns (one already published stays, for :meth:`close`)."""
        with self._publish:
            self._cancel.set()

    def close(self) -> None:
        """Cancel the start, wait for its thread (one inside a CUDA call cannot be cut short: it stops
        at the checkpoint after it) and free the GPU's part, once."""
        self.cancel()
        if self._thread is not None:
            self._thread.join()
        chunks, self._chunks = self._chunks, None
        if chunks is not None:
            chunks.close()


class _ShortSwitchInterval:
    """The interpreter's switch interval shortened while a GPU start runs.

    Why: beside a rank's host pipeline (an integer file's chunks scanned on the host while CUDA
    starts) the start thread's kernels' modules step took 1.1-1.7 s against 0.03 s quiet.  That step
    is CuPy's Python around many short C calls and cache-file reads; after each, the thread asks for
    the GIL again, and a pipeline thread holding it gives it up only at the switch interval (5 ms by
    default).  With 0.5 ms the step took 0.55-0.85 s and the command 0.1-0.4 s less; float files,
    whose host threads wait for the GPU, moved within noise (2^29 items, 2026-11-25: a sitecustomize
    on the H100 host, then this code against the tree before it on the H200 host; benchmarks/
    RESULTS.md, "The GIL's switch interval beside CUDA's start").

    The interval is the process's, so it is counted: shortened when the first running start
    begins, given back when the last one ends, and only if it is still ours (a value the user set
    meanwhile, other than ours, is theirs and stays).  Never lengthened: an interval already at or
    below ours stays.
    """

    SHORT_S = 0.0005

    def __init__(self):
        self._lock = threading.Lock()
        self._running = 0
        self._saved: Optional[float] = None  # the interval found when the first running start began
        self._ours: Optional[float] = None  # the interval we set (None: we left it as it was)

    def enter(self) -> None:
        with self._lock:
            if self._running == 0:
                self._saved = sys.getswitchinterval()
                self._ours = None
                if self._saved > self.SHORT_S:
                    sys.setswitchinterval(self.SHORT_S)
                    self._ours = sys.getswitchinterval()  # as the interpreter stores it (whole µs)
            self._running += 1

    def leave(self) -> None:
        with self._lock:
            self._running -= 1
            if self._running == 0:
                if self._ours is not None and sys.getswitchinterval() == self._ours:
                    sys.setswitchinterval(self._saved)
                self._saved = self._ours = None


_SHORT_SWITCH = _ShortSwitchInterval()


def _import_cupy_here() -> None:
    """CuPy's import on the caller's thread, before the pipeline's I/O threads start: on the start
    thread beside them it took 2.2 s against 0.22 s in a quiet process (one H200 host, 2^29 int64
    scanned on the host, 2026-11-24: benchmarks/RESULTS.md, "Where CUDA's start waits"), its many
    small file reads each waiting for the GIL.  The context and the kernels' modules (C calls, 0.16 s)
    stay on the start thread, beside the reads.  A failed import is met again there and reported."""
    try:
        import cupy  # noqa: F401
    except Exception:  # noqa: BLE001 - the start thread imports it again and says why
        pass


def _device_count() -> int:
    import cupy

    return int(cupy.cuda.runtime.getDeviceCount())


def slot_rows_for(chunk_rows: int, row_bytes: int, budget: Optional[int]) -> int:
    """Rows of the device's chunk slots: a host chunk's, or fewer within ``budget`` bytes of GPU
    memory (the input and output slots take at most half of it: the rest is the kernels' scratch).

    Raises
    ------
    MemoryError
        When not even one row of input and output fits.
    """
    if budget is None:
        return chunk_rows
    rows = min(chunk_rows, budget // max(2 * row_bytes, 1))
    if rows < 1:
        raise MemoryError(f"--gpu-memory-limit of {budget} bytes is too small: one row of input and output "
                          f"needs {row_bytes} bytes, twice that with the kernels' scratch")
    return rows


def starter(ctx, job, layout, strategy: str, *, local: tuple, budget: Optional[int],
            staging: str = DEFAULT_STAGING, required: bool = False, chunks_class=DeviceChunks,
            count: Optional[Callable[[], int]] = None) -> GpuStart:
    """The :class:`GpuStart` of this rank of the file pipeline: its GPU by :func:`device_or_host`
    (``local`` = (local rank, ranks on this node)), a CUDA plan of the job's scan, slots of the
    layout's chunk rows or fewer (``budget`` bytes of GPU memory; None: no limit).  ``required``
    (``--backend cuda``): no GPU visible at all is an error, not a host scan.  ``chunks_class`` and
    ``count`` stand in for :class:`DeviceChunks` and the CUDA device count (tests without a GPU)."""
    aux_row = sum(a.row_bytes for a in layout.aux)  # the auxiliary inputs' slots beside the rows'
    slot_rows = slot_rows_for(layout.chunk_rows,
                              layout.w * (layout.in_dt.itemsize + layout.out_dt.itemsize) + aux_row, budget)
    aux = tuple((a.dt, a.shape(1)[1:]) for a in layout.aux)

    def choose(visible: int):
        if required and visible < 1:
            raise RuntimeError("no CUDA GPU is visible to this rank (check CUDA_VISIBLE_DEVICES)")
        return device_or_host(local[0], local[1], visible, gpu=job.gpu)

    # A rank beyond the GPUs of its node is known without CUDA: it neither imports CuPy nor starts
    # a thread (8 ranks on 2 GPUs: 6 CuPy imports of 0.5 s each saved).
    guess = count() if count is not None else gpu_count_guess()
    if guess:
        binding, why = device_or_host(local[0], local[1], guess, gpu=job.gpu)
        if binding is None:
            return GpuStart(choose, None, count=count, host_only=why)

    def build(device_id: int, checkpoint: Callable[[], None]) -> DeviceChunks:
        # comm=None: the device only runs the local steps (carries, seeded scans); the exchange is
        # the host plan's.  The same operator and dtypes as the host plan: carries are the same.
        plan = ScanPlan(ctx.op, layout.in_dt, dtype=ctx.dtype, exclusive=job.exclusive,
                        trailing=tuple(ctx.header.shape[1:]), comm=None, backend=chunks_class.backend,
                        strategy=strategy, algorithm=getattr(job, "algorithm", "auto"),
                        reverse=bool(getattr(job, "reverse", False)))
        return chunks_class(device_id, plan, slot_rows, layout.w, layout.in_dt, layout.out_dt, staging, aux=aux,
                            checkpoint=checkpoint)

    return GpuStart(choose, build, count=count, must_start=required)
