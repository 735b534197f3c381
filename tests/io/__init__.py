"""Tests of distscan.io: the .npy format, parallel reads, the writer, temporary names."""
