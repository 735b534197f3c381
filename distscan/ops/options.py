"""The operator a call's options make: ``op`` with ``segments=``, ``compensated=True`` or the
coefficients of :func:`distscan.linear_recurrence`.

A plain call (none of these) takes its operator from the table alone; the state operators
(:mod:`distscan.ops.derive`) load only for a call that makes one.  Every check here runs on the
rank alone, before any collective: the call's agreement (distscan.dist.agree) raises it on every
rank.
"""

from __future__ import annotations

from .table import Op, get_op


class _NoCoefficients:
    """``linear_recurrence(None, b)``'s coefficients.  None in the options is "no recurrence", so
    this call scanned a plain cumulative sum of ``b``, silently (red team, 2026-11-28):
    :func:`call_op` refuses it."""

    __slots__ = ()

    def __repr__(self):
        return "None"


NO_COEFFICIENTS = _NoCoefficients()


def call_op(op, *, segments=None, compensated=False, coefficients=None, reverse=False) -> Op:
    """The operator of a call: ``op``, made segmented, compensated or affine by the call's options
    (``coefficients`` not None: a linear recurrence, whose ``op`` is the sum)."""
    base = get_op(op)
    if not compensated and coefficients is None and segments is None:
        return base
    if coefficients is NO_COEFFICIENTS:
        raise TypeError("linear_recurrence() got None as its coefficients a: pass a number or an array")
    from . import derive  # deferred: the state operators load only for a call that makes one
    if compensated:
        if coefficients is not None:
            raise ValueError("compensated=True is for sums, not linear recurrences")
        if segments is not None:
            raise ValueError("compensated=True and segments= together are not supported")
        base = derive.compensated(base)
    if coefficients is not None:
        return derive.affine(segments is not None, reverse)
    if segments is not None:
        return derive.segmented(base, reverse)
    return base
