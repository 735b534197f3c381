"""Runs the steps of tests/dist/test_options_in_a_row.py under mpiexec: calls in a row in one process
whose node size (``DISTSCAN_NODE_SIZE``, ``node_size=``), hierarchy or communicator changes between
them, on every rank alike or on some ranks only, and writes what each call did to ``OUT/rank-R.json``.

Usage: ``mpiexec -n P python tests/dist/options_in_a_row_worker.py PART OUT_DIR [RANK=VALUE ...]``.
``PART`` is ``agree`` (every rank alike), ``differ`` (ranks that disagree, each such step followed by
a call on which they agree) or ``doubling`` (``RANK=VALUE``: ``DISTSCAN_DOUBLING_RANKS`` of that rank,
set before distscan is imported, as a launcher's per-rank environment would).

Every rank prints ``step NAME`` before each step (flushed), so a run that hangs shows where.  The
checks (equal to NumPy, the hierarchy used, or the same exception everywhere) are the parent's; this
file records.  It makes no collective of its own inside a step: a hang is distscan's.
"""

from __future__ import annotations

import json
import os
import sys

from tests.support.ranks import launcher_rank  # the launcher's rank variable

PART, OUT = sys.argv[1], sys.argv[2]
for arg in sys.argv[3:]:  # before distscan is imported: DOUBLING_RANKS is read at import
    r, value = arg.split("=")
    if launcher_rank() == int(r):
        os.environ["DISTSCAN_DOUBLING_RANKS"] = value

import numpy as np  # noqa: E402
from mpi4py import MPI  # noqa: E402

import distscan  # noqa: E402
from distscan.dist import exchange, nodes  # noqa: E402

WORLD = MPI.COMM_WORLD
RANK, SIZE = WORLD.Get_rank(), WORLD.Get_size()
ENV = nodes.NODE_SIZE_ENV

# What the hierarchy of each call was: the node sizes the splits asked for (None: the real nodes),
# and the ones whose node method (node_offsets) ran.
SEEN = {"split": [], "node": []}
_get_hierarchy, _node_offsets = nodes.get_hierarchy, exchange.node_offsets


def _spy_hierarchy(comm, *args, **kwargs):
    h = _get_hierarchy(comm, *args, **kwargs)
    SEEN["split"].append(h.node_size_override)
    return h


def _spy_offsets(*args, **kwargs):
    SEEN["node"].append(len(SEEN["split"]))  # the split it asks for comes next
    return _node_offsets(*args, **kwargs)


nodes.get_hierarchy = _spy_hierarchy
exchange.node_offsets = _spy_offsets


def set_env(value):
    if value is None:
        os.environ.pop(ENV, None)
    else:
        os.environ[ENV] = str(value)


def parts(comm, seed):
    """Every rank's part of a whole array (uneven, one part empty where there are 3+ ranks)."""
    rng = np.random.default_rng(seed)
    counts = [(3 + 2 * r) if r != 1 or comm.Get_size() < 3 else 0 for r in range(comm.Get_size())]
    g = rng.integers(-9, 10, sum(counts))
    flags = rng.random(sum(counts)) < 0.3
    lo = sum(counts[:comm.Get_rank()])
    sl = slice(lo, lo + counts[comm.Get_rank()])
    return g, flags, sl


def segmented_cumsum(g, flags):
    out, acc = np.empty_like(g), 0
    for i, (v, f) in enumerate(zip(g, flags)):
        acc = v if f else acc + v
        out[i] = acc
    return out


def calls(comm, **kw):
    """The calls of a step: each route of a distributed call (the lean integer call, the fast float
    call, a state scan by its loops, a reverse scan, an exclusive scan, a reduction), each twice
    (the second on warm caches), against NumPy."""
    g, flags, sl = parts(comm, 7)
    x, f = g[sl], flags[sl]
    gf = g * 0.5
    want = [
        ("cumsum int64", lambda: distscan.cumsum(x, comm=comm, **kw), np.cumsum(g)[sl]),
        ("cumsum float64", lambda: distscan.cumsum(x * 0.5, comm=comm, **kw), np.cumsum(gf)[sl]),
        ("segmented cumsum", lambda: distscan.cumsum(x, segments=f, comm=comm, **kw), segmented_cumsum(g, flags)[sl]),
        ("reverse cumsum", lambda: distscan.cumsum(x * 0.5, reverse=True, comm=comm, **kw),
         np.cumsum(gf[::-1])[::-1][sl]),
        ("exclusive max", lambda: distscan.scan(x, "max", exclusive=True, comm=comm, **kw), None),
        ("hierarchy=node", lambda: distscan.scan(x, "sum", hierarchy="node", comm=comm, **kw), np.cumsum(g)[sl]),
    ]
    for k in range(2):
        for name, fn, ref in want:
            seen_from = len(SEEN["split"]), len(SEEN["node"])
            got = fn()
            seen(f"{name} #{k}", *seen_from)
            if ref is None:  # the exclusive max: NumPy's max of the elements before each one
                ref = np.array([g[:i].max() if i else np.iinfo(g.dtype).min for i in range(len(g))])[sl]
            if not np.allclose(got, ref, rtol=1e-12, atol=1e-12) or got.dtype != ref.dtype:
                raise AssertionError(f"{name}: {got} != {ref}")
        seen_from = len(SEEN["split"]), len(SEEN["node"])
        total = distscan.reduce(x, comm=comm)
        seen(f"reduce #{k}", *seen_from)
        if total != g.sum():
            raise AssertionError(f"reduce: {total} != {g.sum()}")


