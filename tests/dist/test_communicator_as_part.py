"""A communicator passed where a public function takes a part (``cumsum(sub, x)``, ``cumsum(sub)``,
``linear_recurrence(a, sub)``, ``reduce(sub)``) or as a positional argument past its parts
(``cumsum(x, sub)``), without ``comm=``: refused with one TypeError on every rank of THAT
communicator, which says to pass it as ``comm=``.  Refused over ``COMM_WORLD`` (the call's default), it
hung the ranks of ``sub`` while the others never called (found in review, s41).

Runs serially and under ``mpiexec -n K python -m pytest --with-mpi``: the ranks are split by parity,
the even ones make the mistake together, the odd ones go on with calls of their own meanwhile.
"""

import re

import numpy as np
import pytest

import distscan

from tests.support.ranks import all_ranks_ok, outcome_of, raises_everywhere

pytestmark = [pytest.mark.anyranks, pytest.mark.timeout(60)]

# name: (call(x, sub), the name of the function the message names, where the communicator is)
CALLS = {
    "cumsum(sub, x)": (lambda x, sub: distscan.cumsum(sub, x), "cumsum", "its part 'x'"),
    "cumsum(sub)": (lambda x, sub: distscan.cumsum(sub), "cumsum", "its part 'x'"),
    "cumsum(x=sub)": (lambda x, sub: distscan.cumsum(x=sub), "cumsum", "its part 'x'"),
    "cumsum(sub, reverse=True)": (lambda x, sub: distscan.cumsum(sub, reverse=True), "cumsum", "its part 'x'"),
    "cumsum(x, sub)": (lambda x, sub: distscan.cumsum(x, sub), "cumsum", "an extra positional argument"),
    "cumprod(sub)": (lambda x, sub: distscan.cumprod(sub), "cumprod", "its part 'x'"),
    "cummax(sub, x)": (lambda x, sub: distscan.cummax(sub, x), "cummax", "its part 'x'"),
    "cummin(sub)": (lambda x, sub: distscan.cummin(sub), "cummin", "its part 'x'"),
    "nancumsum(sub)": (lambda x, sub: distscan.nancumsum(sub), "nancumsum", "its part 'x'"),
    "nancumprod(sub, x)": (lambda x, sub: distscan.nancumprod(sub, x), "nancumprod", "its part 'x'"),
    "scan(sub)": (lambda x, sub: distscan.scan(sub), "scan", "its part 'x'"),
    "scan(sub, x)": (lambda x, sub: distscan.scan(sub, x), "scan", "its part 'x'"),
    "scan(sub, 'max')": (lambda x, sub: distscan.scan(sub, "max"), "scan", "its part 'x'"),
    "scan(sub, op='max')": (lambda x, sub: distscan.scan(sub, op="max"), "scan", "its part 'x'"),
    "scan(x, 'sum', sub)": (lambda x, sub: distscan.scan(x, "sum", sub), "scan", "an extra positional argument"),
    "exclusive_scan(sub)": (lambda x, sub: distscan.exclusive_scan(sub), "exclusive_scan", "its part 'x'"),
    "exclusive_scan(sub, x)": (lambda x, sub: distscan.exclusive_scan(sub, x), "exclusive_scan", "its part 'x'"),
    "exclusive_scan(x, 'sum', sub)": (lambda x, sub: distscan.exclusive_scan(x, "sum", sub), "exclusive_scan",
                                      "an extra positional argument"),
    "cumulative_sum(sub)": (lambda x, sub: distscan.cumulative_sum(sub), "cumulative_sum", "its part 'x'"),
    "cumulative_prod(sub, x)": (lambda x, sub: distscan.cumulative_prod(sub, x), "cumulative_prod", "its part 'x'"),
    "cumulative_sum(x, sub)": (lambda x, sub: distscan.cumulative_sum(x, sub), "cumulative_sum",
                               "an extra positional argument"),
    "linear_recurrence(sub, a, b)": (lambda x, sub: distscan.linear_recurrence(sub, 0.5, x), "linear_recurrence",
                                     "its part 'a'"),
    "linear_recurrence(sub, b)": (lambda x, sub: distscan.linear_recurrence(sub, x), "linear_recurrence",
                                  "its part 'a'"),
    "linear_recurrence(a, sub)": (lambda x, sub: distscan.linear_recurrence(0.5, sub), "linear_recurrence",
                                  "its part 'b'"),
    "linear_recurrence(a, b=sub)": (lambda x, sub: distscan.linear_recurrence(0.5, b=sub), "linear_recurrence",
                                    "its part 'b'"),
    "linear_recurrence(a, b, sub)": (lambda x, sub: distscan.linear_recurrence(0.5, x, sub), "linear_recurrence",
                                     "an extra positional argument"),
    "reduce(sub)": (lambda x, sub: distscan.reduce(sub), "reduce", "its part 'x'"),
    "reduce(sub, x)": (lambda x, sub: distscan.reduce(sub, x), "reduce", "its part 'x'"),
    "reduce(x, 'sum', sub)": (lambda x, sub: distscan.reduce(x, "sum", sub), "reduce", "an extra positional argument"),
}


