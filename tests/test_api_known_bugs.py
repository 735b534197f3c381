"""Known bugs of the library call, found by adversarial testing (branch adv-api): each test states
the documented promise and fails today (``xfail(strict=True)``: a fix makes it pass, and then the
marker must go).  Repro scripts: ``.bugs/`` of the worktree that found them (not committed).

Written for any rank count (serially and under mpiexec, tests/run.sh).
"""

from __future__ import annotations

import numpy as np
import pytest

import distscan

from tests.support.ranks import SELF, all_ranks_ok, raises_everywhere

pytestmark = [pytest.mark.anyranks, pytest.mark.timeout(120)]


@pytest.mark.xfail(strict=True, reason="bug: compensated=True gives NaN where the sum is infinite (an inf input "
                                       "or an overflow): TwoSum's error term inf - inf is NaN "
                                       "(distscan/ops/state.py Compensated.combine, backends/cpu_state_loops.py "
                                       "COMPENSATED); NumPy and the exactly rounded sum give inf")
@pytest.mark.parametrize("first", [[np.inf, 1.0], [1.0, -np.inf], [1e308, 1e308]])
def test_compensated_sum_of_infinities_is_infinite(first, comm):
    """docs/operators.md: a compensated prefix is "as exact as a double-length sum rounded once";
    the results equal NumPy's on the concatenated array, where an infinite sum is inf, never NaN."""
    parts = [np.array(first)] + [np.array([1.0, 2.0])] * (comm.size - 1)
    g = np.concatenate(parts)
    with np.errstate(all="ignore"):
        expected = np.cumsum(g)[2 * comm.rank:2 * comm.rank + 2]
        got = distscan.cumsum(parts[comm.rank], compensated=True, comm=comm)
    all_ranks_ok(comm, lambda: np.testing.assert_array_equal(got, expected))


@pytest.mark.xfail(strict=True, reason="bug: on one rank a call of a kind seen before (the cheap path) with "
                                       "reverse=True (or timings=) and out= returns a view of out, not out: "
                                       "ScanPlan.run's one-rank branch returns what backends/cpu.py scan returns "
                                       "(rows.reshape(-1) of out), not the caller's out")
@pytest.mark.parametrize("kwargs", [{"reverse": True}, {"timings": {}}, {"op": "nansum", "reverse": True}],
                         ids=["reverse", "timings", "nansum-reverse"])
def test_out_is_returned_on_every_call(kwargs):
    """NumPy's out= returns out itself (``np.cumsum(x, out=o) is o``), and distscan's first call does:
    so must the second and third of the same kind.  One rank (COMM_SELF) at any launch size."""
    results = []
    for _ in range(3):
        x = np.arange(1.0, 5.0)
        out = np.zeros(4)
        y = distscan.scan(x, out=out, comm=SELF, **{"op": "sum", **kwargs})
        results.append(y is out)
    assert results == [True, True, True]


@pytest.mark.mpi(min_size=2)
@pytest.mark.xfail(strict=True, reason="bug: initial= values that differ across ranks where every rank must pass "
                                       "the same (linear_recurrence, segments= with initial=) are refused with "
                                       "'arguments differs across ranks: ranks 0-N have none', which names no "
                                       "difference: the value only salts the fingerprint (ScanPlan._initial_salt) "
                                       "and is not among the fields raise_mismatch compares")
@pytest.mark.parametrize("call", ["linear_recurrence", "segments"])
def test_initial_differing_across_ranks_is_named(call, comm):
    """docs/api.md: arguments that must agree are checked in the exchange, and every rank raises the
    same ValueError naming the difference."""
    initial = float(comm.rank + 1)
    if call == "linear_recurrence":
        fn = lambda: distscan.linear_recurrence(0.5, np.ones(3), initial=initial, comm=comm)  # noqa: E731
    else:
        fn = lambda: distscan.cumsum(np.ones(3), segments=np.zeros(3, bool), initial=initial, comm=comm)  # noqa: E731
    message = raises_everywhere(comm, ValueError, "differs across ranks", fn)

    def check():
        assert "initial" in message, message

    all_ranks_ok(comm, check)
