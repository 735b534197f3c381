"""The distributed scan, once: a reusable plan that the API and both file pipelines call.

A :class:`ScanPlan` is built once per (operator, dtypes, exclusive, trailing shape, backend,
communicator, strategy, hierarchy) and called many times, like cuda.compute's scanner
objects.  A call on ``rows`` (this rank's ``(n, w)`` part, a backend array) is

1. the local work: the part's carry (``reduce_then_scan``: one read) or its scan and total
   (``scan_then_add``);
2. **one** exchange (:func:`distscan.hierarchy.exchange`): a fixed-size record per rank
   carries the failure flag, the fingerprint of the arguments, the row count and the carry,
   so that agreeing on failures, checking that the arguments match, and learning the offset
   are the same ``Allgather``;
3. the finish: the scan seeded with the offset, or the offset combined into the scan; then
   **one** small ``Allreduce`` agrees on failures of this last step.

Two collectives in all on the common path (flat, carries of a few columns).  Pipelines that
work in chunks call the steps themselves: :meth:`local_carry` per chunk (combined with
:meth:`combine`), :meth:`exchange`, then :meth:`seeded_scan` or :meth:`add_offset` per chunk.
"""

from __future__ import annotations

import math
import time
from contextlib import contextmanager
from typing import Optional

import numpy as np

from . import hierarchy as _hierarchy
from ._carry import Carries
from ._collective import collectively, fingerprint, raise_agreed, raise_mismatch
from ._dtypes import scan_types
from .backends import get_backend
from .ops import Op, get_op

STRATEGIES = ("auto", "reduce_then_scan", "scan_then_add")
_STRATEGY_ALIASES = {"3n": "reduce_then_scan", "4n": "scan_then_add",
                     "reduce-then-scan": "reduce_then_scan", "scan-then-add": "scan_then_add"}
# Measured faster at every size and rank count tried (benchmarks/RESULTS.md): 3N bytes, not 4N.
DEFAULT_STRATEGY = "reduce_then_scan"


def resolve_strategy(strategy: str) -> str:
    """A strategy name or alias -> ``reduce_then_scan`` or ``scan_then_add``.

    Raises
    ------
    ValueError
        For an unknown name.
    """
    s = _STRATEGY_ALIASES.get(strategy, strategy)
    if s not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
    return DEFAULT_STRATEGY if s == "auto" else s


def resolve_algorithm(algorithm: str) -> str:
    """An ``algorithm=`` name (:data:`distscan.algorithms.ALGORITHMS`), checked.

    Raises
    ------
    ValueError
        For an unknown name, listing the valid ones.
    """
    from .algorithms import resolve_algorithm as resolve
    return resolve(algorithm)


def resolve_hierarchy(hierarchy: str) -> str:
    if hierarchy not in _hierarchy.METHODS:
        raise ValueError(f"unknown hierarchy method {hierarchy!r}; choose one of {', '.join(_hierarchy.METHODS)}")
    return hierarchy


class _Timer:
    """Per-phase wall times into a dict (device work synchronised first); free when off."""

    def __init__(self, timings: Optional[dict], backend):
        self.timings = timings
        self._sync = getattr(backend, "synchronize", None) if timings is not None else None

    @contextmanager
    def phase(self, name: str):
        if self.timings is None:
            yield
            return
        if self._sync:
            self._sync()
        t0 = time.perf_counter()
        yield
        if self._sync:
            self._sync()
        self.timings[name] = self.timings.get(name, 0.0) + time.perf_counter() - t0


