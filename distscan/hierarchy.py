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
    The same inside each node (``Split_type(COMM_TYPE_SHARED)``), then among the node leaders
    with the nodes' totals, then a broadcast of the node's offset and the global status
    inside each node: three collectives, and only leaders talk across nodes.  Valid when
    each node holds a contiguous block of ranks; otherwise ``auto`` falls back to ``flat``.

Records travel as bytes: no MPI datatype or operation is involved, so any carry (float16,
complex, the flagged product carries) travels alike.  The first rank's offset is None
("nothing came before").
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

METHODS = ("auto", "flat", "node")

# Environment override of the node size (ranks per node), to test the node path on one host.
NODE_SIZE_ENV = "DISTSCAN_NODE_SIZE"

# A record is RECORD_BYTES long on every rank whatever happens, so that ranks whose arguments
# differ (or that failed before they knew their carry) still meet in the same Allgather:
# three status words (flags, the fingerprint of the arguments, the row count), then the
# carry inline when it fits; else the BIG flag is set and the carries follow in a second
# Allgather, once every rank knows that their sizes agree.  Small records keep the gather
# in MPI's latency-bound algorithms (64 bytes: a float64 product carry still fits).
FLAGS, FINGERPRINT, ROWS = range(3)
FAILED, BIG = 1, 2  # bits of FLAGS
STATUS_BYTES = 8 * 3
RECORD_BYTES = 64
INLINE_BYTES = RECORD_BYTES - STATUS_BYTES
# The bytes of a record that read the same on every rank when a call may go on: the flags
# (none set) and the fingerprint.
AGREED_BYTES = 8 * ROWS


@dataclass
class Status:
    """What the first gather tells every rank about all of them."""

    failed: bool      # some rank failed
    agreed: bool      # every rank has the same fingerprint
    big: bool         # some carry did not travel inline
    rows: int         # rows on all ranks


def status(failed: bool, fingerprint: int, rows: int) -> np.ndarray:
    """A rank's status words: flags (FAILED), its argument fingerprint, its row count."""
    return np.array([FAILED if failed else 0, fingerprint, rows], np.int64)


def _fold_status(sts: np.ndarray) -> Status:
    flags = np.bitwise_or.reduce(sts[:, FLAGS])
    return Status(bool(flags & FAILED), bool((sts[:, FINGERPRINT] == sts[0, FINGERPRINT]).all()),
                  bool(flags & BIG), int(sts[:, ROWS].sum()))


def _record(st: np.ndarray, carry: Optional[np.ndarray]) -> np.ndarray:
    rec = np.zeros(RECORD_BYTES, np.uint8)
    body = None if carry is None else np.ascontiguousarray(carry).reshape(-1).view(np.uint8)
    st = st.copy()
    if body is not None and body.size > INLINE_BYTES:
        st[FLAGS] |= BIG
        body = None
    rec[:STATUS_BYTES] = st.view(np.uint8)
    if body is not None:
        rec[STATUS_BYTES:STATUS_BYTES + body.size] = body
    return rec


def _gather_records(comm, rec: np.ndarray, like: np.ndarray):
    """Allgather of fixed-size records: ``(statuses (p, 3), inline carries (p, *like.shape) or None)``."""
    out = np.empty((comm.Get_size(), RECORD_BYTES), np.uint8)
    comm.Allgather(rec, out)
    sts = np.ascontiguousarray(out[:, :STATUS_BYTES]).view(np.int64)
    if like.nbytes > INLINE_BYTES:
        return sts, None  # not inline: the caller gathers them whole
    carries = np.ascontiguousarray(out[:, STATUS_BYTES:STATUS_BYTES + like.nbytes]).view(like.dtype)
    return sts, carries.reshape((comm.Get_size(),) + like.shape)


# ---------------------------------------------------------------------------
# The node / cluster split, built once per communicator and cached on it
# ---------------------------------------------------------------------------

@dataclass
class Hierarchy:
    """How a communicator splits into nodes."""

    node: object                 # communicator of the ranks on this rank's node
    leaders: Optional[object]    # communicator of node leaders (None off the leaders)
    node_index: int              # this node's position among the nodes, in rank order
    num_nodes: int
    contiguous: bool             # every node holds a contiguous block of ranks
    node_size_override: Optional[int]

    def free(self) -> None:
        for c in (self.node, self.leaders):
            if c is not None:
                try:
                    c.Free()
                except Exception:  # noqa: BLE001 - freeing at teardown must not raise
                    pass


_keyval = None


def _hierarchy_keyval():
    global _keyval
    if _keyval is None:
        from mpi4py import MPI

        def _delete(comm, keyval, attrval):
            for h in attrval.values():
                h.free()

        _keyval = MPI.Comm.Create_keyval(delete_fn=_delete)
    return _keyval


def _node_size_override(node_size):
    if node_size is not None:
        return int(node_size)
    env = os.environ.get(NODE_SIZE_ENV)
    if not env:
        return None
    try:
        return int(env)
    except ValueError:
        raise ValueError(f"{NODE_SIZE_ENV}={env!r} is not a number of ranks per node") from None


