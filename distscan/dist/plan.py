"""The distributed scan, once: a reusable plan that the API and both file pipelines call.

A :class:`ScanPlan` is built once per (operator, dtypes, exclusive, trailing shape, backend,
communicator, strategy, hierarchy, node size) and called many times, like cuda.compute's scanner
objects.  Every call of the API takes :meth:`ScanPlan.run` (or :meth:`ScanPlan.total`), on one
rank or many: there is one route from a call to its kernel, and the single-rank call is its
cheap case.  A distributed call on ``rows`` (this rank's ``(n, w)`` part, a backend array) is

1. the local work: the part's carry (``reduce_then_scan``: one read) or its scan and total
   (``scan_then_add``);
2. **one** exchange (:func:`distscan.dist.exchange.exchange`): a fixed-size record per rank
   carries the failure flag, the fingerprint of the arguments, the row count, the carry and
   what the rank's finish needs, so that agreeing on failures, checking that the arguments
   match, learning the offset *and choosing the rest of the path* are the same ``Allgather``;
3. the finish: the scan seeded with the offset, or the offset combined into the scan; then,
   if the exchange showed that some rank's finish may fail (a GPU launch, a conversion, NumPy
   told to raise on floating-point errors or warnings made errors), **one** small
   ``Allreduce`` agrees on it on every rank.  The finishes that cannot fail (and so ask for no
   agreement) are listed at :meth:`ScanPlan._finish_may_fail`.

**A rank never decides alone which collectives it makes.**  Everything a rank knows only
locally (its part is a view, a list, a scalar, a memmap; it passed ``out=``; its caches are
warm or cold; its call failed) changes its local work, and travels in the first record; the
collectives after it are chosen from what every rank gathered.  Caches here and in the
backends are local and never decide a collective.

Pipelines that work in chunks call the steps themselves: :meth:`local_carry` per chunk
(combined with :meth:`combine`), :meth:`exchange`, then :meth:`seeded_scan` or
:meth:`add_offset` per chunk.
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from . import exchange
from .lean import LeanCalls
from .totals import Totals
from .nodes import explicit, fixed, node_size_override
from .options import (EXACT, NULL, STRATEGY_ALIASES, UNTIMED, Timer, resolve_algorithm, resolve_hierarchy,
                      resolve_strategy)
from .._carry import Carries
from .agree import collectively, fingerprint, numpy_may_raise, raise_agreed, raise_mismatch
from .._dtypes import scan_types
from ..backends import get_backend
from ..ops import Op, get_op

__all__ = ["ScanPlan", "resolve_strategy", "resolve_algorithm", "resolve_hierarchy"]


class ScanPlan(LeanCalls, Totals):
    """A distributed scan of one kind, ready to run on any rows of that kind.

    Parameters
    ----------
    op : str, numpy.ufunc or Op
    input_dtype : dtype
        The dtype of the rows the plan is called on (native byte order).
    dtype : dtype, optional
        ``dtype=`` of the API: the dtype of the computation.
    out_dtype : dtype, optional
        The dtype of an ``out=`` array: the result dtype (``distscan._dtypes``).
    exclusive : bool
    trailing : tuple
        The shape of one row; ``w = prod(trailing)`` columns.
    comm : mpi4py.MPI.Comm or None
    backend : {"cpu", "cuda"} or a backend module
    strategy, hierarchy, node_size
        See :func:`distscan.scan`.
    agree_on : dict, optional
        More fields that every rank must share (e.g. the API's ``axis``).
    reverse : bool
        Scan from the last element of the last rank to the first of the first (suffix scans):
        each rank scans its rows last to first, from the carries of the ranks after it.

    Raises
    ------
    ValueError, TypeError
        Unknown names, or an operator the dtype does not support.  Raised locally: callers
        that build plans on every rank agree on such failures through :func:`distscan.dist.exchange.fail_exchange`.
    """

    def __init__(self, op, input_dtype, *, dtype=None, out_dtype=None, exclusive=False, trailing=(), comm=None,
                 backend="cpu", strategy="auto", hierarchy="auto", node_size=None, agree_on: Optional[dict] = None,
                 algorithm="auto", reverse: bool = False):
        self.op: Op = get_op(op)
        self.reverse = bool(reverse)
        self.exclusive = bool(exclusive)
        self.strategy = resolve_strategy(strategy)
        self.hierarchy = resolve_hierarchy(hierarchy)
        self.algorithm = resolve_algorithm(algorithm)
        self.be = get_backend(backend) if isinstance(backend, str) else backend  # a name, or a backend module
        self.backend = self.be.name
        self.types = scan_types(self.op, np.dtype(input_dtype), dtype, out_dtype)
        self.carries = Carries(self.op, self.types.acc, self.types.state)
        if self.carries.flagged or self.op.state is not None:
            # Only a scan that sees the elements lets a zero absorb (distscan._carry); a state's
            # carry is not a value that could be added to a scanned part.
            self.strategy = "reduce_then_scan"
        # initial: folded in as the first carry (plain and compensated scans), or projected on
        # every rank (segmented and affine: distscan.ops.state)
        self.projects = self.op.state is not None and self.op.state.initial_mode == "project"
        self.trailing = tuple(int(t) for t in trailing)
        self.w = math.prod(self.trailing)
        self.comm = comm
        self.size = 1 if comm is None else comm.Get_size()
        self.rank = 0 if comm is None else comm.Get_rank()
        # the ranks that scan first and last (reverse: the last rank's part comes first)
        self.first = self.rank == (self.size - 1 if self.reverse else 0)
        self.last = self.rank == (0 if self.reverse else self.size - 1)
        # The node size, read once (``node_size``, else DISTSCAN_NODE_SIZE as the call read it: a
        # nodes.FromEnv), compared in every exchange and used by it (fixed: not read again).
        # Assumption: a plan is reused only by calls that ask for the same node size (distscan._kinds
        # keys on ``node_size`` as the API passes it: nodes.node_size_of_call), never None for several.
        self.node_override = None
        if self.size > 1:
            self.node_override = node_size_override(node_size)
        elif explicit(node_size):  # one rank has no nodes, but node_size=0 raises on any rank count
            node_size_override(node_size)
        self.node_size = fixed(self.node_override)
        # What every rank must share.  Not the result dtype: out= may differ by rank (each casts
        # its own part; the carries travel in the accumulator dtype, which is compared).
        self.fields = {
            "operator": self.op.name, "operator definition": self.op.definition(self.types.acc),
            "exclusive": self.exclusive, "dtype": str(self.types.input),
            "accumulator dtype": str(self.types.acc), "computed in": str(self.types.compute),
            "trailing shape": self.trailing, "strategy": self.strategy, "hierarchy": self.hierarchy,
            "node size": self.node_override,
            "backend": self.backend, "algorithm": self.algorithm, "reverse": self.reverse, **(agree_on or {}),
        }
        self.fingerprint = fingerprint(self.fields)
        # a plain NumPy finish, forwards or over the mirrored rows (the same backend code on reversed
        # views: backends/cpu.scan): see _finish_may_fail
        self._lean_cpu = (self.backend == "cpu" and self.algorithm == "auto" and self.strategy == "reduce_then_scan"
                          and self.op.plain)
        # The lean call of an exact operator on integers scans first and adds the offset after
        # (_scan_then_add), unless reduce_then_scan was named.
        self._adds = (self.backend == "cpu" and self.algorithm == "auto"
                      and STRATEGY_ALIASES.get(strategy, strategy) != "reduce_then_scan"
                      and self.op.name in EXACT and self.types.acc.kind in "biu" and self.types.input.kind in "biu"
                      and self.types.result == self.types.acc and not self.exclusive and not self.reverse)
        self._floats = self.types.acc.kind in "fc"
        self._loops = None  # a state scan's loops, made in the first run (_prepare)

    # -- the whole call ---------------------------------------------------------------------

    def run(self, rows, *, out=None, initial=None, timings: Optional[dict] = None, error=None, finish=None,
            finish_may_fail: bool = False, what="scan arguments", extra: Optional[dict] = None, fast: bool = False,
            aux=()):
        """This rank's part of the scan of every rank's ``rows`` (``(n, w)`` backend arrays; 1-D for
        one column).

        ``out`` (an array of ``rows``' shape and the result dtype) or a new array receives it.
        ``initial`` (``(w,)`` in the accumulator dtype, or None) is folded in before the first
        row of the first rank.  ``error``: this rank could not prepare its part (``rows`` is then
        unused): it takes part in the exchange and every rank raises.  ``finish(out)``, if given,
        turns the scanned rows into what the call returns, inside the agreement that ends the
        call; ``finish_may_fail`` says that it may raise (a conversion), so that the exchange
        asks every rank to agree after it.  ``fast``: the part is a contiguous 1-D array of the plan's
        input dtype and ``out`` one the backend's hot path takes (the caller checked).
        ``extra`` adds fields to the mismatch message (not compared).  ``aux``: the auxiliary
        inputs of ``rows`` (segment flags, coefficients) for the operators that take them.
        Collective; the same exception on every rank if any rank fails.
        """
        if fast and self._adds and timings is None and self.size > 1:
            return self._scan_then_add(rows, out)
        timer = UNTIMED if timings is None else Timer(timings, self.be)
        general = self._general(aux, initial)  # the backend's keywords beyond the plain scan's
        if self.size == 1:
            if error is not None:
                raise error
            given = out
            if fast and timings is None and general is None:
                out = (self.one_rank()(rows, out) if initial is None
                       else self.be.scan_lean(rows, self.op, self.types, self.exclusive, out, initial))
            else:
                with timer.phase("scan"):
                    out, _ = self.be.scan(rows, self.op, self.types, exclusive=self.exclusive,
                                          seed=self.initial_seed(initial), out=out, algorithm=self.algorithm,
                                          **(general or {}))
            if finish is not None:
                return finish(out)
            # the caller's out itself, as NumPy's out= returns it (a backend may return a view of it)
            return given if given is not None else out
        carry, n, last, loops, seed, scanned = None, 0, self.last, None, None, None
        seeds_initial = self.first and initial is not None and not self.projects
        if error is None:
            try:
                if self.op.state is not None:
                    loops = self._prepare()
                n = rows.shape[0]
                if out is None:  # before the exchange: an allocation that fails is agreed in it
                    out = self.be.array_module().empty(rows.shape, self.types.result)
                if loops is not None and not (out.dtype == self.types.acc and out.flags.writeable):
                    loops = None  # a narrower out: the backend's scan, through a buffer (may fail)
                if loops is not None:
                    rows = loops.rows(rows)  # the one conversion to the accumulator dtype
                if self.first and initial is not None:
                    seed = self.initial_seed(initial)
                if self.strategy == "reduce_then_scan":
                    with timer.phase("reduce"):
                        if n and not last:  # the last rank's carry is never read
                            carry = loops.carry(rows, aux, self.reverse) if loops is not None else \
                                self.carries.of_part(self.be, rows, self.types, aux, self.reverse) if general \
                                else self.carries.of_part(self.be, rows, self.types)
                else:
                    # A narrower result (float16 sums, accumulated in float32) is scanned and offset
                    # in the accumulator dtype and rounded once, after the offset: scanned into out
                    # and offset there, it was rounded twice (122 ulp where the prefix cancels).
                    scanned = out if out.dtype == self.types.acc else \
                        self.be.array_module().empty(rows.shape, self.types.acc)
                    with timer.phase("scan"):
                        _, total = self.be.scan(rows, self.op, self.types, exclusive=self.exclusive,
                                                seed=initial if seeds_initial else None, out=scanned,
                                                want_total=True, algorithm=self.algorithm, **(general or {}))
                    if n or seeds_initial:
                        carry = total  # the initial value travels in it
                if seeds_initial and self.strategy == "reduce_then_scan":
                    init = self.carries.of_values(initial)
                    carry = init if carry is None else self.combine(init, carry)
            except BaseException as exc:  # noqa: BLE001 - agreed in the exchange, then raised on every rank
                error = exc  # (a user's combine may raise KeyboardInterrupt or SystemExit: agree.raise_agreed)
        # The prepared loops' finish cannot fail (their assumption: cpu_states.Loops): no agreement.
        may_fail = finish_may_fail or (loops is None and self._finish_may_fail(fast))
        with timer.phase("exscan"):
            agreed, offset, _ = self._exchange(carry, error, n, what, extra, False, may_fail, last,
                                               initial_field=self._initial_field(initial))
        if not self.first:
            seed = offset
        with (collectively(self.comm) if agreed.agree_after else NULL):
            self._raise_quiet_error(agreed)
            if self.strategy == "reduce_then_scan":
                with timer.phase("scan"):
                    # into the out allocated before the exchange (or the caller's)
                    if loops is not None:
                        loops.scan(rows, aux, seed=seed, out=out, initial=initial if self.projects else None,
                                   reverse=self.reverse)
                    elif fast and n and general is None:
                        self.be.scan_lean(rows, self.op, self.types, self.exclusive, out, seed)
                    elif fast and n and self._lean_cpu and self.reverse and not aux:  # a plain reverse scan:
                        # the lean scan over the mirrored views (backends/cpu.scan does so by chunks)
                        self.be.scan_lean(rows[::-1], self.op, self.types, self.exclusive, out[::-1], seed)
                    elif not (fast and n and general is not None and self._seeded_lean(rows, out, aux, seed, general)):
                        self.be.scan(rows, self.op, self.types, exclusive=self.exclusive, seed=seed, out=out,
                                     algorithm=self.algorithm, **(general or {}))
            else:
                if offset is not None:
                    with timer.phase("combine"):
                        self.be.combine(scanned, self.op, self.types, offset)
                        if self.exclusive and n:
                            # the first row in scan order is the offset itself: the local scan put the
                            # identity there, and offset op identity is not the offset for every
                            # operator (-0.0 + 0.0 is 0.0; gcd(-6, 0) is 6), as the pipeline's add
                            row = -1 if self.reverse else 0
                            scanned[row] = self.be.array_module().asarray(offset).reshape(scanned[row].shape)
                if scanned is not out:
                    self.be.array_module().copyto(out, scanned, casting="unsafe")
            if finish is not None:
                out = finish(out)
        return out

    def _prepare(self):
        """What a state scan's plan makes once, in its first run and before its exchange (a failure,
        a compile that fails, is agreed in that exchange like any other): the carries' fold
        (:meth:`Carries.prepare`: no fold compiles after the exchange) and the backend's loops
        (``prepare``, CPU: :class:`distscan.backends.cpu_states.Loops`), or None where the backend
        has none (declared operators, the GPU's)."""
        loops = self._loops
        if loops is None:
            self.carries.prepare(self.w)
            prepare = getattr(self.be, "prepare", None)
            loops = prepare(self.op, self.types, self.exclusive, self.w) if prepare is not None else None
            self._loops = loops if loops is not None else False
        return loops or None

    def _general(self, aux, initial) -> Optional[dict]:
        """The backend keywords of a reverse, state or projected scan (None: a plain forward one,
        which every backend path takes as it always has)."""
        if not (self.reverse or aux or self.op.state is not None):
            return None
        return {"aux": aux, "reverse": self.reverse, "initial": initial if self.projects else None}

    def _initial_field(self, initial) -> dict:
        """Projected ``initial`` values are every rank's own: a rank whose value differs changes the
        fingerprint it sends (the field's), so that all raise, naming it, instead of projecting
        different values.  ``{}`` where ``initial`` is the first rank's alone (or none)."""
        if initial is None or not self.projects:
            return {}
        value = np.asarray(initial)
        shown = (repr(value.reshape(-1)[0].item()) if value.size == 1 else np.array2string(value) if value.size <= 8
                 else f"an array of shape {value.shape}")
        return {"initial": shown, "_bytes": value.tobytes()}

    def _finish_may_fail(self, fast: bool) -> bool:
        """Whether this rank's finish (the seeded scan or the add) may raise, so that every rank
        must agree after it.  Device launches, conversions, the add of ``scan_then_add`` and a
        named algorithm's teaching path may.  Three finishes cannot (one collective in all): the
        lean integer call (:meth:`_scan_then_add`); a CPU state scan by its prepared loops into
        an array of the accumulator dtype allocated before the exchange (run() asks no agreement
        for it: the assumption is at :class:`distscan.backends.cpu_states.Loops`); NumPy's
        accumulate of a plain part (``fast``, forwards or reverse: a reverse scan is the same
        accumulate over mirrored views) into an array allocated before the exchange, when
        nothing turns a floating-point flag into an exception (integers set none; for floats,
        :func:`distscan.dist.agree.numpy_may_raise`: errstate, warnings filters)."""
        if not (fast and self._lean_cpu):
            return True
        return self._floats and numpy_may_raise()

    # -- the steps, for callers that work in chunks --------------------------------------------

    def identity(self) -> np.ndarray:
        """The carry that combines with any other to give that other (the neutral element)."""
        return self.carries.identity(self.w)

    def local_carry(self, rows, aux=()) -> np.ndarray:
        """The carry of ``rows`` (a backend array ``(n, w)``; ``aux`` its auxiliary inputs), in scan
        order."""
        if self._general(aux, None) is None:
            return self.carries.of_part(self.be, rows, self.types)
        return self.carries.of_part(self.be, rows, self.types, aux, self.reverse)

    def combine(self, earlier, later) -> np.ndarray:
        return self.carries.combine(earlier, later)

    def exchange(self, carry, error: Optional[BaseException] = None, *, rows: int = 0, what="scan arguments",
                 extra: Optional[dict] = None, want_total: bool = False):
        """The seed for this rank's scan from every rank's carry: one collective that also agrees on
        ``error`` (any rank's) and on the arguments.  ``carry`` None: this rank's part holds
        nothing (no rows, no initial value).  The seed is None when no rank before this one
        holds anything (an exclusive scan then starts at the operator's identity).
        With ``want_total``, returns ``(seed, total value or None, total rows)``."""
        agreed, seed, total = self._exchange(carry, error, rows, what, extra, want_total, False)
        return (seed, total, agreed.rows) if want_total else seed

    def _exchange(self, carry, error, rows, what, extra, want_total, agree_after, unread=False, initial_field=None):
        """``(Status, seed, total)``; ``agree_after``: this rank's work after the exchange may
        fail (the Status then tells every rank to agree after it); ``unread``: no rank reads this
        rank's carry (the last rank's, without ``want_total``), so a missing one is not flagged;
        ``initial_field``: :meth:`_initial_field`, compared with the arguments."""
        initial_field = initial_field or {}
        salt = fingerprint({"initial": initial_field["_bytes"]}) if initial_field else 0
        h = exchange
        flags = h.AGREE_AFTER if agree_after else 0
        if error is not None:
            flags |= h.FAILED | h.EMPTY
        elif carry is None and not unread:
            flags |= h.EMPTY
        if self.size == 1:
            if error is not None:
                raise error
            return h.Status(False, True, False, rows, agree_after), None, carry
        ex = self._exchanger
        if ex is None:
            ex = self._exchanger = h.Exchange(self.comm, self.hierarchy, self.node_size, self.identity(),
                                              self.carries.fold, self.carries.combine, self.reverse,
                                              guarded=self.op.runs_user_code)
        agreed, offset, total = ex(flags, 0 if error is not None else self.fingerprint ^ salt, rows,
                                   None if error is not None else carry, want_total=want_total)
        return self._checked(agreed, offset, total, error, what, extra, initial_field, rows)

    def _checked(self, agreed, offset, total, error, what, extra, initial_field, rows):
        """What the exchange agreed, or the agreed exception raised on every rank (a failure on
        some rank, or arguments that differ); carries as seed values."""
        if agreed.failed:
            raise_agreed(self.comm, error if error is not None else self._exchanger.error)
        if not agreed.agreed:
            raise_mismatch(self.comm, what, {**self.fields, **(extra or {}), **(initial_field or {}), "_rows": rows})
        if self.carries.flagged:
            return agreed, self.carries.value(offset), self.carries.value(total)
        return agreed, offset, total

    _exchanger = None

    def seeded_scan(self, rows, seed, out=None, want_total=False, aux=(), initial=None):
        """The local scan of ``rows`` from ``seed`` (None: the identity); ``(out, total value)``.
        ``initial``: the call's, which a projecting operator applies here (the others take it as
        the first rank's seed: see :meth:`initial_seed`)."""
        general = self._general(aux, initial)
        return self.be.scan(rows, self.op, self.types, exclusive=self.exclusive, seed=seed, out=out,
                            want_total=want_total, algorithm=self.algorithm, **(general or {}))

    def initial_seed(self, initial):
        """What ``initial`` seeds the first rank's scan (its first chunk) with: the value (plain), the
        state of it (compensated), nothing (None: projected on every rank instead)."""
        if initial is None or self.projects:
            return None
        return initial if self.op.state is None else self.carries.of_values(initial)

    def add_offset(self, out, offset) -> None:
        """``out[i] = offset op out[i]`` in place (``scan_then_add``'s finish)."""
        if offset is not None:
            self.be.combine(out, self.op, self.types, offset)
