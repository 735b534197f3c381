"""CUDA C++ sources of distscan's GPU kernels (shipped as package data; compiled at run time)."""
