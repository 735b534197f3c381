"""Operators: every scan distscan offers is a scan over an associative operator.

Plain operators (:mod:`distscan.ops.table`: ``sum``, ``prod``, ``max``, ..., ``logaddexp``,
``fmax``, ``gcd``, the NaN-aware ones) combine values.  State operators
(:mod:`distscan.ops.state`) combine a small state per element: segmented scans carry
(value, flag), linear recurrences compose affine maps (a, b), compensated sums carry
(sum, error); :mod:`distscan.ops.derive` makes them from a call's options.  A declared
operator (:class:`distscan.ops.declared.Operator`) is either kind.  The same operator drives
the GPU kernels, the CPU backend, the carries between ranks and nodes, and the file pipeline.
"""

from __future__ import annotations

from .table import ALL_OPS, OPS, Op, get_op, known_associative  # noqa: F401
from .derive import affine, compensated, segmented  # noqa: F401
from .declared import Operator, check_associative  # noqa: F401

__all__ = ["Op", "OPS", "get_op", "Operator"]
