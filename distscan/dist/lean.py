"""A plan's lean calls: the common call of a kind, as one function without the general route's
frames (a 1000-element call costs a few microseconds; each frame shows).

:class:`LeanCalls` is a part of :class:`distscan.dist.plan.ScanPlan` (its mixin): the case of one
rank (:meth:`LeanCalls.one_rank`), and the exact integer call on many ranks, scanned first and
offset after (:meth:`LeanCalls._scan_then_add`, and :meth:`LeanCalls.lean_call`, the same over
the exchange's own buffers).  They use the plan's fields (operator, types, rank, communicator,
fingerprint) and its exchange (``_exchange``, ``_exchanger``, ``_checked``), and make the
collectives its general route makes: a rank never decides alone which collectives it makes.
"""

from __future__ import annotations

import numpy as np

from .agree import collectively
from .exchange import STATUS_HEAD


class LeanCalls:
    """The lean calls of a :class:`distscan.dist.plan.ScanPlan` (see the module docstring)."""

    def one_rank(self):
        """:meth:`run`'s case of one rank, ``fast``, untimed, a plain forward scan without
        ``initial``, as a function of ``(rows, out)`` (the backend's ``lean_scanner``, made once):
        the API's common call runs it from its call kind (``distscan._kinds.Kind.run``)."""
        if self._one_rank is None:
            self._one_rank = self.be.lean_scanner(self.op, self.types, self.exclusive)
        return self._one_rank

    _one_rank = None

    def _scan_then_add(self, rows, out):
        """The lean call (``fast``) of an exact operator (:data:`EXACT`) on integers, as the bare
        ``cumsum`` + ``Exscan`` + add: this rank's scan, its last element as the carry, the
        exchange, ``offset op out`` in place (2N bytes on the first rank, 4N on the others).

        Assumptions.  The carry is the total a reduce gives (exact operator), so ranks on the
        general route send the same.  The add cannot raise on any rank: integer ufuncs set no
        floating-point flag and warn of nothing (overflow wraps), and ``out`` (the caller's,
        writable: ``lean_arrays``; or allocated here) exists before the exchange.  So this rank
        asks for no agreement after it, and joins one when another rank asked for it."""
        error, carry, n = None, None, 0
        try:
            n = rows.shape[0]
            out = self.op.ufunc.accumulate(rows, dtype=self.types.acc, out=out)
            if n:
                carry = out[-1:]
        except Exception as exc:  # noqa: BLE001 - agreed in the exchange, then raised on every rank
            error = exc
        agreed, offset, _ = self._exchange(carry, error, n, "scan arguments", None, False, False, self.last)
        return self._then_add(agreed, offset, out, n)

    def _then_add(self, agreed, offset, out, n: int):
        """:meth:`_scan_then_add`'s finish, once the exchange has agreed: ``offset op out`` in place,
        inside the agreement after it where some rank asked for one."""
        if agreed.agree_after:
            with collectively(self.comm):
                if offset is not None and n:
                    self.op.ufunc(offset, out, out=out)
        elif offset is not None and n:
            self.op.ufunc(offset, out, out=out)
        return out

    def lean_call(self):
        """:meth:`_scan_then_add` on many ranks as one function of ``(rows, out)`` over the exchange's
        own buffers (made once per plan and communicator): the API's common distributed integer
        call runs it from its call kind (``distscan._kinds.Kind.run``), without the frames between
        the call and the protocol (about 2 us of a 1000-element call: benchmarks/RESULTS.md).
        None where it does not apply: the plan has no lean integer call, or its exchange is not a
        resolved flat gather with the carry inline (resolved at the first exchange that agrees).

        Assumption: it makes the collectives :meth:`_scan_then_add` makes, whatever any rank
        passes.  It writes the same record and makes the same ``Allgather``; where that shows all
        ranks agreed with nothing flagged (the only case it finishes alone) the general reading
        would do exactly what it does, and anything else (a failure, a mismatch, an empty part,
        a rank that asked for an agreement after its finish) is read by the general code
        (:meth:`Exchange.read`, then :meth:`_checked`, then :meth:`_then_add`).  A part it does
        not take (empty, or a scan that raises) goes the general way from the start."""
        ex = self._exchanger
        if (not self._adds or self.size == 1 or self.trailing or ex is None or ex.resolved != "flat" or not ex.inline
                or ex.doubling or ex.guarded or ex.reverse or self.carries.flagged):
            return None
        accumulate, combine, acc = self.op.ufunc.accumulate, self.op.ufunc, self.types.acc
        # The carries before this rank in any order: an exact operator on integers (wrapping) is
        # associative and commutative, and raises no floating-point error (Carries.fold's ordered,
        # guarded fold gives the same).
        fold = self.op.ufunc.reduce
        fp, place, general = self.fingerprint, self.rank, self._scan_then_add
        rec, recs, st, mine, carries = ex.rec, ex.recs, ex.st, ex.mine, ex.carries
        heads = recs[:, :STATUS_HEAD]
        all_agreed = np.array([0, fp], np.int64).tobytes() * self.size  # flags 0, this fingerprint
        allgather = self.comm.Allgather

        def call(rows, out):
            n = rows.shape[0]
            if not n:
                return general(rows, out)
            try:
                out = accumulate(rows, dtype=acc, out=out)
            except Exception:  # noqa: BLE001 - the general way scans again, and agrees on its failure
                return general(rows, out)
            st[0], st[1], st[2] = 0, fp, n
            mine[0] = out[-1]
            allgather(rec, recs)
            if heads.tobytes() == all_agreed:
                if place:
                    combine(fold(carries[:place], axis=0), out, out=out)
                return out
            agreed, offset, _ = self._checked(*ex.read(fp, None, False), None, "scan arguments", None, None, n)
            return self._then_add(agreed, offset, out, n)
        return call
