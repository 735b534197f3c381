"""Tests of distscan.pipeline: the chunked skeleton, the CPU and GPU engines, --verify, progress."""
