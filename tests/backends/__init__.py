"""Tests of distscan.backends that need no GPU (zero absorption, the result ring, launch shapes, the
kernels' name expressions under nvcc and the source hash); every GPU test is in tests/gpu, and the
CPU backend runs under every test of the API."""
