"""Tests of distscan.algorithms: the data flows, their operation counts, their names."""
