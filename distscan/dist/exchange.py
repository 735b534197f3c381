"""Rank offsets: what the ranks before this one hold, flat or node-then-cluster.

Every rank contributes a *record*: a few status words (a failure flag, a fingerprint of the
arguments, its row count) and its carry (a small array, see :mod:`distscan._carry`).  Each
rank gets back the status of the whole communicator (any failure? do the fingerprints agree?
how many rows?) and the combination of the carries of all ranks before it, in rank order.

``flat``
    One ``Allgather`` of the records: each rank combines the carries before its own, in rank
    order, so float offsets do not depend on MPI's algorithm.  One collective for the
    agreement on failures and arguments *and* the offsets.
``node``
    After the same first gather (it agrees on failures and arguments), the offsets node then
    cluster (:mod:`distscan.dist.nodes`).
recursive doubling (from :data:`DOUBLING_RANKS` ranks on, whatever the method)
    ``log2(p)`` rounds of ``Sendrecv`` of one record with the rank ``2^k`` away (the hypercube
    scan that MPICH's ``MPI_Scan`` uses): each rank folds what its partner's half holds into its
    prefix and into its half's total, so that at the end every rank has the status of all
    (failures, fingerprints, rows) *and* its offset: O(log p) latency and O(1) bytes per rank,
    where the gather is O(p) bytes per rank (1 MB at 16,000 ranks).  Chosen by the size of the
    communicator alone, never by an argument, so that ranks whose arguments differ (or that
    failed before reading them) still meet in the same collective.

A reverse scan (``reverse=True``) folds the carries of the ranks *after* this one, last rank
first: scan order is the mirror of rank order, and every method reads the records in it.

Records travel as bytes: no MPI datatype or operation is involved, so any carry (float16,
complex, the flagged product carries) travels alike.  The first rank's offset is None
("nothing came before").
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Callable, Optional

import numpy as np

from .agree import raise_agreed
from .nodes import agreed_doubling, fold, gather, node_offsets, resolve_method

# A record is RECORD_BYTES long on every rank whatever happens, so that ranks whose arguments
# differ (or that failed before they knew their carry) still meet in the same Allgather:
# three status words (flags, the fingerprint of the arguments, the row count), then the
# carry inline when it fits; else the BIG flag is set and the carries follow in a second
# Allgather, once every rank knows that their sizes agree.  Small records keep the gather
# in MPI's latency-bound algorithms (64 bytes: a float64 product carry still fits).
#
# Every collective after this first one is decided from what it gathered, never from what a
# rank knows alone: a failure (FAILED) or differing fingerprints end the call on every rank;
# BIG adds the second gather; AGREE_AFTER (some rank's finish may still fail) adds the
# agreement after the finish on every rank.
FLAGS, FINGERPRINT, ROWS = range(3)
FAILED, BIG, EMPTY, AGREE_AFTER, MISMATCH = 1, 2, 4, 8, 16  # bits of FLAGS (MISMATCH: merged records differ)
# EMPTY: the rank's carry holds nothing (no rows, no initial value): ranks after it fold
# nothing in for it, and a rank with only EMPTY ranks before it gets the offset None.
STATUS_BYTES = 8 * 3
STATUS_HEAD = 16  # the flags and the fingerprint: what the common call compares (the rows go unread)
RECORD_BYTES = 64
INLINE_BYTES = RECORD_BYTES - STATUS_BYTES

def _doubling_ranks(raw: str):
    """The variable's number, or the raw text where it is none: an exchange then raises on every
    rank (nodes.agreed_doubling), where raising at import would end only the ranks that have it."""
    try:
        return int(raw)
    except ValueError:
        return raw


# From this many ranks on, the exchange is recursive doubling instead of a gather (see the
# module docstring; benchmarks/RESULTS.md measures both and docs/performance.md models them).
# Read from the environment once, at import.  It chooses a call's first collective, so the ranks
# of a communicator must choose alike: they check it once per communicator (nodes.agreed_doubling).
DOUBLING_RANKS = _doubling_ranks(os.environ.get("DISTSCAN_DOUBLING_RANKS", "1024"))


@dataclass
class Status:
    """What the first gather tells every rank about all of them."""

    failed: bool       # some rank failed
    agreed: bool       # every rank has the same fingerprint
    big: bool          # some carry did not travel inline
    rows: int          # rows on all ranks
    agree_after: bool = False  # some rank's finish may fail: every rank agrees after it
    rows_before: int = 0       # rows on the ranks before this one


def status(failed: bool, fingerprint: int, rows: int, *, empty: bool = False, agree_after: bool = False) -> np.ndarray:
    """A rank's status words: flags, its argument fingerprint, its row count."""
    flags = (FAILED if failed else 0) | (EMPTY if empty else 0) | (AGREE_AFTER if agree_after else 0)
    return np.array([flags, fingerprint, rows], np.int64)


