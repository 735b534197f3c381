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
from .options import NULL


class LeanCalls:
    """The lean calls of a :class:`distscan.dist.plan.ScanPlan` (see the module docstring)."""

    def one_rank(self):
        """:meth:`run`'s case of one rank, ``fast``, untimed, a plain forward scan without
        ``initial``, as a function of ``(rows, out)`` (the backend's ``lean_scanner``, made once):
        the API's common call runs it from its call kind (``distscan._kinds.Kind.run``)."""
        # (threads on one rank share the plan: two may make one each, equal, holding nothing mutable)
        if self._one_rank is None:
            self._one_rank = self.be.lean_scanner(self.op, self.types, self.exclusive)
        return self._one_rank

    _one_rank = None

    def one_rank_state(self):
        """:meth:`run`'s case of one rank, ``fast``, untimed, without ``initial``, for a reverse or
        state scan, as a function of ``(rows, out, aux)`` made once: the backend's
        ``lean_state_scanner`` where it has one for this kind (the GPU's extended scans, the CPU's
        state loops, without the general route's frames), else ``run`` itself, which the scanner
        also hands the calls it does not take (an empty part, say).  The API's call kinds run it
        (``distscan._kinds.Kind.run``) with the arrays they checked."""
        if self._one_rank_state is None:
            plan = self

            def general(rows, out, aux):  # (plan.run looked up on each call, as the API's own route)
                return plan.run(rows, out=out, fast=True, aux=aux)
            maker = getattr(self.be, "lean_state_scanner", None)
            scanner = (maker(self.op, self.types, self.exclusive, self.reverse, self.algorithm, general)
                       if maker is not None and self.size == 1 else None)
            self._one_rank_state = scanner or general
        return self._one_rank_state

    _one_rank_state = None

    def _seeded_lean(self, rows, out, aux, seed, general) -> bool:
        """:meth:`run`'s seeded scan of a ``fast`` reverse or state part on many ranks, the lean way:
        the backend's ``seeded_state_scanner`` (the GPU's, made once: ``extended_lean``, without
        ``be.scan``'s frames between the exchange and the launch, a 2-GPU call's critical path)
        where it takes the call.  False where ``be.scan`` must: a projected ``initial``, a backend
        without one, a call the scanner hands back (an empty part, a capture).  Assumption: the
        arrays are those :meth:`one_rank_state`'s scanner takes (``fast``: the same call kinds
        checked them), ``out`` the caller's or allocated before the exchange."""
        scanner = self._seeded_state
        if scanner is None:
            maker = getattr(self.be, "seeded_state_scanner", None)
            scanner = (maker(self.op, self.types, self.exclusive, self.reverse, self.algorithm)
                       if maker is not None else None) or False
            self._seeded_state = scanner
        return bool(scanner) and general["initial"] is None and scanner(rows, out, aux, seed) is not None

    _seeded_state = None

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

    #: The plan's lean call once :meth:`lean_call` has made it (None before).
    lean_run = None

    def lean_call(self):
        """The call of a kind on many ranks, untimed, as one function of ``(rows, out, aux)``, kept
        in :attr:`lean_run` (made once per plan, and so per communicator; the API's call kind runs it:
        ``distscan._kinds.Kind.run``):

        - the exact integer call (:meth:`_scan_then_add`) and a CPU state scan by its prepared
          loops (segmented scans, recurrences, compensated sums: ``run(fast=True)``'s route
          there), fused over the exchange's own buffers, without the frames between the call and
          the protocol (a few microseconds of a 1000-element call: benchmarks/RESULTS.md);
        - any other: ``run(rows, out=out, fast=True, aux=aux)``.

        None until the plan's exchange has resolved its method (at the first exchange that agrees):
        the fused calls need a flat gather with the carry inline.

        Assumption: a fused call makes the collectives the general route makes, whatever any rank
        passes.  It writes the same record and makes the same ``Allgather``; where that shows all
        ranks agreed with nothing flagged (the only case it finishes alone) the general reading
        would do exactly what it does, and anything else (a failure, a mismatch, an empty part,
        a rank that asked for an agreement after its finish) is read by the general code
        (:meth:`Exchange.read`, then :meth:`_checked`, then the general finish).  A part it does
        not take (empty, or one whose local work raises) goes the general way from the start."""
        if self.lean_run is None:
            self.lean_run = self._new_lean_call()
        return self.lean_run

    def _new_lean_call(self):
        """:meth:`lean_call`'s function, or None while the exchange is not resolved."""
        ex = self._exchanger
        if self.size == 1 or ex is None or ex.resolved is None:
            return None
        # (the fused calls' carries are their state rows or integer totals: a float product's
        # five-row carry, distscan._carry, takes neither)
        fused = not self.trailing and ex.resolved == "flat" and ex.inline and not ex.doubling and not ex.guarded
        if fused and self._adds and not ex.reverse:
            return self._fused_scan_then_add(ex)
        if fused and self._loops and self.types.result == self.types.acc and self.algorithm == "auto":
            return self._fused_state_scan(ex)
        run = self.run
        return lambda rows, out, aux: run(rows, out=out, fast=True, aux=aux)

    def _record(self, ex):
        """What a fused call writes and reads of the exchange ``ex``: its buffers, the status words
        every rank sends when all is well (flags 0, this plan's fingerprint) and ``Allgather``."""
        fp = self.fingerprint
        return fp, ex.heads, ex.agreed_heads(fp), self.comm.Allgather

    def _fused_scan_then_add(self, ex):
        """:meth:`_scan_then_add` as one function (:meth:`lean_call`)."""
        accumulate, combine, acc = self.op.ufunc.accumulate, self.op.ufunc, self.types.acc
        # The carries before this rank in any order: an exact operator on integers (wrapping) is
        # associative and commutative, and raises no floating-point error (Carries.fold's ordered,
        # guarded fold gives the same).
        fold = _integer_fold(self.op.name, self.op.ufunc, acc)
        place, general = self.rank, self._scan_then_add
        rec, recs, st, mine, carries = ex.rec, ex.recs, ex.st, ex.mine, ex.carries
        # (basic indexing: views of the records, which every Allgather writes again)
        before = carries[:place] if fold.rows else carries[(slice(0, place),) + (0,) * (carries.ndim - 1)]
        fp, heads, all_agreed, allgather = self._record(ex)

        def call(rows, out, aux):
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
                    combine(fold(before), out, out=out)
                return out
            agreed, offset, _ = self._checked(*ex.read(fp, None, False), None, "scan arguments", None, None, n)
            return self._then_add(agreed, offset, out, n)
        return call

    def _fused_state_scan(self, ex):
        """``run(fast=True)``'s route for a CPU state scan by its prepared loops (forward or reverse,
        no ``initial``: the call kinds' case) as one function (:meth:`lean_call`): the part's
        carry, as the state after its scan from no seed into ``out`` (not on the last rank in scan
        order, whose carry no rank reads), the exchange, the scan seeded with the fold of the
        carries before this rank in scan order (none on the first rank; a segmented scan's up to
        where the seed stops mattering: ``Loops.fused``).  The loops' finish cannot fail (their assumption: ``distscan.backends.cpu_states.Loops``), so this rank
        asks for no agreement after it, and joins one when another rank asked for it."""
        loops, reverse, last, result = self._loops, self.reverse, self.last, self.types.result
        rec, recs, st, mine = ex.rec, ex.recs, ex.st, ex.mine
        carries = ex.carries[::-1] if reverse else ex.carries  # scan order
        place, run = ex.place, self.run
        fp, heads, all_agreed, allgather = self._record(ex)

        # a fused call's part is 1-D (no trailing shape): one column, whose loops' calls can skip
        # their checks and write the carry straight into this rank's record
        before_exchange, after_exchange = loops.fused(reverse, mine, last)
        # The seed: Carry.fold of the carries before this rank, without its frames.  One carry is
        # the seed as it lies in the gathered records (read by the scan before the next exchange
        # writes them); more go through the state's compiled fold, Carry.fold's own (a numba loop
        # raises no floating-point error: the exchange's quiet wrapper has nothing to catch there).
        # (its entry point: the carries and the seed are arrays of exactly the state dtype it was
        # compiled for, the exchange's records viewed as it and one made here: ops.jit.entry_point;
        # ops.jit loads with the first state scan, not with the command: tests/cli/test_startup.py)
        from ..ops.jit import entry_point
        fold_states, state_dtype = entry_point(self.carries.state.fold_for(self.carries.dtype)), self.carries.dtype
        before = carries[:place]

        def seed_before():
            if place <= 1:
                return before[0] if place else None
            seed = np.empty(1, state_dtype)
            fold_states(before, seed)
            return seed

        def call(rows, out, aux):
            n = rows.shape[0]
            if not n:  # the general way, which flags an empty part
                return run(rows, out=out, fast=True, aux=aux)
            given = out
            try:
                if out is None:
                    out = np.empty(rows.shape, result)
                x = loops.rows(rows)
                before_exchange(x, aux, out)
            except Exception:  # noqa: BLE001 - the general way prepares again, and agrees on a failure
                return run(rows, out=given, fast=True, aux=aux)
            st[0], st[1], st[2] = 0, fp, n
            allgather(rec, recs)
            if heads.tobytes() == all_agreed:
                after_exchange(x, aux, seed_before(), out)
                return out
            carry = None if last else mine  # (read by the exchange's general reading only where it is not inline)
            agreed, offset, _ = self._checked(*ex.read(fp, carry, False), None, "scan arguments", None, None, n)
            with (collectively(self.comm) if agreed.agree_after else NULL):
                loops.scan(x, aux, seed=offset, out=out, reverse=reverse)
            return out
        return call


