"""Tests of the ``distscan`` command (distscan.cli), in-process and under mpiexec."""
