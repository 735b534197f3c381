"""A GPU stand-in for the file pipeline's GPU engine (distscan.pipeline.cuda) on machines without one.

:class:`HostChunks` has :class:`distscan.pipeline.device_chunks.DeviceChunks`'s calls, computed with the
``cpu`` backend: the chunk's rows are copied into slot arrays (as they would be to the device), scanned
there piece by piece, and copied back, so the engine's chunking, the pieces of a small
``--gpu-memory-limit``, the carries handed between host and "device" chunks and the report run
end to end.  ``HostChunks.START_S`` makes the start take that long (the host scans the first
chunks meanwhile); ``HostChunks.FAIL`` makes it fail.  As ``DeviceChunks``, it calls its
``checkpoint`` once its "context" is up (where ``FAIL`` is raised), before its buffers and the
``START_S`` of its "modules": a cancelled start ends there and makes nothing.
"""

from __future__ import annotations

import time

import numpy as np


class HostChunks:
    name = "host stand-in"
    backend = "cpu"
    START_S = 0.0
    FAIL = None          # an exception to raise while "CUDA" starts
    made = []            # every instance, for the tests to look at

    def __init__(self, device_id, plan, slot_rows, w, in_dt, out_dt, staging, aux=(), checkpoint=lambda: None):
        if self.FAIL is not None:
            raise self.FAIL
        checkpoint()
        time.sleep(self.START_S)
        self.id, self.plan, self.staging = device_id, plan, staging
        self.slot_rows = max(1, int(slot_rows))
        self.d_in = np.empty((self.slot_rows, w), in_dt)
        self.d_out = np.empty((self.slot_rows, w), out_dt)
        self.d_aux = [np.zeros((self.slot_rows,) + tuple(shape), dt) for dt, shape in aux]
        self.calls = {"scan": 0, "carry": 0, "pieces": 0, "aux_pieces": 0, "initial": 0}
        self.closed = False
        HostChunks.made.append(self)

    def _pieces(self, n):
        pieces = [(lo, min(n, lo + self.slot_rows)) for lo in range(0, n, self.slot_rows)]
        return pieces[::-1] if self.plan.reverse else pieces  # scan order, as DeviceChunks

    def _aux(self, aux, lo, hi):
        """The pieces of the auxiliary inputs copied into their slots, as DeviceChunks copies them."""
        out = []
        for slot, a in zip(self.d_aux, aux):
            assert a.flags.c_contiguous and a.dtype == slot.dtype and a.shape[1:] == slot.shape[1:]
            slot[: hi - lo] = a[lo:hi]
            out.append(slot[: hi - lo])
            self.calls["aux_pieces"] += 1
        return tuple(out)

    def scan(self, x, seed, out, want_total, aux=(), initial=None):
        self.calls["scan"] += 1
        self.calls["initial"] += initial is not None
        total = seed
        pieces = self._pieces(x.shape[0])
        for i, (lo, hi) in enumerate(pieces):
            m = hi - lo
            self.calls["pieces"] += 1
            self.d_in[:m] = x[lo:hi]
            _, total = self.plan.seeded_scan(self.d_in[:m], total, out=self.d_out[:m],
                                             want_total=want_total or i < len(pieces) - 1,
                                             aux=self._aux(aux, lo, hi), initial=initial)
            out[lo:hi] = self.d_out[:m]
        return total if want_total else None

    def carry(self, x, aux=()):
        self.calls["carry"] += 1
        carry = None
        for lo, hi in self._pieces(x.shape[0]):
            self.d_in[: hi - lo] = x[lo:hi]
            c = self.plan.local_carry(self.d_in[: hi - lo], self._aux(aux, lo, hi))
            carry = c if carry is None else self.plan.combine(carry, c)
        return carry

    def times(self):
        return {"h2d": 0.0, "scan": 0.0, "d2h": 0.0}

    def close(self):
        self.closed = True
