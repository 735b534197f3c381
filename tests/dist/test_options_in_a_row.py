"""Calls in a row whose node size, hierarchy or communicator changes between them, in one process.

The plans, call kinds and exchanges that distscan keeps between calls (distscan._kinds,
distscan.dist.plan, distscan.dist.exchange) and the node splits it keeps on a communicator
(distscan.dist.nodes) must follow what a call asks for now:

* ``agree``: every rank alike; ``DISTSCAN_NODE_SIZE`` set, changed and unset between calls,
  ``node_size=`` over it, on a dup of COMM_WORLD, a Split of it, a dup of the dup and a Split made
  after the first was freed.  Every call equals NumPy and uses the hierarchy asked for *now*: the
  node method with that node size wherever it makes several nodes (until 2026-11 a plan made
  under one value kept its method and its fingerprint for every later value: the variable set
  after a first call never reached the exchange);
* ``differ``: ranks that disagree on the node size (the variable, the argument, both; plans cold
  or warm) or on the hierarchy, or one rank with a variable that is not a number: one clear
  error, the same on every rank, never a hang (the warm case hung: the fingerprint of the cached
  plan still named the old node size, so the ranks agreed and then split their communicator
  differently), and a call on which all agree works after each;
* ``doubling``: ``DISTSCAN_DOUBLING_RANKS`` (read once at import, chooses the gather or recursive
  doubling, the first collective of a call) set on one rank only: one error on every rank of
  the communicators where the ranks would choose differently (they hung, one rank in
  ``Sendrecv``, the others in ``Allgather``), on every call; the same value everywhere, or values
  that choose alike, work.

Each part runs under mpiexec at 2, 3 and 4 ranks in a process of its own
(tests/dist/options_in_a_row_worker.py) with a timeout: a hang fails the test, not the run.
"""

from __future__ import annotations

import json
import math
import os
import sys

import pytest

from tests.support.launch import mpi_command, require_mpiexec, run

WORKER = os.path.join(os.path.dirname(__file__), "options_in_a_row_worker.py")
TIMEOUT_S = int(os.environ.get("DISTSCAN_RANKS_DIFFER_TIMEOUT", "120"))

pytestmark = pytest.mark.timeout(3 * TIMEOUT_S)


def launch(part, ranks, tmp_path, *per_rank):
    require_mpiexec()
    proc = run(mpi_command(ranks, [sys.executable, WORKER, part, str(tmp_path), *per_rank]), timeout=TIMEOUT_S)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return [json.loads((tmp_path / f"rank-{r}.json").read_text()) for r in range(ranks)]


def steps(ranks_out):
    """``{step: [that step's record on each rank]}``, in the order of the steps."""
    out: dict = {}
    for rank_out in ranks_out:
        for rec in rank_out["records"]:
            out.setdefault(rec["step"], []).append(rec)
    return out


def expected_node_size(step: str):
    """The node size a step of the ``agree`` part asks for: the argument over the variable."""
    if "argument" in step:
        return int(step.split("argument ")[1][0])
    if "unset" in step:
        return None
    return int(step.split("env ")[1][0])


def check_hierarchy(step, rank, rec, one_host):
    """Each call of the step used the hierarchy of the node size asked for now (see the module
    docstring): the node method with that size where it makes several nodes; no split of another size."""
    size, asked = rec["size"], expected_node_size(step)
    for call, seen in rec["calls"].items():
        # reduce() takes no node_size: the variable's (the steps' arguments go with a variable
        # of the same value, or none)
        want = asked if not call.startswith("reduce") or "argument" not in step else \
            (None if "unset" in step else int(step.split("env ")[1][0]))
        where = f"{step}: rank {rank}, {call} on {size} ranks: {seen}"
        if size == 1:
            assert seen == {"split": [], "node": []}, where
            continue
        label = "real" if want is None else want
        assert set(seen["split"]) <= {label}, where
        several = (math.ceil(size / want) > 1) if want is not None else (None if not one_host else False)
        if several is None:
            continue  # the real nodes of several hosts: auto's choice is theirs
        explicit = call.startswith("hierarchy=node")
        assert seen["node"] == ([label] if several or explicit else []), where


@pytest.mark.parametrize("ranks", [2, 3, 4])
def test_node_size_and_communicator_changes_reach_every_call(ranks, tmp_path):
    out = launch("agree", ranks, tmp_path)
    by_step = steps(out)
    assert len(by_step) == 18, list(by_step)
    for step, recs in by_step.items():
        failed = [(r, rec.get("message")) for r, rec in enumerate(recs) if not rec["ok"]]
        assert not failed, f"{step}: {failed}"
        for r, rec in enumerate(recs):
            check_hierarchy(step, r, rec, out[r]["one_host"])


