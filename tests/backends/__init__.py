"""Tests of distscan.backends that need no GPU (the CPU backend, zero absorption, the result ring,
launch shapes); every GPU test is in tests/gpu."""
