"""Rank offsets: the exclusive scan of per-rank totals, flat or node-then-cluster.

Every rank contributes its shard's total (a small ``(w,)`` array in the
accumulator dtype) and receives the combination of the totals of all ranks
before it.  Two methods give the same offsets:

``flat``
    One ``Exscan`` over the whole communicator.
``node``
    ``Exscan`` inside each node (``Split_type(COMM_TYPE_SHARED)``), the node's
    total reduced to its leader, ``Exscan`` among node leaders, then a
    broadcast of the node's offset inside the node.  Only leaders talk across
    nodes.  Valid when each node holds a contiguous block of ranks; otherwise
    ``auto`` falls back to ``flat``.

MPI leaves ``Exscan``'s result on the first rank undefined: it is never read;
the first rank (of the communicator, of a node, of the leaders) gets ``None``,
meaning "nothing came before".

Carries travel in their own dtype: a built-in MPI operation where one is defined
and exact for the dtype (integer sums, float sums, ...), otherwise a user-defined
MPI operation that applies the NumPy ufunc, so NaN propagation in ``max``, float16
maxima and bitwise operations on bool are exactly NumPy's.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional

import numpy as np

from .ops import Op

METHODS = ("auto", "flat", "node")

# Environment override of the node size (ranks per node), to test the node path on one host.
NODE_SIZE_ENV = "DISTSCAN_NODE_SIZE"


# ---------------------------------------------------------------------------
# MPI datatypes and operations for carries
# ---------------------------------------------------------------------------

_datatypes: dict = {}
_user_ops: dict = {}

# (op name, dtype kinds) for which MPI's built-in operation is defined and gives NumPy's result.
_BUILTIN_OK = {
    "SUM": "iufc", "PROD": "iufc",
    "MAX": "iu", "MIN": "iu",            # floats: MPI does not promise NaN propagation
    "LAND": "b", "LOR": "b", "LXOR": "b",
    "BAND": "iu", "BOR": "iu", "BXOR": "iu",
}


def mpi_datatype(dtype: np.dtype):
    """``(datatype, builtin)``: MPI's predefined type for ``dtype``, or a byte block.

    ``builtin`` says whether MPI's built-in operations may be used on it; float16
    always travels as bytes (MPI has no portable float16 type).
    """
    from mpi4py import MPI

    dtype = np.dtype(dtype)
    if dtype not in _datatypes:
        dt = None
        if dtype != np.dtype(np.float16):
            try:
                dt = MPI.Datatype.fromcode(dtype.char)
            except (KeyError, ValueError, TypeError):
                dt = None
        builtin = dt is not None
        if dt is None:
            dt = MPI.BYTE.Create_contiguous(dtype.itemsize).Commit()
        _datatypes[dtype] = (dt, builtin)
    return _datatypes[dtype]


def mpi_op(op: Op, dtype: np.dtype):
    """The MPI operation that combines carries of ``dtype`` exactly as ``op.ufunc`` does."""
    from mpi4py import MPI

    dtype = np.dtype(dtype)
    _, builtin_type = mpi_datatype(dtype)
    if builtin_type and op.mpi_op and dtype.kind in _BUILTIN_OK.get(op.mpi_op, ""):
        return getattr(MPI, op.mpi_op)
    key = (op.name, dtype)
    if key not in _user_ops:
        ufunc = op.ufunc

        def combine(invec, inoutvec, datatype, _dtype=dtype, _ufunc=ufunc):
            # invec holds the earlier ranks' carry: inoutvec = invec op inoutvec.
            a = np.frombuffer(invec, dtype=_dtype)
            b = np.frombuffer(inoutvec, dtype=_dtype)
            _ufunc(a, b, out=b)

        _user_ops[key] = MPI.Op.Create(combine, commute=op.commutative)
    return _user_ops[key]


def wire(array: np.ndarray, op: Op):
    """``(message, mpi_op)`` to send ``array`` (a carry) through MPI with ``op``.

    Signed integer sums and products travel as the unsigned type of the same size: the
    bits of a two's-complement sum or product are the same, and wrap-around on overflow is
    defined for unsigned integers in C (MPI's built-in operations) as it is in NumPy.
    """
    dtype = array.dtype
    if dtype.kind == "i" and op.name in ("sum", "prod"):
        array = array.view(np.dtype(f"u{dtype.itemsize}"))
    dt, _ = mpi_datatype(array.dtype)
    return [array, array.size, dt], mpi_op(op, array.dtype)


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
    return int(env) if env else None


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
# Exclusive scan of totals
# ---------------------------------------------------------------------------

def _exscan(comm, total: np.ndarray, op: Op) -> Optional[np.ndarray]:
    """``Exscan`` of ``total`` over ``comm``; None on its first rank."""
    if comm.Get_size() == 1:
        return None
    result = np.empty_like(total)
    send, mop = wire(total, op)
    recv, _ = wire(result, op)
    comm.Exscan(send, recv, op=mop)
    return None if comm.Get_rank() == 0 else result


def _combine(op: Op, before: Optional[np.ndarray], after: Optional[np.ndarray]) -> Optional[np.ndarray]:
    if before is None:
        return after
    if after is None:
        return before
    return op.ufunc(before, after).astype(before.dtype, copy=False)


def exclusive_prefix(total: np.ndarray, op: Op, comm, method: str = "auto",
                     node_size: Optional[int] = None) -> Optional[np.ndarray]:
    """This rank's offset: ``total[0] op ... op total[rank-1]`` over the ranks of ``comm``.

    Parameters
    ----------
    total : numpy.ndarray
        This rank's total, shape ``(w,)``, in the accumulator dtype.  Same shape and
        dtype on every rank.
    op : Op
        The operator.
    comm : mpi4py.MPI.Comm
        The communicator; every rank must call.
    method : {"auto", "flat", "node"}
        See the module docstring.
    node_size : int, optional
        Force blocks of this many consecutive ranks to act as nodes (tests).

    Returns
    -------
    numpy.ndarray or None
        The offset, or None on rank 0 (nothing before it).
    """
    total = np.ascontiguousarray(total)
    if comm.Get_size() == 1:
        return None
    method = resolve_method(method, comm, node_size)
    if method == "flat":
        return _exscan(comm, total, op)

    h = get_hierarchy(comm, node_size)
    within = _exscan(h.node, total, op)
    # The node's total, gathered at its leader, in rank order.
    node_total = np.empty_like(total)
    if h.node.Get_size() > 1:
        send, mop = wire(total, op)
        recv, _ = wire(node_total, op)
        h.node.Reduce(send, recv, op=mop, root=0)
    else:
        node_total[...] = total
    node_offset = None
    if h.leaders is not None:
        node_offset = _exscan(h.leaders, node_total, op)
    if h.node_index == 0:
        # The first node has nothing before it; all its ranks know this without talking.
        return within
    if h.node.Get_size() > 1:
        buf = node_offset if node_offset is not None else np.empty_like(total)
        h.node.Bcast(wire(buf, op)[0], root=0)
        node_offset = buf
    return _combine(op, node_offset, within)