# step -> what every rank must raise (type, a text of the message); None: every rank returns
DIFFER = {
    "cold: env 2 on rank 0, 1 elsewhere": ("ValueError", "node size differs across ranks: rank 0 has 2, rank"),
    "warm: env 1 everywhere": None,
    "warm: then env 2 on rank 0": ("ValueError", "node size differs across ranks: rank 0 has 2, rank"),
    "warm: unset everywhere": None,
    "warm: then env 1 on the last rank": ("ValueError", "node size differs across ranks: rank"),
    "argument 2 on rank 0, env 2 elsewhere": None,
    "argument 1 on rank 0, 2 elsewhere": ("ValueError", "node size differs across ranks: rank 0 has 1, rank"),
    "hierarchy node on rank 0, flat elsewhere": ("ValueError", "hierarchy differs across ranks: rank 0 has node"),
    "env x on the last rank": ("ValueError", "DISTSCAN_NODE_SIZE='x' is not a number of ranks per node"),
}


@pytest.mark.parametrize("ranks", [2, 3, 4])
def test_ranks_that_disagree_on_the_node_size_all_raise(ranks, tmp_path):
    by_step = steps(launch("differ", ranks, tmp_path))
    assert set(DIFFER) <= set(by_step), sorted(set(DIFFER) - set(by_step))
    for step, recs in by_step.items():
        outcomes = [(rec["ok"], rec.get("type"), rec.get("message")) for rec in recs]
        want = DIFFER.get(step)
        if want is None:  # an agreed call, or the one after a refusal (", then all unset")
            assert all(ok for ok, _, _ in outcomes), f"{step}: {outcomes}"
            continue
        assert len(set(outcomes)) == 1, f"{step}: the ranks did not end alike: {outcomes}"
        ok, kind, message = outcomes[0]
        assert not ok and kind == want[0] and want[1] in message, f"{step}: {outcomes[0]}"


@pytest.mark.parametrize("ranks", [2, 3, 4])
@pytest.mark.parametrize("values", [{0: 2}, {r: 2 for r in range(4)}, {0: 2048}], ids=["one rank", "every rank",
                                                                                     "alike"])
def test_doubling_ranks_that_differ_are_refused_on_every_rank(ranks, values, tmp_path):
    """``{rank: DISTSCAN_DOUBLING_RANKS}`` (the others: the default, 1024)."""
    out = launch("doubling", ranks, tmp_path, *(f"{r}={v}" for r, v in values.items()))
    assert [o["doubling_ranks"] for o in out] == [values.get(r, 1024) for r in range(ranks)]
    by_step = steps(out)
    assert len(by_step) == 5, list(by_step)
    for step, recs in by_step.items():
        # the ranks of each communicator of the step, and whether they choose alike there
        members = [[0, 1], list(range(2, ranks))] if step.startswith("split") else [list(range(ranks))]
        for group in members:
            if not group:
                continue
            choices = {len(group) >= values.get(r, 1024) for r in group}
            outcomes = [(recs[r]["ok"], recs[r].get("type"), recs[r].get("message")) for r in group]
            where = f"{step}, ranks {group}: {outcomes}"
            if len(choices) == 1:
                assert all(ok for ok, _, _ in outcomes), where
                continue
            assert len(set(outcomes)) == 1, where
            ok, kind, message = outcomes[0]
            assert not ok and kind == "ValueError", where
            assert message.startswith("DISTSCAN_DOUBLING_RANKS differs across ranks") and "rank 0 has 2" in message, where


@pytest.mark.parametrize("ranks", [2, 3])
@pytest.mark.parametrize("values", [{0: "x"}, {r: "x" for r in range(3)}], ids=["one rank", "every rank"])
def test_doubling_ranks_that_are_no_number_are_refused_on_every_rank(ranks, values, tmp_path):
    """``DISTSCAN_DOUBLING_RANKS=x``: distscan still imports (raising there would end only the ranks
    that have it, the others waiting in their first collective), and every call of a communicator
    with such a rank raises alike on all its ranks, again at the next call."""
    out = launch("doubling", ranks, tmp_path, *(f"{r}={v}" for r, v in values.items()))
    for step, recs in steps(out).items():
        members = [[0, 1], list(range(2, ranks))] if step.startswith("split") else [list(range(ranks))]
        for group in members:
            if not group:
                continue
            bad = [r for r in group if r in values]
            outcomes = [(recs[r]["ok"], recs[r].get("type"), recs[r].get("message")) for r in group]
            where = f"{step}, ranks {group}: {outcomes}"
            if not bad or len(group) == 1:  # a call on one rank makes no exchange: it reads no variable
                assert all(ok for ok, _, _ in outcomes), where
                continue
            assert len(set(outcomes)) == 1, where
            ok, kind, message = outcomes[0]
            assert not ok and kind == "ValueError", where
            if len(bad) == len(group):
                assert message == "DISTSCAN_DOUBLING_RANKS='x' is not a number of ranks", where
            else:
                assert message.startswith("DISTSCAN_DOUBLING_RANKS differs across ranks") and "has x" in message, where
