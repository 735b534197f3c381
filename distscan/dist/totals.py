"""The plan's calls that end in a total or in an agreement alone (a mixin of
:class:`distscan.dist.plan.ScanPlan`): :meth:`Totals.total` (``distscan.reduce``), and
:meth:`Totals.agree` (a scan along another axis, each rank's work its own); with the raise of a
floating-point error that the exchange's fold gave quietly (:meth:`Totals._raise_quiet_error`,
which :meth:`ScanPlan.run` raises too); and :func:`reduce_result`, what ``distscan.reduce``
returns for the total."""

from __future__ import annotations

import numpy as np

from .agree import collectively, numpy_may_raise


class Totals:
    """What :class:`distscan.dist.plan.ScanPlan` provides: ``size``, ``comm``, ``backend``, ``op``,
    ``carries``, ``_floats``, ``_exchanger``, :meth:`local_carry`, :meth:`exchange` and
    :meth:`_exchange`."""

    def total(self, rows, *, finish, error=None, what="reduce arguments"):
        """``finish(total, rows)`` on every rank, where ``total`` is the global total of every rank's
        ``rows`` as a host row (w,) in the accumulator dtype (None when no rank holds a row) and
        ``rows`` their count.  ``finish`` (NumPy's casts and combines of the host row) runs inside
        an agreement wherever some rank's NumPy may raise a floating-point error: a rank whose
        errstate raises on the cast to float16 raised alone while the others returned inf (an
        audit, 2026-11-27), as it still may where a one-rank call raises by itself."""
        carry, n = None, 0
        if error is None:
            try:
                n = int(rows.shape[0])
                carry = self.local_carry(rows) if n else None
            except BaseException as exc:  # noqa: BLE001 - agreed in the exchange (agree.raise_agreed)
                error = exc
        if self.size == 1:
            if error is not None:
                raise error
            return finish(self.carries.value(carry), n)
        # (a declared operator's projection is the user's code, which may raise on some ranks only)
        may_raise = self._floats and numpy_may_raise() or self.op.runs_user_code
        agreed, _, total = self._exchange(carry, error, n, what, None, True, may_raise)
        if not agreed.agree_after:
            return finish(total, agreed.rows)
        with collectively(self.comm):
            self._raise_quiet_error(agreed)
            result = finish(total, agreed.rows)
        return result

    def _raise_quiet_error(self, agreed) -> None:
        """The floating-point error the exchange's folds gave quietly (the totals overflowed), raised
        as NumPy's scan of the whole array would, inside the agreement after the exchange.  CPU plans
        only: the GPU's scans raise none (docs/api.md)."""
        ex = self._exchanger
        if agreed.agree_after and ex is not None and ex.quiet_error is not None and self.backend == "cpu":
            raise ex.quiet_error

    def agree(self, error=None, *, rows: int = 0, what="scan arguments") -> None:
        """Take part in an exchange that only agrees on failures and arguments (a scan along another
        axis: each rank's work is its own)."""
        if self.size > 1:
            self.exchange(None, error, rows=rows, what=what)
        elif error is not None:
            raise error


def reduce_result(plan, total, rows: int):
    """What :func:`distscan.reduce` returns for the global ``total`` (a host row in the accumulator dtype, or
    None) of ``rows`` rows: run on every rank, inside an agreement where it may raise
    (:meth:`distscan.dist.totals.Totals.total`)."""
    # NumPy's reduction starts from its ufunc's identity, or, where it has none (maximum, fmax, lcm),
    # from the first item: np.fmax.reduce of NaNs is NaN, np.lcm.reduce([-6]) is -6, and an empty
    # array is refused
    no_identity = plan.op.ufunc is not None and plan.op.ufunc.identity is None
    if rows == 0 and no_identity:
        raise ValueError(f"zero-size array to reduction operation {plan.op.name} which has no identity")
    acc = plan.types.acc
    if plan.op.ufunc is None:  # a declared operator: the total is its state (the identity if empty), projected
        state = plan.op.state
        empty = np.full(plan.w, state.neutral(acc), state.dtype(acc))
        total = np.asarray(state.project(empty if total is None else np.asarray(total, state.dtype(acc))))
    else:
        identity = np.full(plan.w, plan.op.identity(acc), acc)
        # NumPy's reductions start from the identity (np.sum([-0.0]) is +0.0); carries start from the
        # neutral element (-0.0 for float sums), which keeps a part's own signs.
        if total is None:
            total = identity
        elif not no_identity:
            total = plan.op.ufunc(identity, np.asarray(total, acc)).astype(acc)
    total = np.asarray(total).astype(plan.types.result)
    return total.reshape(plan.trailing)[()] if plan.trailing else total[0]