@pytest.mark.manyranks
@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_communicator_as_a_part_is_refused_over_it(comm, name):
    """The even ranks pass their communicator ``sub`` in a part's place (or past the parts), without
    ``comm=``: every one of them raises the same TypeError, which says to pass it as ``comm=``, and
    ``sub`` still works after; the odd ranks, which never make the call, scan over their own ``sub``
    meanwhile (no rank waits for another)."""
    call, function, where = CALLS[name]
    inside = comm.rank % 2 == 0
    sub = comm.Split(comm.rank % 2, comm.rank)
    x = np.arange(4.0) + comm.rank
    try:
        if inside:
            msg = raises_everywhere(sub, TypeError, "pass it as comm=", lambda: call(x, sub))
            assert msg == f"{function}() got a communicator as {where}: pass it as comm=", msg
        again = distscan.cumsum(x, comm=sub)  # sub still works, on both sides of the split
    finally:
        sub.Free()
    before = np.concatenate([np.arange(4.0) + r for r in range(comm.rank % 2, comm.rank + 1, 2)])
    all_ranks_ok(comm, lambda: np.testing.assert_array_equal(again, np.cumsum(before)[-4:]))


# With comm= given: the call and what it is refused with today
WITH_COMM = {
    "cumsum(sub, x, comm=comm)": (lambda x, sub, comm: distscan.cumsum(sub, x, comm=comm),
                                  "cumsum() takes 1 positional argument but 2 were given"),
    "cumsum(sub, comm=comm)": (lambda x, sub, comm: distscan.cumsum(sub, comm=comm), "input dtype object is not"),
    "cumsum(x, sub, comm=comm)": (lambda x, sub, comm: distscan.cumsum(x, sub, comm=comm),
                                  "cumsum() takes 1 positional argument but 2 were given"),
    "linear_recurrence(a, sub, comm=comm)": (lambda x, sub, comm: distscan.linear_recurrence(0.5, sub, comm=comm),
                                             "input dtype object is not"),
    "reduce(sub, comm=comm)": (lambda x, sub, comm: distscan.reduce(sub, comm=comm), "input dtype object is not"),
}


@pytest.mark.parametrize("name", sorted(WITH_COMM))
def test_with_comm_given_a_communicator_as_a_part_is_refused_over_comm(comm, name):
    """With ``comm=`` given the call is ``comm``'s, as before: a communicator among its parts is input
    it cannot scan (or an argument too many), refused over ``comm`` on every rank, and ``comm`` still
    works after."""
    call, message = WITH_COMM[name]
    x = np.arange(4.0)
    other = comm.Dup()
    try:
        msg = raises_everywhere(comm, TypeError, re.escape(message), lambda: call(x, other, comm))
        assert "pass it as comm=" not in msg, msg
    finally:
        other.Free()
    all_ranks_ok(comm, lambda: np.testing.assert_array_equal(distscan.cumsum(x, comm=comm)[-1], 6.0 * (comm.rank + 1)))