def _integer_fold(name: str, ufunc, acc: np.dtype):
    """The fold of the carries before a rank in the fused integer call (:meth:`LeanCalls._fused_scan_then_add`):
    a function of the carries' view that returns the offset.  Sums, maxima and minima of integers
    fold as Python ints (a list of at most p values: under a microsecond where NumPy's reduce of a
    small strided view took two, benchmarks/RESULTS.md "The exchange at 2-32 ranks"), a sum then
    wrapped into the accumulator's range as NumPy's integer addition wraps (it is exact modulo
    2**bits, whatever the order); such a fold reads the carries flat (``rows`` False) and returns
    a Python int within the accumulator's range, which the add takes as a value of that dtype
    (NumPy's rule for Python ints since 1.x: no scalar of the dtype made per call, 0.4 µs).
    Other exact operators, and bool accumulators, fold by the ufunc's ``reduce`` over the
    ``(place, 1)`` rows."""
    if acc.kind in "iu" and name in ("sum", "max", "min"):
        bits = 8 * acc.itemsize
        mask, half = (1 << bits) - 1, (1 << (bits - 1)) if acc.kind == "i" else 0
        if name == "sum":
            def fold(flat):
                return ((sum(flat.tolist()) + half) & mask) - half
        else:
            pick = max if name == "max" else min

            def fold(flat):
                return pick(flat.tolist())
        fold.rows = False
        return fold
    reduce = ufunc.reduce

    def fold(rows):
        return reduce(rows, axis=0, dtype=acc)
    fold.rows = True
    return fold
