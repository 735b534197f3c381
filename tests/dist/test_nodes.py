"""Nodes (distscan.dist.nodes): how a communicator splits into nodes, cached, and the method chosen.

Runs serially and under ``mpiexec -n K python -m pytest --with-mpi``.
"""

import pytest

from distscan.dist import nodes

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
