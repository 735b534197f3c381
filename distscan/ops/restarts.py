"""Where a state scan restarts: the rows of a part whose state is the whole part's.

A segment start in scan order drops all that came before it exactly, so a segmented part's carry
(its state in scan order) is that of its last segment; :func:`carry_rows` says which rows those
are, for the CPU loops' carry (:meth:`distscan.backends.cpu_states.Loops.carry`).  The GPU's
ordered reduction stops at the same row from within (``restarts`` in ``kernels/util/states.cuh``).
"""

from __future__ import annotations

import numpy as np


def carry_rows(state, n: int, flags, reverse: bool, find_flag) -> tuple:
    """``(lo, hi)``: the rows of a part of ``n`` rows (in array order; scanned last row first when
    ``reverse``) whose state in scan order is the whole part's, its carry.  ``(0, n)`` but for a
    state with segments (``flags``: the part's segment flags, first axis ``n``).  There a row that
    restarts the state drops all that came before it exactly: ``s . t`` is ``t`` itself, every
    field, where ``t`` starts afresh (:meth:`Segmented.combine`, :meth:`Affine.combine`, and so the
    CPU loops' and the kernels' combines).  So the carry is the state of the rows from the last
    such row in scan order: a flagged row where flags start runs (``segments == "starts"``); where
    they end runs in scan order (``"ends"``, a reverse segmented scan's), a flagged row but the
    last, that row included (its ``end`` makes the carry's ``inner``; the last row's own flag is
    the carry's ``end``, read from the row).  So the CPU loops' carry reads the part's last segment
    and the flags searched for it, not every row; a part with no such flag is read whole.

    ``find_flag(flags, lo, last)``: the index of the last (``last``) or first true flag of
    ``flags[lo:]``, or -1 (:func:`distscan.backends.cpu_states.find_flag`, from that end)."""
    if not state.segments or n < 2 or flags is None or np.ndim(flags) == 0 or np.shape(flags)[0] != n:
        return 0, n
    ends = state.segments == "ends"
    # the rows that may restart, in scan order: "ends" all but the last, "starts" all but the first
    if not reverse:  # scan order is array order: the last such row
        lo, hi = (0, n - 1) if ends else (1, n)
        k = find_flag(flags[:hi], lo, True)
        return (k, n) if k > 0 else (0, n)
    lo, hi = (1, n) if ends else (0, n - 1)  # mirrored: the first such row in array order
    j = find_flag(flags[:hi], lo, False)
    return (0, j + 1) if 0 <= j < n - 1 else (0, n)