@pytest.mark.parametrize("name", ["cumsum(sub)", "cumsum(x, sub)", "scan(sub, x)", "linear_recurrence(a, sub)"])
def test_a_communicator_no_collective_can_run_over_is_refused_where_it_is_passed(comm, name):
    """``COMM_NULL`` (what ``Split(MPI.UNDEFINED)`` gives) and an intercommunicator in a part's place:
    no collective can agree over them (COMM_NULL's size raised MPI's own error; over an
    intercommunicator the agreement's Allreduce raised mpi4py's on the ranks of its larger group and
    the TypeError on the others: found 2026-11-27), so each rank that passes one raises the same
    TypeError at once, and the next call goes on."""
    from mpi4py import MPI

    call = CALLS[name][0]
    x = np.arange(5.0)
    with pytest.raises(TypeError, match="pass it as comm="):
        call(x, MPI.COMM_NULL)
    if comm.size >= 2:
        last = comm.rank == comm.size - 1
        local = comm.Split(0 if last else 1)
        inter = local.Create_intercomm(0, comm, 0 if last else comm.size - 1)
        try:
            with pytest.raises(TypeError, match="pass it as comm="):
                call(x, inter)
        finally:
            inter.Free()
            local.Free()
    all_ranks_ok(comm, lambda: np.testing.assert_allclose(distscan.cumsum(x, comm=comm)[-1:], 10.0 + 10.0 * comm.rank))


# A part passed by position and by keyword, one of the two a communicator, without comm=: Python's own
# first error (as by_keyword gives it where neither is one)
TWICE = {
    "cumsum(x, x=sub)": (lambda x, sub: distscan.cumsum(x, x=sub), "cumsum() got multiple values for argument 'x'"),
    "cumsum(sub, x=x)": (lambda x, sub: distscan.cumsum(sub, x=x), "cumsum() got multiple values for argument 'x'"),
    "nancumprod(x, x=sub, reverse=True)": (lambda x, sub: distscan.nancumprod(x, x=sub, reverse=True),
                                           "nancumprod() got multiple values for argument 'x'"),
    "scan(x, x=sub)": (lambda x, sub: distscan.scan(x, x=sub), "scan() got multiple values for argument 'x'"),
    "scan(sub, 'max', x=x)": (lambda x, sub: distscan.scan(sub, "max", x=x),
                              "scan() got multiple values for argument 'x'"),
    "exclusive_scan(x, x=sub)": (lambda x, sub: distscan.exclusive_scan(x, x=sub),
                                 "exclusive_scan() got multiple values for argument 'x'"),
    "reduce(sub, x=x)": (lambda x, sub: distscan.reduce(sub, x=x), "reduce() got multiple values for argument 'x'"),
    "linear_recurrence(a, b, b=sub)": (lambda x, sub: distscan.linear_recurrence(0.5, x, b=sub),
                                       "linear_recurrence() got multiple values for argument 'b'"),
    "linear_recurrence(sub, b, a=a)": (lambda x, sub: distscan.linear_recurrence(sub, x, a=0.5),
                                       "linear_recurrence() got multiple values for argument 'a'"),
}


@pytest.mark.manyranks
@pytest.mark.parametrize("name", sorted(TWICE))
def test_a_part_passed_both_ways_a_communicator_one_of_them_is_refused_as_python_would(comm, name):
    """``cumsum(x, x=sub)``, ``cumsum(sub, x=x)``: Python's first error is "got multiple values for
    argument 'x'" (it said "got a communicator as its part 'x'", 2026-11-27), raised on every rank of
    ``sub`` (the even ranks, which all make the call: the same message on each) while the odd ranks
    scan over their own ``sub``; with ``COMM_NULL`` in its place, on each rank at once.  ``sub``
    still works after."""
    from mpi4py import MPI

    call, message = TWICE[name]
    inside = comm.rank % 2 == 0
    sub = comm.Split(comm.rank % 2, comm.rank)
    x = np.arange(4.0) + comm.rank
    try:  # (outcomes checked at the end, on every rank together: a wrong one fails the test, hangs none)
        seen = outcome_of(lambda: call(x, sub)) if inside else None
        alone = outcome_of(lambda: call(x, MPI.COMM_NULL))
        again = distscan.cumsum(x, comm=sub)
    finally:
        sub.Free()
    want = ("raised", f"TypeError: {message}")
    before = np.concatenate([np.arange(4.0) + r for r in range(comm.rank % 2, comm.rank + 1, 2)])

    def check():
        assert seen in (None, want), seen
        assert alone == want, alone
        np.testing.assert_array_equal(again, np.cumsum(before)[-4:])
    all_ranks_ok(comm, check)
