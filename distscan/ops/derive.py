"""The operators a call's options make from a plain one: ``segments=`` (segmented),
``compensated=True`` (a double-word sum) and :func:`distscan.linear_recurrence` (affine maps).

Each is an :class:`~distscan.ops.table.Op` whose ``state`` (:mod:`distscan.ops.state`) says how
its elements combine, made once per (base, options) so that a call's plan is found by it.  The
functor names are the CUDA functors of ``kernels/util/states.cuh``.
"""

from __future__ import annotations

from .state import Affine, Compensated, Segmented
from .table import Op

_MADE: dict = {}

# float and complex, and integers (whose affine maps wrap exactly, as NumPy's arithmetic does)
_AFFINE_KINDS = "iufc"


def _made(key, build) -> Op:
    op = _MADE.get(key)
    if op is None:
        op = _MADE[key] = build()
    return op


def segmented(base: Op, reverse: bool = False) -> Op:
    """``base`` restarted at every flagged element (in reverse: the same runs, right to left)."""
    if base.runs_user_code:  # every declared Operator (with source= or a declared state among them)
        raise ValueError(f"segments= with the declared operator {base.name!r} is not supported; "
                         "declare its state with the segment flag instead")
    if base.state is not None:
        raise ValueError(f"segments= takes a plain operator, not {base.name!r}")
    state = Segmented(base, ends=reverse)
    functor = f"{'SegmentedEnds' if reverse else 'Segmented'}<distscan::{base.functor}>"
    return _made(("segmented", base, reverse), lambda: Op(
        f"segmented {base.name}", None, functor, base.identity, base.kinds, logical=base.logical,
        promotes=base.promotes, neutral=base.neutral, nan_lift=base.nan_lift, commutative=False, state=state))


def compensated(base: Op) -> Op:
    """A float sum carried as (sum, error)."""
    if base.name not in ("sum", "nansum"):
        raise ValueError(f"compensated=True is for sums (op='sum' or 'nansum'), not {base.name!r}")
    return _made(("compensated", base), lambda: Op(
        f"compensated {base.name}", None, f"Compensated<distscan::{base.functor}>", base.identity, "fc",
        neutral=base.neutral, nan_lift=base.nan_lift, commutative=False, state=Compensated(base)))


def affine(segments: bool = False, reverse: bool = False) -> Op:
    """``y[i] = a[i]*y[i-1] + b[i]`` (``reverse``: ``y[i+1]``), restarted at segment starts."""
    mode = ("ends" if reverse else "starts") if segments else ""
    functor = {"": "Affine", "starts": "AffineStarts", "ends": "AffineEnds"}[mode]
    return _made(("affine", mode), lambda: Op(
        "linear recurrence" + (" (segmented)" if segments else ""), None, functor, lambda dt: dt.type(0),
        _AFFINE_KINDS, commutative=False, state=Affine(mode)))
