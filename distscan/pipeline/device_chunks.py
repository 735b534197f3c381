"""A rank's GPU seen from the file pipeline: host rows in, host rows out.

:class:`DeviceChunks`: each call copies a chunk's rows (and the same rows of its auxiliary inputs: segment flags, coefficients,
into slots of their own) to the device, runs the CUDA backend's seeded scan or reduction on them
and copies the result back, on one stream, and returns when the result is on the host.  A chunk
larger than the device slots (``--gpu-memory-limit``) goes through them in pieces, each seeded
with the total of the pieces before it in scan order (last piece first in reverse).

It is made on the start thread of :class:`distscan.pipeline.gpu_start.GpuStart`, which publishes
it last; from then on only the pipeline's main thread calls it.

Assumptions, each tested in tests/pipeline/test_gpu_engine.py (host stand-ins) and
tests/gpu/test_command.py (a GPU):

- the chunk's host rows are not touched by anyone else during a call (the engine owns them);
- carries, seeds and totals are host arrays in the accumulator dtype (a state operator's: its
  state dtype) on both backends (:mod:`distscan.backends`), so a chunk scanned on the GPU
  continues a prefix that the host began, and the other way round;
- the auxiliary inputs come in the forms the plan scans (bool flags ``(m,)``, coefficients of
  the accumulator dtype), C-contiguous rows of the engine's own buffers (registered once, like
  the rows).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..dist.plan import ScanPlan
from .gpu_env import DEFAULT_STAGING


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