# -- the exchange ---------------------------------------------------------------------------

Combine = Callable[[np.ndarray, np.ndarray], np.ndarray]


def python_fold(combine: Combine) -> Callable:
    """A fold of a stack of carries (in order; None for none) made of a two-carry ``combine``."""
    return lambda stack: fold(stack, combine)


# What the common call's exchange finds (not changed by its readers).
_ALL_AGREED = Status(False, True, False, -1)
_ALL_AGREED_AFTER = Status(False, True, False, -1, True)


class Exchange:
    """One plan's exchange over one communicator, its buffers kept between calls.

    ``like`` is a carry's shape and dtype; ``fold(stack)`` combines a stack of carries in rank
    order (None for an empty stack; a vectorised ``ufunc.accumulate`` for plain operators) and
    ``combine(earlier, later)`` two of them.  The method (flat or node) is resolved at the first
    call's agreement and kept: every rank resolves it at the same exchange (the node split is
    cached on the communicator itself, :func:`distscan.dist.nodes.get_hierarchy`), so a rank whose plan is new
    makes no collective that the others do not.

    Assumption: what the method depends on (``method``, ``comm``, ``node_size``) is fixed for the
    exchange's life and, once the first gather agreed, the same on every rank: a plan passes the
    node size it read once and its fingerprint names (``nodes.fixed``); None reads the variable
    where the hierarchy is needed, unchecked (:func:`exchange`).  Doubling: ``nodes.agreed_doubling``.
    """

    def __init__(self, comm, method: str, node_size, like: np.ndarray, fold: Callable, combine: Combine,
                 reverse: bool = False, guarded: bool = False):
        self.comm, self.method, self.node_size = comm, method, node_size
        self.size, self.rank = comm.Get_size(), comm.Get_rank()
        self.quiet_error: Optional[BaseException] = None  # what the last call's folds gave quietly
        self.fold, self.combine = self._quiet(fold), self._quiet(combine)
        # guarded: the combine is the user's code (a declared operator), which may raise on some
        # ranks only, between two rounds of doubling or before an agreement: see __call__.
        self.guarded = guarded
        self.error: Optional[BaseException] = None  # what the user's combine raised in the last call
        if guarded:
            self.fold, self.combine = self._caught(self.fold), self._caught(self.combine)
        self.reverse = reverse
        # the rank's place in scan order (reverse: the last rank's part is scanned first)
        self.place = self.size - 1 - self.rank if reverse else self.rank
        self.doubling = agreed_doubling(comm, self.size, DOUBLING_RANKS)  # ValueError if the ranks differ
        self.like = np.zeros_like(np.ascontiguousarray(like))
        self.inline = self.like.nbytes <= INLINE_BYTES
        self.rec = np.zeros(RECORD_BYTES, np.uint8)
        self.recs = np.zeros((self.size, RECORD_BYTES), np.uint8)
        self.st = self.rec[:STATUS_BYTES].view(np.int64)
        self.sts = self.recs[:, :STATUS_BYTES].view(np.int64)  # (size, 3)
        # every rank's flags and fingerprint, one 16-byte item a rank: its tobytes() copies size
        # items where a (size, 16) uint8 view's copies 16 times as many (half the time at 32 ranks)
        self.heads = self.recs.view(f"V{STATUS_HEAD}")[:, 0]
        if self.inline:
            body = slice(STATUS_BYTES, STATUS_BYTES + self.like.nbytes)
            self.mine = self.rec[body].view(self.like.dtype).reshape(self.like.shape)
            self.carries = self.recs[:, body].view(self.like.dtype).reshape((self.size,) + self.like.shape)
        self.resolved = None
        self._agreed = {}  # (fingerprint, flags) -> the status bytes of every rank (agreed_heads)

    def __call__(self, flags: int, fingerprint: int, rows: int, carry, *, want_total: bool = False):
        """``(Status, offset, total)``: see :func:`exchange` (``carry`` None: this rank holds
        nothing, and ``flags`` says EMPTY).

        A guarded exchange (the user's combine) never lets the combine's exception out between
        collectives: it keeps it in :attr:`error`, goes on with a placeholder carry (every later
        message has its size), and ends with one more collective, made by every rank once all agree
        (the operator is in the fingerprint), that tells all whether any combine failed."""
        if not self.guarded:
            return self._exchange(flags, fingerprint, rows, carry, want_total)
        self.error = None
        status, offset, total = self._exchange(flags, fingerprint, rows, carry, want_total)
        if status.failed or not status.agreed:
            return status, offset, total
        if self.comm.allreduce(0 if self.error is None else 1):
            return replace(status, failed=True), None, None
        return status, offset, total

    def _quiet(self, fn: Callable) -> Callable:
        """``fn`` giving the quiet result where the caller's NumPy raises a floating-point error
        (errstate, -W error), kept in :attr:`quiet_error`: a raise on one rank after the collective
        would leave the others waiting (a CPU plan raises it in an agreement: dist.totals)."""
        def call(*args):
            try:
                return fn(*args)
            except (FloatingPointError, RuntimeWarning) as exc:
                self.quiet_error = self.quiet_error or exc
                with np.errstate(all="ignore"):
                    return fn(*args)
        return call

    def _caught(self, fn: Callable) -> Callable:
        """``fn``, whose exception is kept in :attr:`error` (the first one) and gives a placeholder."""
        def call(*args):
            try:
                return fn(*args)
            except BaseException as exc:  # noqa: BLE001 - agreed in __call__ (KeyboardInterrupt too)
                if self.error is None:
                    self.error = exc
                return self.like.copy()
        return call

    def _exchange(self, flags: int, fingerprint: int, rows: int, carry, want_total: bool):
        if self.doubling:
            return self._doubling(flags, fingerprint, rows, carry, want_total)
        inline, st = self.inline, self.st
        st[0] = flags if inline else flags | BIG
        st[1] = fingerprint
        st[2] = rows
        if inline and carry is not None:
            self.mine[...] = carry
        self.comm.Allgather(self.rec, self.recs)
        return self.read(fingerprint, carry, want_total)

    def read(self, fingerprint: int, carry, want_total: bool):
        """What the records gathered into :attr:`recs` say: ``(Status, offset, total)`` as
        :meth:`__call__` (after its ``Allgather``, or after the one a plan's lean call makes with
        this exchange's buffers: ``ScanPlan.lean_call``)."""
        inline = self.inline
        self.quiet_error = None
        # this rank's own flags: 0, or AGREE_AFTER where its finish may fail (every GPU call)
        mine = int(self.st[FLAGS])
        if inline and (mine == 0 or mine == AGREE_AFTER) and self.resolved == "flat" \
                and self.heads.tobytes() == self.agreed_heads(fingerprint, mine):
            # the common call: every rank's flags and fingerprint are this rank's, nobody failed
            # or differs (the rows go unread); where all ask to agree after the finish, the
            # same Status says so (that call took _slow's ~30-75 us before: a 2-GPU call's
            # critical path, benchmarks/probe_multi_gpu_steps.py)
            carries = self.carries[::-1] if self.reverse else self.carries
            place = self.place
            return (_ALL_AGREED_AFTER if mine else _ALL_AGREED, self.fold(carries[:place]) if place else None,
                    self.fold(carries) if want_total else None)
        sts = self.sts
        all_flags = int(np.bitwise_or.reduce(sts[:, FLAGS])) | (0 if inline else BIG)
        status = Status(bool(all_flags & FAILED), bool((sts[:, FINGERPRINT] == sts[0, FINGERPRINT]).all()),
                        bool(all_flags & BIG), -1, bool(all_flags & AGREE_AFTER))
        if status.failed or not status.agreed:
            return status, None, None
        return self._slow(status, carry, want_total)

    def agreed_heads(self, fingerprint: int, flags: int = 0) -> bytes:
        """The first :data:`STATUS_HEAD` bytes of every rank's record, in rank order, when every rank
        agreed with these ``flags`` (0, or AGREE_AFTER) and this fingerprint (made once for each)."""
        key = (fingerprint, flags)
        agreed = self._agreed.get(key)
        if agreed is None:
            agreed = self._agreed[key] = np.array([flags, fingerprint], np.int64).tobytes() * self.size
        return agreed

    def _slow(self, status: Status, carry, want_total: bool):
        """The exchange once every rank agrees, when something is flagged, a carry is too big to
        travel inline, the method is node, or the method is not resolved yet (the first call)."""
        sts, place = self.sts, self.place
        status.rows = int(sts[:, ROWS].sum())
        if self.resolved is None:
            self.resolved = resolve_method(self.method, self.comm, self.node_size)
        if self.resolved == "node":
            offset, total = node_offsets(carry, self.like, self.combine, self.comm, self.node_size, want_total,
                                         self.reverse)
            status.rows_before = int((sts[::-1] if self.reverse else sts)[:place, ROWS].sum())
            return status, offset, total
        carries = self.carries if self.inline else gather(self.comm, self.like if carry is None else carry)
        held = (sts[:, FLAGS] & EMPTY) == 0
        if self.reverse:  # scan order
            carries, held, sts = carries[::-1], held[::-1], sts[::-1]
        status.rows_before = int(sts[:place, ROWS].sum())
        before = carries[:place][held[:place]]
        return (status, self.fold(before) if len(before) else None,
                self.fold(carries[held]) if want_total and held.any() else None)

    # -- recursive doubling ----------------------------------------------------------------

    def _doubling(self, flags: int, fingerprint: int, rows: int, carry, want_total: bool):
        """The exchange in ``log2(p)`` rounds of ``Sendrecv`` (module docstring); a carry too big for a
        record goes in a second pass, once the first has shown that all agree.  The first pass pairs
        ranks alike whatever their arguments: where p is not a power of two a reverse scan's mirrored
        pairs are other pairs (a rank that failed before it read ``reverse=``, or ranks whose ``reverse=``
        differ, waited forever: 2026-11-27), so there a reverse scan's carries go in the second."""
        self.quiet_error = None  # (read's, on the gather's path)
        inline, size = self.inline, self.size
        in_scan_order = self.reverse and size & (size - 1) == 0  # (at a power of two: the same pairs)
        carries_now = inline and in_scan_order == self.reverse
        mine = (flags if inline else flags | BIG, fingerprint, rows, carry if carries_now else None)
        prefix, total = self._hypercube(mine, INLINE_BYTES, in_scan_order)
        total = self._complete(total, INLINE_BYTES, in_scan_order)
        t_flags = total[0]
        status = Status(bool(t_flags & FAILED), not t_flags & MISMATCH, bool(t_flags & BIG), total[2],
                        bool(t_flags & AGREE_AFTER), 0 if prefix is None else prefix[2])
        if status.failed or not status.agreed:
            return status, None, None
        if not carries_now:  # the carries (and a reverse scan's rows before), now that all agree
            prefix, total = self._hypercube((flags & EMPTY, fingerprint, rows, carry), self.like.nbytes, self.reverse)
            total = self._complete(total, self.like.nbytes, self.reverse)
            status.rows_before = 0 if prefix is None else prefix[2]
        return status, None if prefix is None else prefix[3], (total[3] if want_total else None)

    def _complete(self, total, carry_bytes: int, in_scan_order: bool):
        """Every rank's total.  With p not a power of two, a rank whose partner place does not exist
        in a round misses the ranks after it (3 ranks: place 1 never hears from place 2), and so
        maybe a failure or a request to agree; the last place (as :meth:`_hypercube` orders them)
        hears from all (its partner blocks lie before it or are empty): its total is broadcast."""
        size = self.size
        if size & (size - 1) == 0:
            return total
        buf = np.zeros(STATUS_BYTES + carry_bytes, np.uint8)
        st = buf[:STATUS_BYTES].view(np.int64)
        body = slice(STATUS_BYTES, STATUS_BYTES + self.like.nbytes)
        root = 0 if in_scan_order and self.reverse else size - 1  # the last place
        if self.comm.Get_rank() == root:
            flags, fp, rows, carry = total
            st[0], st[1], st[2] = flags | (EMPTY if carry is None else 0), fp, rows
            if carry is not None and self.like.nbytes <= carry_bytes:
                buf[body] = np.ascontiguousarray(carry, self.like.dtype).reshape(-1).view(np.uint8)
        self.comm.Bcast(buf, root=root)
        flags = int(st[0])
        carry = None
        if not flags & (EMPTY | FAILED) and self.like.nbytes <= carry_bytes:
            carry = buf[body].copy().view(self.like.dtype).reshape(self.like.shape)
        return flags, int(st[1]), int(st[2]), carry

    def _merge(self, a, b):
        """Two records ``(flags, fingerprint, rows, carry or None)`` of consecutive blocks of ranks
        in scan order, ``a`` first: what the two blocks hold together."""
        flags = a[0] | b[0]
        if a[1] != b[1]:
            flags |= MISMATCH
        carry = None
        if not flags & (FAILED | MISMATCH):
            if a[3] is None:
                carry = b[3]
            elif b[3] is None:
                carry = a[3]
            else:
                carry = self.combine(a[3], b[3])
        flags = flags & ~EMPTY | (a[0] & b[0] & EMPTY)
        return flags, a[1], a[2] + b[2], carry

    def _hypercube(self, mine, carry_bytes: int, in_scan_order: bool):
        """``(prefix, total)``: the records of the ranks before this one (None for none) and of all, places
        in scan order where ``in_scan_order``, else in rank order; round k pairs places that differ in bit k."""
        send = np.zeros(STATUS_BYTES + carry_bytes, np.uint8)
        recv = np.empty_like(send)
        sst, rst = send[:STATUS_BYTES].view(np.int64), recv[:STATUS_BYTES].view(np.int64)
        nbytes = self.like.nbytes
        body = slice(STATUS_BYTES, STATUS_BYTES + nbytes)
        mirrored, size, comm = in_scan_order and self.reverse, self.size, self.comm
        place = self.place if in_scan_order else self.rank
        prefix, total = None, mine
        mask = 1
        while mask < size:
            other = place ^ mask
            if other < size:
                flags, fp, rows, carry = total
                sst[0], sst[1], sst[2] = flags | (EMPTY if carry is None else 0), fp, rows
                if carry is not None and nbytes <= carry_bytes:
                    send[body] = np.ascontiguousarray(carry, self.like.dtype).reshape(-1).view(np.uint8)
                partner = size - 1 - other if mirrored else other
                comm.Sendrecv(send, partner, 7, recv, partner, 7)
                r_flags = int(rst[0])
                r_carry = None
                if not r_flags & (EMPTY | FAILED) and nbytes <= carry_bytes:
                    r_carry = recv[body].copy().view(self.like.dtype).reshape(self.like.shape)
                theirs = (r_flags, int(rst[1]), int(rst[2]), r_carry)
                if other < place:  # their block comes first
                    prefix = theirs if prefix is None else self._merge(theirs, prefix)
                    total = self._merge(theirs, total)
                else:
                    total = self._merge(total, theirs)
            mask <<= 1
        return prefix, total


