"""A declared operator's combine that raises an exception of the user's own class (defined outside the
modules every rank may rebuild exceptions from: ``distscan.dist.agree._TRUSTED_MODULES``) on some
ranks only, or on every rank alike.

Found 2026-11-27 (s40): the failing rank raised its own class (``MyError: rank 1: ...``) while the
others raised ``DistScanError`` with the same message, so no one ``except`` clause but ``Exception``
caught the call's failure on every rank (``except DistScanError`` let it through on the failing rank
alone, whose next collective then had no partner).  docs/api.md: the failing rank's type "where every
rank can rebuild it", else ``DistScanError``: on every rank, the failing one too (its own exception is
the ``__cause__``).  Where every rank raised that class itself, each keeps it.

Runs serially and under ``mpiexec -n K python -m pytest --with-mpi``.
"""

from __future__ import annotations

import numpy as np
import pytest

import distscan
from distscan import DistScanError

pytestmark = [pytest.mark.anyranks, pytest.mark.timeout(60)]


class UserError(Exception):
    """An exception class of the user's (this test module is no trusted module)."""


class UserValueError(ValueError):
    """A user's subclass of a standard type: its own class, which the other ranks cannot build."""


def _refusing(exc_type):
    def combine(a, b):
        if np.any(np.asarray(b) >= 1000):
            raise exc_type("refused")
        return np.add(a, b)
    return distscan.Operator(f"refusing {exc_type.__name__}", combine, identity=0, kinds="i")


@pytest.mark.mpi(min_size=1)
@pytest.mark.parametrize("exc_type", [UserError, UserValueError])
@pytest.mark.parametrize("who, call", [("the last rank", "scan"), ("the last rank", "reduce"), ("every rank", "reduce")])
def test_a_users_exception_class_is_one_type_on_every_rank(exc_type, who, call, comm):
    """(``reduce`` for every rank: each rank combines its own part's items before the exchange; a
    scan's last rank combines them only after it, which a failure before it skips.)"""
    size, rank = comm.Get_size(), comm.Get_rank()
    fails = who == "every rank" or rank == size - 1
    part = np.arange(4, dtype=np.int64) + (1000 if fails else 0)
    op = _refusing(exc_type)
    got = None
    try:
        getattr(distscan, call)(part, op, comm=comm)
    except Exception as exc:  # noqa: BLE001 - what each rank raised is the test
        got = exc
    outcomes = comm.allgather(None if got is None else (type(got).__name__, str(got)))
    assert len(set(outcomes)) == 1, outcomes  # one type and one message on every rank
    if who == "every rank" or size == 1:
        assert type(got) is exc_type, outcomes  # every rank raised it itself: each keeps it
    else:
        assert type(got) is DistScanError and str(got) == f"rank {size - 1}: refused", outcomes
        if fails:
            assert type(got.__cause__) is exc_type  # the original, as the cause
    # the next calls are right
    np.testing.assert_array_equal(distscan.scan(np.ones(2, np.int64), op, comm=comm),
                                  [2 * rank + 1, 2 * rank + 2])