def seen(call, split_from, node_from):
    """What the hierarchy of ``call`` was: the node sizes of the splits it asked for ("real": the real
    nodes) and the ones of its node method's offsets (empty: the flat exchange or doubling)."""
    split = ["real" if s is None else s for s in SEEN["split"]]
    CALLS[call] = {"split": sorted(set(split[split_from:]), key=str),
                   "node": sorted({split[i] for i in SEEN["node"][node_from:] if i < len(split)}, key=str)}


CALLS: dict = {}


def record(name, fn, comm_size=None):
    """Run one step; what it did (on this rank) goes into RECORDS."""
    print(f"[rank {RANK}] step {name}", flush=True)
    SEEN["split"].clear()
    SEEN["node"].clear()
    CALLS.clear()
    try:
        fn()
        out = {"step": name, "ok": True}
    except Exception as exc:  # noqa: BLE001 - compared across ranks by the parent
        out = {"step": name, "ok": False, "type": type(exc).__name__, "message": str(exc)}
    out.update({"calls": dict(CALLS), "size": comm_size})
    RECORDS.append(out)


RECORDS: list = []


def agree_part():
    """Every rank alike: the node size changes between the steps (the variable, the argument), and so
    does the communicator (a dup, a Split, a Split made again after the first is freed)."""
    w = WORLD.Dup()
    for name, env, kw in (("unset", None, {}), ("env 1", 1, {}), ("env 2", 2, {}), ("argument 3 over env 1", 1,
                          {"node_size": 3}), ("unset again", None, {}), ("env 1 again", 1, {}), ("env 2 again", 2, {}),
                          ("argument 1 over unset", None, {"node_size": 1}), ("env 1, argument 2", 1, {"node_size": 2}),
                          ("env 2, then unset", None, {})):
        set_env(env)
        record(name, lambda: calls(w, **kw), SIZE)
    sub = WORLD.Split(RANK % 2, RANK)
    for name, env in (("split: env 1", 1), ("split: unset", None), ("split: env 2", 2)):
        set_env(env)
        record(name, lambda: calls(sub), sub.Get_size())
    d = w.Dup()
    for name, env in (("dup: env 2", 2), ("dup: env 1", 1), ("world dup again: env 2", 2)):
        set_env(env)
        c = w if name.startswith("world") else d
        record(name, lambda: calls(c), SIZE)
    sub.Free()
    sub = WORLD.Split(RANK // 2, RANK)  # another split, after the first was freed
    for name, env in (("new split: env 1", 1), ("new split: unset", None)):
        set_env(env)
        record(name, lambda: calls(sub), sub.Get_size())
    set_env(None)


def differ_part():
    """Ranks that disagree on the node size or the hierarchy, with cold and warm plans; each such
    step is followed by one on which every rank agrees, which must work."""
    x = np.arange(4, dtype=np.int64) + RANK
    last = SIZE - 1

    def call(comm, **kw):
        return lambda: (distscan.cumsum(x, comm=comm, **kw), distscan.cumsum(x * 0.5, comm=comm, **kw))

    def agreed(name, comm):
        set_env(None)
        record(name + ", then all unset", lambda: calls(comm), SIZE)

    c = WORLD.Dup()  # cold: no plan of this communicator yet
    set_env(2 if RANK == 0 else 1)
    record("cold: env 2 on rank 0, 1 elsewhere", call(c), SIZE)
    agreed("cold", c)
    c = WORLD.Dup()
    set_env(1)
    record("warm: env 1 everywhere", call(c), SIZE)
    set_env(2 if RANK == 0 else 1)
    record("warm: then env 2 on rank 0", call(c), SIZE)
    agreed("warm 1", c)
    record("warm: unset everywhere", call(c), SIZE)
    set_env(1 if RANK == last else None)
    record("warm: then env 1 on the last rank", call(c), SIZE)
    agreed("warm unset", c)
    set_env(None if RANK == 0 else 2)
    record("argument 2 on rank 0, env 2 elsewhere", call(c, **({"node_size": 2} if RANK == 0 else {})), SIZE)
    set_env(None)
    record("argument 1 on rank 0, 2 elsewhere", call(c, node_size=1 if RANK == 0 else 2), SIZE)
    agreed("arguments", c)
    record("hierarchy node on rank 0, flat elsewhere", call(c, hierarchy="node" if RANK == 0 else "flat"), SIZE)
    agreed("hierarchy", c)
    set_env("x" if RANK == last else None)
    record("env x on the last rank", call(c), SIZE)
    agreed("env x", c)


def doubling_part():
    """``DISTSCAN_DOUBLING_RANKS`` as the launch set it on each rank: calls in a row, on a dup and on a
    Split, each twice (a refusal must come again: nothing of a refused call is kept)."""
    c = WORLD.Dup()
    x = np.arange(4, dtype=np.int64) + RANK
    for k in range(2):
        record(f"world dup, call {k}", lambda: calls(c), SIZE)
    sub = WORLD.Split(0 if RANK < 2 else 1, RANK)
    for k in range(2):
        record(f"split, call {k}", lambda: distscan.cumsum(x, comm=sub), sub.Get_size())
    record("exclusive_prefix", lambda: exchange.exclusive_prefix(x[:1], np.add, c), SIZE)


_node = WORLD.Split_type(MPI.COMM_TYPE_SHARED, key=RANK)
ONE_HOST = _node.Get_size() == SIZE  # the real nodes are one: hierarchy="auto" resolves to flat on them
_node.Free()
{"agree": agree_part, "differ": differ_part, "doubling": doubling_part}[PART]()
with open(os.path.join(OUT, f"rank-{RANK}.json"), "w") as fh:
    json.dump({"doubling_ranks": exchange.DOUBLING_RANKS, "one_host": ONE_HOST, "records": RECORDS}, fh)
print(f"[rank {RANK}] done", flush=True)