def exchange(st: np.ndarray, carry: np.ndarray, combine: Combine, comm, method: str = "auto",
             node_size: Optional[int] = None, *, want_total: bool = False, reverse: bool = False):
    """``(Status, offset, total)`` for this rank, in one use of an :class:`Exchange`.

    ``st`` is this rank's :func:`status`; ``carry`` its carry (the same shape and dtype on every
    rank whose arguments agree; anything on a rank that failed or holds nothing, whose status
    says so); ``combine(earlier, later)`` combines two carries.  ``offset`` combines the carries
    of the ranks before this one that are not EMPTY, None if there are none; ``total`` (every
    such carry combined, None if none) only with ``want_total``.  When the status says that a
    rank failed or that the fingerprints differ, offset and total are None: the caller raises.

    The first collective is always one ``Allgather`` of fixed-size records over ``comm``, so
    ranks whose arguments differ, or that failed, still meet in it; only after it has shown
    that all agree do the paths go on (carries too big to travel inline, the node method),
    and they go on alike on every rank, decided by what the gather brought.
    Collective: every rank calls, also the ones that failed (with ``failed`` set).
    """
    carry = np.ascontiguousarray(carry)
    flags = int(st[FLAGS])
    if comm is None or comm.Get_size() == 1:
        return (Status(bool(flags & FAILED), True, False, int(st[ROWS]), bool(flags & AGREE_AFTER)), None,
                None if not want_total or flags & EMPTY else carry.copy())
    ex = Exchange(comm, method, node_size, carry, python_fold(combine), combine, reverse)
    return ex(flags, int(st[FINGERPRINT]), int(st[ROWS]), None if flags & (EMPTY | FAILED) else carry,
              want_total=want_total)


def exclusive_prefix(total: np.ndarray, combine: Combine, comm, method: str = "auto",
                     node_size: Optional[int] = None) -> Optional[np.ndarray]:
    """This rank's offset alone: ``total[0] . ... . total[rank-1]`` (None on the first rank)."""
    _, offset, _ = exchange(status(False, 0, 0), total, combine, comm, method, node_size)
    return offset


def raise_everywhere(group, error: BaseException) -> None:
    """Raise ``error`` of a call that failed before its plan's exchange: here alone where the call
    is local (``group`` None), else on every rank, this one joining the exchange the others are
    in as failed (:func:`fail_exchange`); a rank never raises alone while others wait for it."""
    if group is None:
        raise error
    fail_exchange(group, error)


def fail_exchange(comm, error: BaseException) -> None:
    """Take part in a plan's exchange from a rank that could not build the plan: the record says
    "failed", so every rank raises the agreed error (this one too)."""
    st = status(True, 0, 0, empty=True)
    exchange(st, np.zeros(1, np.uint8), lambda a, b: a, comm)
    raise_agreed(comm, error)
