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

Records travel as bytes: no MPI datatype or operation is involved, so any carry (float16,
complex, the flagged product carries) travels alike.  The first rank's offset is None
("nothing came before").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from .nodes import fold, gather, node_offsets, resolve_method

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
FAILED, BIG, EMPTY, AGREE_AFTER = 1, 2, 4, 8  # bits of FLAGS
# EMPTY: the rank's carry holds nothing (no rows, no initial value): ranks after it fold
# nothing in for it, and a rank with only EMPTY ranks before it gets the offset None.
STATUS_BYTES = 8 * 3
RECORD_BYTES = 64
INLINE_BYTES = RECORD_BYTES - STATUS_BYTES


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


# ---------------------------------------------------------------------------
# The exchange
# ---------------------------------------------------------------------------

Combine = Callable[[np.ndarray, np.ndarray], np.ndarray]


def python_fold(combine: Combine) -> Callable:
    """A fold of a stack of carries (in order; None for none) made of a two-carry ``combine``."""
    return lambda stack: fold(stack, combine)


# What the common call's exchange finds (not changed by its readers).
_ALL_AGREED = Status(False, True, False, -1)


class Exchange:
    """One plan's exchange over one communicator, its buffers kept between calls.

    ``like`` is a carry's shape and dtype; ``fold(stack)`` combines a stack of carries in rank
    order (None for an empty stack; a vectorised ``ufunc.accumulate`` for plain operators) and
    ``combine(earlier, later)`` two of them.  The method (flat or node) is resolved at the first
    call's agreement and kept: every rank resolves it at the same exchange (the node split is
    cached on the communicator itself, :func:`distscan.dist.nodes.get_hierarchy`), so a rank whose plan is new
    makes no collective that the others do not.
    """

    def __init__(self, comm, method: str, node_size, like: np.ndarray, fold: Callable, combine: Combine):
        self.comm, self.method, self.node_size = comm, method, node_size
        self.size, self.rank = comm.Get_size(), comm.Get_rank()
        self.fold, self.combine = fold, combine
        self.like = np.zeros_like(np.ascontiguousarray(like))
        self.inline = self.like.nbytes <= INLINE_BYTES
        self.rec = np.zeros(RECORD_BYTES, np.uint8)
        self.recs = np.zeros((self.size, RECORD_BYTES), np.uint8)
        self.st = self.rec[:STATUS_BYTES].view(np.int64)
        self.sts = self.recs[:, :STATUS_BYTES].view(np.int64)  # (size, 3)
        if self.inline:
            body = slice(STATUS_BYTES, STATUS_BYTES + self.like.nbytes)
            self.mine = self.rec[body].view(self.like.dtype).reshape(self.like.shape)
            self.carries = self.recs[:, body].view(self.like.dtype).reshape((self.size,) + self.like.shape)
        self.resolved = None
        self._agreed = {}  # fingerprint -> the status bytes of every rank when nothing is flagged

    def __call__(self, flags: int, fingerprint: int, rows: int, carry, *, want_total: bool = False):
        """``(Status, offset, total)``: see :func:`exchange` (``carry`` None: this rank holds
        nothing, and ``flags`` says EMPTY)."""
        inline, st = self.inline, self.st
        st[0] = flags if inline else flags | BIG
        st[1] = fingerprint
        st[2] = rows
        if inline and carry is not None:
            self.mine[...] = carry
        self.comm.Allgather(self.rec, self.recs)
        agreed = self._agreed.get(fingerprint)
        if agreed is None:
            agreed = self._agreed[fingerprint] = np.array([0, fingerprint], np.int64).tobytes() * self.size
        if inline and self.recs[:, :16].tobytes() == agreed and self.resolved == "flat":
            # the common call: nobody failed, flagged anything or differs (the rows go unread)
            rank = self.rank
            return (_ALL_AGREED, self.fold(self.carries[:rank]) if rank else None,
                    self.fold(self.carries) if want_total else None)
        sts = self.sts
        all_flags = int(np.bitwise_or.reduce(sts[:, FLAGS])) | (0 if inline else BIG)
        status = Status(bool(all_flags & FAILED), bool((sts[:, FINGERPRINT] == sts[0, FINGERPRINT]).all()),
                        bool(all_flags & BIG), -1, bool(all_flags & AGREE_AFTER))
        if status.failed or not status.agreed:
            return status, None, None
        return self._slow(status, carry, want_total)

    def _slow(self, status: Status, carry, want_total: bool):
        """The exchange once every rank agrees, when something is flagged, a carry is too big to
        travel inline, the method is node, or the method is not resolved yet (the first call)."""
        sts, rank = self.sts, self.rank
        status.rows = int(sts[:, ROWS].sum())
        status.rows_before = int(sts[:rank, ROWS].sum())
        if self.resolved is None:
            self.resolved = resolve_method(self.method, self.comm, self.node_size)
        if self.resolved == "node":
            offset, total = node_offsets(carry, self.like, self.combine, self.comm, self.node_size, want_total)
            return status, offset, total
        carries = self.carries if self.inline else gather(self.comm, self.like if carry is None else carry)
        held = (sts[:, FLAGS] & EMPTY) == 0
        before = carries[:rank][held[:rank]]
        return (status, self.fold(before) if len(before) else None,
                self.fold(carries[held]) if want_total and held.any() else None)


def exchange(st: np.ndarray, carry: np.ndarray, combine: Combine, comm, method: str = "auto",
             node_size: Optional[int] = None, *, want_total: bool = False):
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
    ex = Exchange(comm, method, node_size, carry, python_fold(combine), combine)
    return ex(flags, int(st[FINGERPRINT]), int(st[ROWS]), None if flags & (EMPTY | FAILED) else carry,
              want_total=want_total)


def exclusive_prefix(total: np.ndarray, combine: Combine, comm, method: str = "auto",
                     node_size: Optional[int] = None) -> Optional[np.ndarray]:
    """This rank's offset alone: ``total[0] . ... . total[rank-1]`` (None on the first rank)."""
    _, offset, _ = exchange(status(False, 0, 0), total, combine, comm, method, node_size)
    return offset
