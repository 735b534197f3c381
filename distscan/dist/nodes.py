"""Node -> cluster: how a communicator splits into nodes (``Split_type(COMM_TYPE_SHARED)``), and
the offsets of the node method: gathered inside each node, combined among the node leaders,
broadcast inside each node, so that only leaders talk across nodes.  Valid when each node
holds a contiguous block of ranks; otherwise ``auto`` falls back to ``flat``.

The split is collective on its first use for a (communicator, node size) and then cached on
the communicator itself: every rank makes it at the same exchange (distscan.dist.exchange),
so that which plans a rank holds never changes the collectives it makes.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

METHODS = ("auto", "flat", "node")

# Environment override of the node size (ranks per node), to test the node path on one host.
NODE_SIZE_ENV = "DISTSCAN_NODE_SIZE"


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
_keyval_lock = threading.Lock()  # threads making their first calls at once (each on its own communicator)


def _hierarchy_keyval():
    """The attribute key under which a communicator keeps its hierarchies: one per process (made
    once; two keys would split a communicator a second time, a collective the other ranks skip)."""
    global _keyval
    if _keyval is None:
        with _keyval_lock:
            if _keyval is None:
                from mpi4py import MPI

                def _delete(comm, keyval, attrval):
                    for h in attrval.values():
                        h.free()

                _keyval = MPI.Comm.Create_keyval(delete_fn=_delete)
    return _keyval


def node_size_override(node_size):
    """The node size forced by ``node_size`` or ``DISTSCAN_NODE_SIZE`` (None: the real nodes)."""
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

    override = node_size_override(node_size)
    if override is not None and override < 1:
        raise ValueError(f"node size must be at least 1, got {override}")
    keyval = _hierarchy_keyval()
    # Assumption: one thread at a time per communicator (MPI's rule for its collectives), so this
    # check, the split and the publication below never meet another thread's on ``comm``; a Dup
    # of ``comm`` does not copy the attribute (no copy function), so it splits on its own.
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


def fold(items, combine: Callable):
    """``items[0] . items[1] . ...`` in order (None for no items)."""
    acc = None
    for item in items:
        acc = item.copy() if acc is None else combine(acc, item)
    return acc


def gather(comm, carry: np.ndarray) -> np.ndarray:
    """Every rank's carry (as bytes: any dtype, states included), stacked in rank order."""
    carry = np.ascontiguousarray(carry)
    out = np.empty((comm.Get_size(), carry.nbytes), np.uint8)
    comm.Allgather(carry.reshape(-1).view(np.uint8), out)
    return out.view(carry.dtype).reshape((comm.Get_size(),) + carry.shape)


def _scan_order(items, held, index: int, reverse: bool):
    """``(items held before index, every item held)`` in scan order (``reverse``: from the last)."""
    pairs = list(zip(items, held))
    if reverse:
        pairs, index = pairs[::-1], len(pairs) - 1 - index
    return [c for c, ok in pairs[:index] if ok], [c for c, ok in pairs if ok]


def node_offsets(mine, like, combine, comm, node_size, want_total, reverse: bool = False):
    """Offsets node then cluster: gather inside the node, gather the node totals among the
    leaders, broadcast the node's offset (and the total) inside the node.  ``mine`` is this
    rank's carry, None when it holds nothing (EMPTY); ``like`` one of that shape and dtype.
    Nothing travels as None: each carry goes with a byte that says whether it holds anything.
    ``reverse``: scan order is the mirror of rank order, inside nodes and among them."""
    h = get_hierarchy(comm, node_size)
    on_node, has = _gather_held(h.node, mine, like)
    before, every = _scan_order(on_node, has, h.node.Get_rank(), reverse)
    within = fold(before, combine)
    node_total = fold(every, combine)
    nbytes = like.nbytes
    shared = np.zeros(2 * nbytes + 2, np.uint8)  # [node offset][total][node offset held, total held]

    def put(slot, value):
        shared[slot * nbytes:(slot + 1) * nbytes] = np.ascontiguousarray(value).reshape(-1).view(np.uint8)
        shared[2 * nbytes + slot] = 1

    def get(slot):
        if not shared[2 * nbytes + slot]:
            return None
        return shared[slot * nbytes:(slot + 1) * nbytes].copy().view(like.dtype).reshape(like.shape)

    if h.leaders is not None:
        totals, held = _gather_held(h.leaders, node_total, like)
        before, every = _scan_order(totals, held, h.leaders.Get_rank(), reverse)
        node_offset = fold(before, combine)
        if node_offset is not None:
            put(0, node_offset)
        total = fold(every, combine) if want_total else None
        if total is not None:
            put(1, total)
    h.node.Bcast(shared, root=0)
    node_offset, total = get(0), get(1) if want_total else None
    if node_offset is None:
        return within, total
    return (node_offset if within is None else combine(node_offset, within)), total


def _gather_held(comm, carry, like):
    """Allgather of a carry that may be None: ``(carries, held flags)``; a None travels as ``like``
    with its flag unset."""
    size = comm.Get_size()
    body = np.ascontiguousarray(like if carry is None else carry)
    rec = np.zeros(body.nbytes + 1, np.uint8)
    rec[:-1] = body.reshape(-1).view(np.uint8)
    rec[-1] = carry is not None
    out = np.empty((size, rec.size), np.uint8)
    comm.Allgather(rec, out)
    carries = np.ascontiguousarray(out[:, :-1]).view(like.dtype).reshape((size,) + like.shape)
    return carries, out[:, -1].astype(bool)


