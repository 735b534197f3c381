"""Node -> cluster: how a communicator splits into nodes (``Split_type(COMM_TYPE_SHARED)``), and
the offsets of the node method: gathered inside each node, combined among the node leaders,
broadcast inside each node, so that only leaders talk across nodes.  Valid when each node
holds a contiguous block of ranks; otherwise ``auto`` falls back to ``flat``.

The split is collective on its first use for a (communicator, node size) and then cached on
the communicator itself: every rank makes it at the same exchange (distscan.dist.exchange),
so that which plans a rank holds never changes the collectives it makes.

The node size of a call is ``node_size=``, else ``DISTSCAN_NODE_SIZE`` *as it is at the call*
(:func:`node_size_of_call`): a plan is built for one value and reused only by calls that ask for
the same, and the ranks compare the value in their first exchange (the plan's fingerprint), so
that ranks that disagree all raise instead of splitting their communicator differently.  The
choice of recursive doubling (``DISTSCAN_DOUBLING_RANKS``) is checked across ranks once per
communicator, kept beside its splits (:func:`agreed_doubling`).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from .agree import raise_mismatch

METHODS = ("auto", "flat", "node")

# Environment override of the node size (ranks per node), to test the node path on one host.
NODE_SIZE_ENV = "DISTSCAN_NODE_SIZE"


class FromEnv(tuple):
    """``node_size=`` of a call that gave none: ``(the raw value of DISTSCAN_NODE_SIZE at the call,)``
    (None: unset, the real nodes).  What the API passes on for such a call on several ranks, so
    that the call kinds and plans it finds are keyed on the variable as it is now
    (:func:`node_size_of_call`), and what a plan passes its exchange (:func:`fixed`), so that the
    exchange uses the node size its fingerprint names without reading the variable again.  A
    tuple: hashed and compared as one, in C (it is in every such call's key)."""

    __slots__ = ()


#: The real nodes, whatever the variable says: ``FromEnv`` of an unset variable.
REAL_NODES = FromEnv((None,))

try:  # the variable as os.environ holds it, in ~15 ns (os.environ.get of an unset name: ~550 ns)
    _ENV_DATA, _ENV_KEY, _decode = os.environ._data, os.environ.encodekey(NODE_SIZE_ENV), os.environ.decodevalue
except AttributeError:  # pragma: no cover - an os.environ that is not CPython's os._Environ
    _ENV_DATA, _ENV_KEY, _decode = os.environ, NODE_SIZE_ENV, str
# The FromEnv of each raw value seen (a call's key is made of one, without building it again).
_FROM_ENV = {None: REAL_NODES}


def node_size_of_call(node_size):
    """``node_size`` of a call on several ranks as its plan is keyed: the argument as given, else the
    :class:`FromEnv` of the variable now.  Reads and raises nothing (a value that is not a number
    raises when the plan is built, which every rank then learns: ``fail_exchange``).

    Assumption: ``os.environ`` is what changes the variable (``os.environ[...] =``, ``pop``,
    ``monkeypatch.setenv``, ``mock.patch.dict``: all change the mapping read here), not a C
    ``setenv`` behind Python's back, which ``os.environ.get`` does not see either."""
    if node_size is not None:
        return node_size
    raw = _ENV_DATA.get(_ENV_KEY)
    key = _FROM_ENV.get(raw)
    if key is None:
        if len(_FROM_ENV) > 64:  # a program that sets many values: keep a few
            _FROM_ENV.clear()
            _FROM_ENV[None] = REAL_NODES
        key = _FROM_ENV[raw] = FromEnv((raw,))
    return key


def fixed(override: Optional[int]):
    """The ``node_size`` argument that means ``override`` (from :func:`node_size_override`) without
    reading the variable again: the int, or :data:`REAL_NODES` for the real nodes."""
    return REAL_NODES if override is None else override


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
    """The attribute key under which a communicator keeps its hierarchies (and what else its ranks
    agreed on once: :func:`comm_cache`): one per process (made once; two keys would split a
    communicator a second time, a collective the other ranks skip)."""
    global _keyval
    if _keyval is None:
        with _keyval_lock:
            if _keyval is None:
                from mpi4py import MPI

                def _delete(comm, keyval, attrval):
                    for h in attrval.values():
                        if isinstance(h, Hierarchy):
                            h.free()

                _keyval = MPI.Comm.Create_keyval(delete_fn=_delete)
    return _keyval


def comm_cache(comm) -> dict:
    """What ``comm`` itself keeps for distscan (an attribute: freed with it, not copied by a Dup):
    its hierarchies by forced node size (None: the real nodes), and what its ranks agreed on once
    (distscan.dist.exchange: the exchange method).

    Assumption: one thread at a time per communicator (MPI's rule for its collectives), so a
    check of this dict, the collective that fills it and the publication never meet another
    thread's on ``comm``; every rank fills an entry at the same call (the first that needs it on
    ``comm``), so that whether an entry is there never differs between ranks."""
    keyval = _hierarchy_keyval()
    cache = comm.Get_attr(keyval)
    if cache is None:
        cache = {}
        comm.Set_attr(keyval, cache)
    return cache


def agreed_doubling(comm, size: int, threshold: int | str) -> bool:
    """Whether an exchange over ``comm`` (of ``size`` ranks) is recursive doubling: ``size >=
    threshold`` (``exchange.DOUBLING_RANKS``, from ``DISTSCAN_DOUBLING_RANKS``), checked to be the
    same choice on every rank the first time (one ``Allreduce`` per communicator and threshold,
    kept in :func:`comm_cache`).  Ranks that chose differently (the variable set on some ranks only)
    would each wait in another collective, the gather or a ``Sendrecv``: instead every rank raises
    a ValueError naming each rank's value, at every call (a refusal keeps nothing).  Values that
    differ but choose alike (1024 and 2048 on 8 ranks) pass.

    Collective the first time only.  Assumption (:func:`comm_cache`'s): every rank makes its first
    exchange on ``comm`` at the same call (every call on several ranks makes one: plan.py), so the
    check is made by every rank or by none; the threshold does not change (tests that patch it
    patch it on every rank alike, before new plans, which check the new value together)."""
    number = isinstance(threshold, int)  # else the variable's text, which is no number
    doubling = number and size >= threshold
    agreed = comm_cache(comm)
    key = ("doubling ranks", threshold)
    if key in agreed:
        return doubling
    from mpi4py import MPI

    choice = int(doubling) if number else 2
    both = np.array([choice, -choice], np.int64)  # the MAX of both: the largest and smallest choice
    comm.Allreduce(MPI.IN_PLACE, both, op=MPI.MAX)
    if both[0] != -both[1]:
        raise_mismatch(comm, "exchange methods", {"DISTSCAN_DOUBLING_RANKS": threshold})
    if not number:  # the same text on every rank: each raises alike
        raise ValueError(f"DISTSCAN_DOUBLING_RANKS={threshold!r} is not a number of ranks")
    agreed[key] = doubling
    return doubling


def node_size_override(node_size):
    """The node size forced by ``node_size`` or ``DISTSCAN_NODE_SIZE`` (None: the real nodes).

    ``node_size`` None reads the variable now; a :class:`FromEnv` is the value read at the call.
    A size below 1 raises here, whatever the hierarchy method and the rank count (a plan reads it
    once, when it is built: dist/plan.py)."""
    if type(node_size) is FromEnv:
        env = node_size[0]
        if env is not None and not isinstance(env, str):
            env = _decode(env)
    elif node_size is not None:
        return _at_least_one(int(node_size), f"node_size={node_size!r}")
    else:
        env = os.environ.get(NODE_SIZE_ENV)
    if not env:
        return None
    try:
        size = int(env)
    except ValueError:
        raise ValueError(f"{NODE_SIZE_ENV}={env!r} is not a number of ranks per node") from None
    return _at_least_one(size, f"{NODE_SIZE_ENV}={env!r}")


def explicit(node_size) -> bool:
    """Whether ``node_size`` was given as an argument (not None, not the variable's :class:`FromEnv`)."""
    return node_size is not None and type(node_size) is not FromEnv


def _at_least_one(size: int, given: str) -> int:
    if size < 1:
        raise ValueError(f"node size must be at least 1, got {given}")
    return size


def get_hierarchy(comm, node_size: Optional[int] = None) -> Hierarchy:
    """Split ``comm`` into nodes (collective on first use, then cached on ``comm``).

    ``node_size`` (or the environment variable ``DISTSCAN_NODE_SIZE``) forces
    blocks of that many consecutive ranks to act as nodes, for tests.
    """
    from mpi4py import MPI

    override = node_size_override(node_size)
    # Keyed on the node size asked for (None: the real nodes), on the communicator itself
    # (comm_cache's assumption: one thread at a time per communicator); a Dup of ``comm`` does not
    # copy the attribute (no copy function), so it splits on its own.  A split that fails leaves
    # nothing here (the entry is published last).  Which size a call asks for is agreed before
    # (the plan's fingerprint names it): ranks that disagree raise before any of them splits.
    cache = comm_cache(comm)
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


