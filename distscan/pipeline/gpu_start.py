"""A rank's GPU for the file pipeline, started off the critical path.

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

The GPU it makes is a :class:`~distscan.pipeline.device_chunks.DeviceChunks`: host rows in, host
rows out.

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
  up: a GPU the rank was given that cannot start still fails the run.
"""

from __future__ import annotations

import sys
import threading
import time
from types import MappingProxyType
from typing import Callable, Mapping, Optional

from ..dist.plan import ScanPlan
from ..gpus import device_or_host
from .device_chunks import DeviceChunks
from .gpu_env import DEFAULT_STAGING, gpu_count_guess


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

    def settle(self, timeout: float) -> None:
        """Give a cancelled start up to ``timeout`` seconds to reach its checkpoint, so that
        :attr:`why` says where it stopped rather than "CUDA is starting" (a start between two
        steps gets there within milliseconds once it has the GIL; one inside the CuPy import or
        a CUDA call is not waited for).  Returns at once for a start not cancelled or ended."""
        if self._cancel.is_set():
            self._done.wait(timeout)

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
    small file reads each waiting for the GIL.  The context and the kernels' modules stay on the
    start thread, beside the reads (their step took 0.7 s there at 2^29 int64 with the short switch
    interval, against 1.7 s without: RESULTS.md, "The GIL's switch interval beside CUDA's start").
    A failed import is met again there and reported."""
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
        # --dtype float16 of wider input: the host rounds each chunk's rows as they come
        # (CpuEngine.put), so the device's slots and plan take float16 (ctx.types: the host plan's)
        in_dt = ctx.types.compute if ctx.types.rounds_inputs else layout.in_dt
        # comm=None: the device only runs the local steps (carries, seeded scans); the exchange is
        # the host plan's.  The same operator and dtypes as the host plan: carries are the same.
        plan = ScanPlan(ctx.op, in_dt, dtype=ctx.dtype, exclusive=job.exclusive,
                        trailing=tuple(ctx.header.shape[1:]), comm=None, backend=chunks_class.backend,
                        strategy=strategy, algorithm=getattr(job, "algorithm", "auto"),
                        reverse=bool(getattr(job, "reverse", False)))
        return chunks_class(device_id, plan, slot_rows, layout.w, in_dt, layout.out_dt, staging, aux=aux,
                            checkpoint=checkpoint)

    return GpuStart(choose, build, count=count, must_start=required)