class ScanPlan:
    """A distributed scan of one kind, ready to run on any rows of that kind.

    Parameters
    ----------
    op : str, numpy.ufunc or Op
    input_dtype : dtype
        The dtype of the rows the plan is called on (native byte order).
    dtype : dtype, optional
        Result dtype (``dtype=`` of the API).
    exclusive : bool
    trailing : tuple
        The shape of one row; ``w = prod(trailing)`` columns.
    comm : mpi4py.MPI.Comm or None
    backend : {"cpu", "cuda"} or a backend module
    strategy, hierarchy, node_size
        See :func:`distscan.scan`.
    agree_on : dict, optional
        More fields that every rank must share (e.g. the API's ``axis``).

    Raises
    ------
    ValueError, TypeError
        Unknown names, or an operator the dtype does not support.  Raised locally: callers
        that build plans on every rank agree on such failures through :func:`fail_exchange`.
    """

    def __init__(self, op, input_dtype, *, dtype=None, exclusive=False, trailing=(), comm=None, backend="cpu",
                 strategy="auto", hierarchy="auto", node_size=None, agree_on: Optional[dict] = None,
                 algorithm="auto"):
        self.op: Op = get_op(op)
        self.exclusive = bool(exclusive)
        self.strategy = resolve_strategy(strategy)
        self.hierarchy = resolve_hierarchy(hierarchy)
        self.algorithm = resolve_algorithm(algorithm)
        self.node_size = node_size
        self.be = get_backend(backend) if isinstance(backend, str) else backend  # a name, or a backend module
        self.backend = self.be.name
        self.types = scan_types(self.op, np.dtype(input_dtype), dtype)
        self.carries = Carries(self.op, self.types.acc)
        if self.carries.flagged:
            # Only a scan that sees the elements lets a zero absorb (distscan._carry).
            self.strategy = "reduce_then_scan"
        self.trailing = tuple(int(t) for t in trailing)
        self.w = math.prod(self.trailing)
        self.comm = comm
        self.size = 1 if comm is None else comm.Get_size()
        self.rank = 0 if comm is None else comm.Get_rank()
        self.fields = {
            "operator": self.op.name, "exclusive": self.exclusive, "dtype": str(self.types.input),
            "result dtype": str(self.types.result), "trailing shape": self.trailing, "strategy": self.strategy,
            "hierarchy": self.hierarchy, "backend": self.backend, "algorithm": self.algorithm, **(agree_on or {}),
        }
        self.fingerprint = fingerprint(self.fields)
        self._flat = None  # known after the first exchange: whether offsets take the flat path
        self._fast = self._fast_buffers()

    def _fast_buffers(self):
        """Preallocated records for :meth:`call_1d` (None where that path does not apply)."""
        if (self.size == 1 or not hasattr(self.be, "lean_arrays") or self.w != 1 or self.carries.flagged
                or self.algorithm != "auto" or self.strategy != "reduce_then_scan"
                or self.types.acc != self.types.result):
            return None
        h = _hierarchy
        rec = np.zeros(h.RECORD_BYTES, np.uint8)
        recs = np.empty((self.size, h.RECORD_BYTES), np.uint8)
        head, size = h.STATUS_BYTES, self.types.acc.itemsize
        rec[:head] = h.status(False, self.fingerprint, 0).view(np.uint8)
        agreed = bytes(rec[:h.AGREED_BYTES]) * self.size  # every rank's record, when all is well
        return (rec, rec[:head].view(np.int64), rec[head:head + size].view(self.types.acc), recs,
                recs[:, :h.AGREED_BYTES], agreed, recs[:, head:head + size].view(self.types.acc)[:, 0])

    def call_1d(self, x, out=None):
        """The common distributed call, lean: a scan of a contiguous 1-D part of the plan's input
        dtype, ``out=`` (GPU only) and nothing else given.  Returns None where it does not
        apply (the caller then takes :meth:`__call__`).

        One ``Allgather`` of the preallocated records.  On the CPU (inclusive scans only) no
        final agreement: what follows the exchange is NumPy's accumulate into an array
        allocated before it, which cannot fail unless NumPy is told to raise on floating-point
        errors (then the general path runs).  On the GPU the reduction and the seeded scan are
        one launch each with no host work around them beyond the carry's copy, and one small
        ``Allreduce`` after the scan's launch (it overlaps the kernel) agrees on a failed launch.
        """
        fast = self._fast
        if fast is None or not self._flat or not self.be.lean_arrays(x, out, self.types):
            return None
        host = self.backend == "cpu"
        if host and (self.exclusive or _raising()):
            return None
        rec, st, carry, recs, agreed_part, agreed, carries = fast
        n = x.shape[0]
        error = None
        try:
            if out is None:
                out = self.be.array_module().empty(n, self.types.result)
            st[_hierarchy.ROWS] = n
            if self.rank < self.size - 1:
                if not n:
                    carry[0] = self.op.identity(self.types.acc)
                elif host:
                    carry[0] = self.op.ufunc.reduce(x, dtype=self.types.acc)
                else:
                    carry[0] = self.be.reduce(x, self.op, self.types)[0]
        except Exception as exc:  # noqa: BLE001 - agreed through the record, raised on every rank
            error, st[_hierarchy.FLAGS] = exc, _hierarchy.FAILED
        self.comm.Allgather(rec, recs)
        st[_hierarchy.FLAGS] = 0
        if agreed_part.tobytes() != agreed:
            # Someone failed or differs: every rank is here; settle it the general way.
            if recs[:, :_hierarchy.STATUS_BYTES].view(np.int64)[:, _hierarchy.FLAGS].any():
                raise_agreed(self.comm, error)
            raise_mismatch(self.comm, "scan arguments", {**self.fields, "_rows": n})
        before = fold_in_order(self.op.ufunc, carries[: self.rank], self.types.acc) if self.rank else None
        if not host:
            with collectively(self.comm):
                if n:
                    self.be.scan_lean(x, self.op, self.types, self.exclusive, out, before)
            return out
        if n:
            if self.rank:
                np.copyto(out, x, casting="unsafe")
                # The offset folded into the first element, then one sequential pass (3N bytes).
                self.op.ufunc(before, out[:1], out=out[:1])
                self.op.ufunc.accumulate(out, out=out)
            else:
                self.op.ufunc.accumulate(x, dtype=self.types.acc, out=out)
        return out

    # -- the whole call ---------------------------------------------------------------------

    def __call__(self, rows, *, out=None, initial=None, timings: Optional[dict] = None, what="scan arguments",
                 extra: Optional[dict] = None):
        """This rank's part of the scan of every rank's ``rows`` (``(n, w)`` backend arrays).

        ``out`` (an ``(n, w)`` array of the result dtype) or a new array receives it.
        ``initial`` (``(w,)`` in the accumulator dtype, or None) is folded in before the first
        row of the first rank.  ``extra`` adds fields to the mismatch message (not compared).
        Collective; the same exception on every rank if any rank fails.
        """
        timer = _Timer(timings, self.be)
        if self.size == 1:
            with timer.phase("scan"):
                out, _ = self.be.scan(rows, self.op, self.types, exclusive=self.exclusive, seed=initial, out=out,
                                      algorithm=self.algorithm)
            return out
        error, carry = None, None
        try:
            if self.strategy == "reduce_then_scan":
                with timer.phase("reduce"):
                    carry = self.local_carry(rows, skip=self.rank == self.size - 1)
            else:
                with timer.phase("scan"):
                    out, total = self.be.scan(rows, self.op, self.types, exclusive=self.exclusive,
                                              seed=initial if self.rank == 0 else None, out=out, want_total=True,
                                              algorithm=self.algorithm)
                carry = total
            if self.rank == 0 and initial is not None and self.strategy == "reduce_then_scan":
                carry = self.combine(self.carries.of_values(initial), carry)
        except Exception as exc:  # noqa: BLE001 - agreed in the exchange, then raised on every rank
            error = exc
        with timer.phase("exscan"):
            offset = self.exchange(carry, error, rows=int(rows.shape[0]), what=what, extra=extra)
        seed = offset if self.rank > 0 else initial
        with collectively(self.comm):
            if self.strategy == "reduce_then_scan":
                with timer.phase("scan"):
                    out, _ = self.be.scan(rows, self.op, self.types, exclusive=self.exclusive, seed=seed, out=out,
                                          algorithm=self.algorithm)
            elif offset is not None:
                with timer.phase("combine"):
                    self.be.combine(out, self.op, self.types, offset)
        return out

    # -- the steps, for callers that work in chunks --------------------------------------------

    def identity(self) -> np.ndarray:
        """The carry of an empty part."""
        return self.carries.identity(self.w)

    def local_carry(self, rows, *, skip: bool = False) -> np.ndarray:
        """The carry of ``rows`` (``skip``: the identity, for the last rank, whose carry nobody reads)."""
        return self.identity() if skip else self.carries.of_part(self.be, rows, self.types)

    def combine(self, earlier, later) -> np.ndarray:
        return self.carries.combine(earlier, later)

    def exchange(self, carry, error: Optional[BaseException] = None, *, rows: int = 0, what="scan arguments",
                 extra: Optional[dict] = None, want_total: bool = False):
        """The seed for this rank's scan (None on rank 0), from every rank's carry: one collective
        that also agrees on ``error`` (any rank's) and on the arguments.  With ``want_total``,
        returns ``(seed, total value, total rows)``."""
        if carry is None or error is not None:
            carry = self.identity()
        st = _hierarchy.status(error is not None, self.fingerprint if error is None else 0, rows)
        global_st, offset, total = _hierarchy.exchange(st, carry, self.carries.combine, self.comm, self.hierarchy,
                                                       self.node_size, want_total=want_total)
        if global_st.failed:
            raise_agreed(self.comm, error)
        if not global_st.agreed:
            raise_mismatch(self.comm, what, {**self.fields, **(extra or {}), "_rows": rows})
        if self._flat is None and self.comm is not None:
            self._flat = _hierarchy.resolve_method(self.hierarchy, self.comm, self.node_size) == "flat"
        seed = self.carries.value(offset)
        if want_total:
            return seed, self.carries.value(total), global_st.rows
        return seed

    def seeded_scan(self, rows, seed, out=None, want_total=False):
        """The local scan of ``rows`` from ``seed`` (None: the identity); ``(out, total value)``."""
        return self.be.scan(rows, self.op, self.types, exclusive=self.exclusive, seed=seed, out=out,
                            want_total=want_total, algorithm=self.algorithm)

    def add_offset(self, out, offset) -> None:
        """``out[i] = offset op out[i]`` in place (``scan_then_add``'s finish)."""
        if offset is not None:
            self.be.combine(out, self.op, self.types, offset)


def fold_in_order(ufunc, values: np.ndarray, acc):
    """``values[0] . values[1] . ...`` strictly left to right, as the general exchange folds
    carries (``ufunc.reduce`` sums floats pairwise from 8 values on: other roundings)."""
    return values[0] if len(values) == 1 else ufunc.accumulate(values, dtype=acc)[-1]


def _raising() -> bool:
    """Whether NumPy is set to raise on some floating-point error (np.errstate(...='raise'))."""
    return "raise" in np.geterr().values()


def fail_exchange(comm, error: BaseException, *, what="scan arguments") -> None:
    """Take part in a plan's exchange from a rank that could not build the plan: the record says
    "failed", so every rank raises the agreed error (this one too)."""
    st = _hierarchy.status(True, 0, 0)
    _hierarchy.exchange(st, np.zeros(1, np.uint8), lambda a, b: a, comm)
    raise_agreed(comm, error)