def get_hierarchy(comm, node_size: Optional[int] = None) -> Hierarchy:
    """Split ``comm`` into nodes (collective on first use, then cached on ``comm``).

    ``node_size`` (or the environment variable ``DISTSCAN_NODE_SIZE``) forces
    blocks of that many consecutive ranks to act as nodes, for tests.
    """
    from mpi4py import MPI

    override = _node_size_override(node_size)
    if override is not None and override < 1:
        raise ValueError(f"node size must be at least 1, got {override}")
    keyval = _hierarchy_keyval()
    cache = comm.Get_attr(keyval)
    if cache is None:
        cache = {}
        comm.Set_attr(keyval, cache)
    if override in cache:
        return cache[override]

    rank = comm.Get_rank()
    if override is None:
        node = comm.Split_type(MPI.COMM_TYPE_SHARED, key=rank)
    else:
        node = comm.Split(color=rank // override, key=rank)
    is_leader = node.Get_rank() == 0
    leaders = comm.Split(color=0 if is_leader else MPI.UNDEFINED, key=rank)
    if leaders == MPI.COMM_NULL:
        leaders = None
    # Node leaders are the lowest rank of their node (key=rank), so leader ranks ordered
    # by global rank give the node order.
    leader_rank = node.bcast(rank if is_leader else None, root=0)
    node_index = node.bcast(leaders.Get_rank() if is_leader else None, root=0)
    num_nodes = node.bcast(leaders.Get_size() if is_leader else None, root=0)
    mine = np.array([1 if rank == leader_rank + node.Get_rank() else 0], dtype=np.int32)
    comm.Allreduce(MPI.IN_PLACE, mine, op=MPI.MIN)
    h = Hierarchy(node, leaders, node_index, num_nodes, bool(mine[0]), override)
    cache[override] = h
    return h


def resolve_method(method: str, comm, node_size: Optional[int] = None) -> str:
    """Turn ``auto`` into ``flat`` or ``node``; ``node`` needs contiguous nodes.

    ``auto`` picks ``node`` only when the ranks span several nodes (or a node
    size is forced), since on one node the flat ``Exscan`` is the same thing
    with fewer steps.
    """
    if method not in METHODS:
        raise ValueError(f"unknown hierarchy method {method!r}; choose one of {', '.join(METHODS)}")
    if method == "flat" or comm.Get_size() == 1:
        return "flat"
    h = get_hierarchy(comm, node_size)
    if not h.contiguous:
        return "flat"
    if method == "node":
        return "node"
    return "node" if h.num_nodes > 1 else "flat"


# ---------------------------------------------------------------------------
# The exchange
# ---------------------------------------------------------------------------

Combine = Callable[[np.ndarray, np.ndarray], np.ndarray]


def _fold(items, combine: Combine):
    """``items[0] . items[1] . ...`` in order (None for no items)."""
    acc = None
    for item in items:
        acc = item.copy() if acc is None else combine(acc, item)
    return acc


def exchange(st: np.ndarray, carry: np.ndarray, combine: Combine, comm, method: str = "auto",
             node_size: Optional[int] = None, *, want_total: bool = False):
    """``(Status, offset, total)`` for this rank: see the module docstring.

    ``st`` is this rank's :func:`status`; ``carry`` its carry (the same shape and dtype on every
    rank whose arguments agree; anything on a rank that failed); ``combine(earlier, later)``
    combines two carries.  ``offset`` is None on the first rank; ``total`` (every rank's carry
    combined) only with ``want_total``.  When the status says that a rank failed or that the
    fingerprints differ, offset and total are None: the caller raises.

    The first collective is always one ``Allgather`` of fixed-size records over ``comm``, so
    ranks whose arguments differ, or that failed, still meet in it; only after it has shown
    that all agree do the paths go on (carries too big to travel inline, the node method).
    Collective: every rank calls, also the ones that failed (with ``failed`` set).
    """
    carry = np.ascontiguousarray(carry)
    if comm is None or comm.Get_size() == 1:
        return (Status(bool(st[FLAGS] & FAILED), True, False, int(st[ROWS])), None,
                carry.copy() if want_total else None)
    sts, carries = _gather_records(comm, _record(st, carry), carry)
    total_st = _fold_status(sts)
    if total_st.failed or not total_st.agreed:
        return total_st, None, None
    # From here on every rank's arguments (the method among them) and carry sizes agree.
    if resolve_method(method, comm, node_size) == "node":
        offset, total = _node_offsets(carry, combine, comm, node_size, want_total)
        return total_st, offset, total
    if total_st.big:
        carries = _gather(comm, carry)
    rank = comm.Get_rank()
    return total_st, _fold(carries[:rank], combine), _fold(carries, combine) if want_total else None


def _gather(comm, carry: np.ndarray) -> np.ndarray:
    out = np.empty((comm.Get_size(),) + carry.shape, carry.dtype)
    comm.Allgather(carry, out)
    return out


def _node_offsets(carry, combine, comm, node_size, want_total):
    """Offsets node then cluster: gather inside the node, gather the node totals among the
    leaders, broadcast the node's offset (and the total) inside the node."""
    h = get_hierarchy(comm, node_size)
    on_node = _gather(h.node, carry)
    within = _fold(on_node[: h.node.Get_rank()], combine)
    shared = np.zeros((3,) + carry.shape, carry.dtype)  # [has offset (as bytes), offset, total]
    if h.leaders is not None:
        totals = _gather(h.leaders, _fold(on_node, combine))
        node_offset = _fold(totals[: h.leaders.Get_rank()], combine)
        if node_offset is not None:
            shared.reshape(-1).view(np.uint8)[0] = 1
            shared[1] = node_offset
        if want_total:
            shared[2] = _fold(totals, combine)
    h.node.Bcast(shared, root=0)
    total = shared[2].copy() if want_total else None
    if not shared.reshape(-1).view(np.uint8)[0]:
        return within, total
    node_offset = shared[1].copy()
    return (node_offset if within is None else combine(node_offset, within)), total


def exclusive_prefix(total: np.ndarray, combine: Combine, comm, method: str = "auto",
                     node_size: Optional[int] = None) -> Optional[np.ndarray]:
    """This rank's offset alone: ``total[0] . ... . total[rank-1]`` (None on the first rank)."""
    _, offset, _ = exchange(status(False, 0, 0), total, combine, comm, method, node_size)
    return offset
