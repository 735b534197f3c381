"""A declared operator's combine that raises an exception outside ``Exception`` (``KeyboardInterrupt``,
``SystemExit``) on some ranks only: in the rank's local scan, with ``check=True`` while its part is
sampled, in the exchange's fold of the carries before a rank, or in the finish after the exchange.

Found 2026-11-27 (s40): every agreement caught ``Exception`` alone, so such a combine's exception
left its rank at once while the others waited in the exchange; the rank's next call then met the
others' pending collective (``operator differs across ranks: ... rank 1 has sum``) and the job hung.

The promise checked: a rank whose own combine raised it raises it as it is (a ``KeyboardInterrupt``
stays one, a ``SystemExit`` keeps its code: it is that process's interrupt or exit), and every other
rank raises the same ``DistScanError`` naming the first failing rank and the exception's type; never a
hang (pytest-timeout ends one), and the calls after it are right.

Runs serially and under ``mpiexec -n K python -m pytest --with-mpi``.
"""

from __future__ import annotations

import numpy as np
import pytest

import distscan
from distscan import DistScanError

pytestmark = [pytest.mark.anyranks, pytest.mark.timeout(60)]

_RAISE = {"exception": KeyboardInterrupt}  # what the combine raises (a test sets it)


def _on_values(condition):
    """A declared sum whose combine raises ``_RAISE["exception"]`` where ``condition(a, b)`` holds."""
    def combine(a, b):
        if np.any(condition(np.asarray(a), np.asarray(b))):
            exc = _RAISE["exception"]
            raise exc(3) if exc is SystemExit else exc()
        return np.add(a, b)
    return combine


# where: (combine's condition, this rank's part, the ranks whose own combine raises, the fewest ranks)
def _case(where, rank, size):
    last = size - 1
    if where in ("local", "check"):  # the last rank's part holds the values the combine refuses
        part = np.arange(4, dtype=np.int64) + (1000 if rank == last else 0)
        return (lambda a, b: b >= 1000), part, {last}, 1
    if where == "fold":  # totals 7 (rank 0) and 11 (rank 1): combined only in the fold of ranks >= 2
        part = np.array([7] if rank == 0 else [5, 6] if rank == 1 else [1], np.int64)
        return (lambda a, b: (a == 7) & (b == 11)), part, set(range(2, size)), 3
    # after: rank 0's total 60 seeds rank 1's scan, whose first combine refuses it (the fold of the
    # ranks after it combines 60 with a total of 4, not with an item 1)
    part = np.full(4, 15, np.int64) if rank == 0 else np.ones(4, np.int64)
    return (lambda a, b: (a == 60) & (b == 1)), part, {1}, 2


@pytest.mark.mpi(min_size=1)
@pytest.mark.parametrize("exception", [KeyboardInterrupt, SystemExit])
@pytest.mark.parametrize("where", ["local", "check", "fold", "after"])
def test_a_combine_raising_outside_exception_on_some_ranks_is_agreed(where, exception, comm):
    condition, part, failing, fewest = _case(where, comm.rank, comm.size)
    if comm.size < fewest:
        pytest.skip(f"the {where} case needs {fewest} ranks")
    _RAISE["exception"] = exception
    op = distscan.Operator(f"refusing sum {where}", _on_values(condition), identity=0, kinds="i",
                           check=where == "check")
    got = None
    try:
        distscan.scan(part, op, comm=comm)
    except BaseException as exc:  # noqa: BLE001 - what each rank raised is the test
        got = exc
    outcomes = comm.allgather(None if got is None else (type(got).__name__, str(got)))
    assert got is not None, outcomes
    if comm.rank in failing:
        assert type(got) is exception, outcomes
        if exception is SystemExit:
            assert got.code == 3, outcomes  # the exit status the user's code asked for
    else:
        assert type(got) is DistScanError, outcomes
        assert f"rank {min(failing)}" in str(got) and exception.__name__ in str(got), outcomes
    others = {o for r, o in enumerate(outcomes) if r not in failing}
    assert len(others) <= 1, outcomes  # the same error on every rank that did not raise its own
    # the communicator is whole: the next calls are right, with this operator too
    for _ in range(2):
        np.testing.assert_array_equal(distscan.cumsum(np.ones(2, np.int64), comm=comm),
                                      [2 * comm.rank + 1, 2 * comm.rank + 2])
        np.testing.assert_array_equal(distscan.scan(np.ones(2, np.int64), op, comm=comm),
                                      [2 * comm.rank + 1, 2 * comm.rank + 2])
