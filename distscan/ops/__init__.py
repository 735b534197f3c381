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

from .._lazy import lazy_names
from .table import ALL_OPS, OPS, Op, get_op, known_associative  # noqa: F401

# The state operators (derive.py, state.py) and declared ones (declared.py) load on first use: a
# plain scan, and the command's start-up, need only the table.
__getattr__, __dir__ = lazy_names(__name__, {
    **dict.fromkeys(("affine", "compensated", "segmented"), ".derive"),
    **dict.fromkeys(("Operator", "check_associative"), ".declared")})

__all__ = ["Op", "OPS", "get_op", "Operator"]
