"""The plan's calls that end in a total or in an agreement alone (a mixin of
:class:`distscan.dist.plan.ScanPlan`): :meth:`Totals.total` (``distscan.reduce``), and
:meth:`Totals.agree` (a scan along another axis, each rank's work its own); with the raise of a
floating-point error that the exchange's fold gave quietly (:meth:`Totals._raise_quiet_error`,
which :meth:`ScanPlan.run` raises too)."""

from __future__ import annotations

from .agree import collectively, numpy_may_raise


class Totals:
    """What :class:`distscan.dist.plan.ScanPlan` provides: ``size``, ``comm``, ``backend``,
    ``carries``, ``_floats``, ``_exchanger``, :meth:`local_carry`, :meth:`exchange` and
    :meth:`_exchange`."""

    def total(self, rows, *, error=None, what="reduce arguments"):
        """``(the global total as a host row (w,) in the accumulator dtype, total rows)`` of every
        rank's ``rows``, on every rank; None for the total when no rank holds a row."""
        carry, n = None, 0
        if error is None:
            try:
                n = int(rows.shape[0])
                carry = self.local_carry(rows) if n else None
            except Exception as exc:  # noqa: BLE001 - agreed in the exchange
                error = exc
        if self.size == 1:
            if error is not None:
                raise error
            return self.carries.value(carry), n
        agreed, _, total = self._exchange(carry, error, n, what, None, True,
                                          self._floats and self.backend == "cpu" and numpy_may_raise())
        if agreed.agree_after:
            with collectively(self.comm):
                self._raise_quiet_error(agreed)
        return total, agreed.rows

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
