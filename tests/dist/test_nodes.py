"""Nodes (distscan.dist.nodes): how a communicator splits into nodes, cached, and the method chosen.

Runs serially and under ``mpiexec -n K python -m pytest --with-mpi``.
"""

import pytest

from distscan.dist import nodes
from tests.support.ranks import all_ranks_ok

pytestmark = [pytest.mark.anyranks, pytest.mark.manyranks, pytest.mark.timeout(120)]


def test_node_split_is_cached_and_sane(comm):
    h = nodes.get_hierarchy(comm, node_size=2)
    assert h is nodes.get_hierarchy(comm, node_size=2)
    assert h.contiguous
    assert h.num_nodes == (comm.size + 1) // 2
    assert h.node_index == comm.rank // 2
    real = nodes.get_hierarchy(comm)
    assert real.contiguous and real.num_nodes >= 1
    assert nodes.resolve_method("auto", comm) in ("flat", "node")


def test_the_node_size_of_a_call_is_the_variable_as_it_is_now(monkeypatch):
    """nodes.node_size_of_call reads DISTSCAN_NODE_SIZE through os.environ's own mapping, so every
    way Python code changes the variable shows at the next call; an argument wins over it."""
    import os
    from unittest import mock

    monkeypatch.delenv(nodes.NODE_SIZE_ENV, raising=False)
    assert nodes.node_size_of_call(None) is nodes.REAL_NODES
    assert nodes.node_size_override(nodes.REAL_NODES) is None
    assert nodes.node_size_of_call(3) == 3
    monkeypatch.setenv(nodes.NODE_SIZE_ENV, "2")
    two = nodes.node_size_of_call(None)
    assert type(two) is nodes.FromEnv and two is nodes.node_size_of_call(None)  # one object per value
    assert nodes.node_size_override(two) == 2 and nodes.node_size_of_call(5) == 5
    with mock.patch.dict(os.environ, {nodes.NODE_SIZE_ENV: "5"}):
        assert nodes.node_size_override(nodes.node_size_of_call(None)) == 5
    assert nodes.node_size_of_call(None) is two
    os.environ[nodes.NODE_SIZE_ENV] = "x"  # (monkeypatch puts the variable back)
    bad = nodes.node_size_of_call(None)  # raises nothing here: the plan's build does, on every rank
    with pytest.raises(ValueError, match=r"DISTSCAN_NODE_SIZE='x' is not a number of ranks per node"):
        nodes.node_size_override(bad)
    os.environ.pop(nodes.NODE_SIZE_ENV)
    assert nodes.node_size_of_call(None) is nodes.REAL_NODES
    # what a plan passes its exchange: the size it read, never the variable again
    assert nodes.fixed(None) is nodes.REAL_NODES and nodes.fixed(4) == 4


def test_a_changed_variable_reaches_the_next_call(comm, monkeypatch):
    """DISTSCAN_NODE_SIZE set, changed and unset between calls on one communicator: each call uses
    the node size of its moment (the node method wherever that makes several nodes; until 2026-11
    the plan of the first call kept its method and fingerprint) and equals NumPy.
    tests/dist/test_options_in_a_row.py does more (other routes, communicators, ranks that differ)."""
    import numpy as np

    import distscan
    from distscan.dist import exchange

    used = []
    real_offsets = exchange.node_offsets

    def spy(mine, like, combine, c, node_size, *args, **kwargs):
        used.append(nodes.node_size_override(node_size))
        return real_offsets(mine, like, combine, c, node_size, *args, **kwargs)

    monkeypatch.setattr(exchange, "node_offsets", spy)
    x = np.arange(4, dtype=np.int64) + 10 * comm.rank
    want = np.cumsum(np.concatenate(comm.allgather(x)))[4 * comm.rank:4 * comm.rank + 4]
    for env in (None, "1", "2", None, "1", "1", None):
        if env is None:
            monkeypatch.delenv(nodes.NODE_SIZE_ENV, raising=False)
        else:
            monkeypatch.setenv(nodes.NODE_SIZE_ENV, env)
        for y in (x, x * 1.0):
            used.clear()
            got = distscan.cumsum(y, comm=comm)
            forced = None if env is None else int(env)

            def check():
                np.testing.assert_array_equal(got, want)
                assert set(used) <= {forced}, (env, used)
                if forced is not None and comm.size > forced:  # several nodes of that size: the node method
                    assert used == [forced], (env, used)
            all_ranks_ok(comm, check)  # (a rank alone failing would leave the others in the next call)


@pytest.mark.parametrize("hierarchy", ["auto", "flat", "node"])
def test_a_node_size_below_one_is_refused_on_every_rank_whatever_the_method(comm, hierarchy, monkeypatch):
    """node_size=0 (or DISTSCAN_NODE_SIZE=0 on several ranks) raised only where a call split its
    communicator: with hierarchy="flat", or on one rank, it passed unchecked.  Now every rank
    raises the same ValueError, and the next call (a good one) scans as NumPy does."""
    import numpy as np

    import distscan
    from tests.support.ranks import raises_everywhere

    monkeypatch.delenv(nodes.NODE_SIZE_ENV, raising=False)
    x = np.arange(5, dtype=np.int64) + comm.rank
    want = np.cumsum(np.concatenate(comm.allgather(x)))[5 * comm.rank:5 * comm.rank + 5]
    for bad in (0, -2):
        raises_everywhere(comm, ValueError, f"node size must be at least 1, got node_size={bad}",
                          lambda: distscan.cumsum(x, comm=comm, hierarchy=hierarchy, node_size=bad))
    if comm.size > 1:  # the variable is read on several ranks only (one rank has no nodes)
        monkeypatch.setenv(nodes.NODE_SIZE_ENV, "0")
        raises_everywhere(comm, ValueError, "node size must be at least 1, got DISTSCAN_NODE_SIZE='0'",
                          lambda: distscan.cumsum(x, comm=comm, hierarchy=hierarchy))
        monkeypatch.delenv(nodes.NODE_SIZE_ENV)
    got = distscan.cumsum(x, comm=comm, hierarchy=hierarchy)
    all_ranks_ok(comm, lambda: np.testing.assert_array_equal(got, want))
