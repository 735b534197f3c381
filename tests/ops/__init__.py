"""Tests of distscan.ops: the operators of issue 30 (NaN-aware ufuncs, logaddexp, gcd and lcm,
reverse and segmented scans, linear recurrences, compensated sums, declared operators) across
ranks against sequential references; their GPU tests are in tests/gpu/test_operators.py."""
