"""Tests of distscan.dist: the plan, the exchange of carries, nodes, agreement, ranks that differ."""
