"""A part passed by keyword alone, ``cumsum(x=x)`` and ``scan(x, op="max")``: taken on the common
route, without :func:`distscan.dist.arguments.by_keyword`'s general one (which cost ``cumsum(x=x)``
3 µs more than ``cumsum(x)`` on one rank: benchmarks/probe_keyword_calls.py), with the same result
and the same refusals on every rank, the ranks mixing both ways of passing it.

Runs serially and under ``mpiexec -n K python -m pytest --with-mpi``.
"""

import numpy as np
import pytest

import distscan
from distscan import api
from distscan.dist import arguments

from tests.support.ranks import all_ranks_ok, raises_everywhere

pytestmark = [pytest.mark.anyranks, pytest.mark.timeout(60)]

# name: (by keyword, by position); the same call both ways
KEYWORD_CALLS = {
    "cumsum(x=x)": (lambda x, comm: distscan.cumsum(x=x, comm=comm), lambda x, comm: distscan.cumsum(x, comm=comm)),
    "cummax(x=x), default comm": (lambda x, comm: distscan.cummax(x=x) if comm.size == 1 else distscan.cummax(
        x=x, comm=comm), lambda x, comm: distscan.cummax(x, comm=comm)),
    "nancumprod(x=x, reverse=True)": (lambda x, comm: distscan.nancumprod(x=x, reverse=True, comm=comm),
                                      lambda x, comm: distscan.nancumprod(x, reverse=True, comm=comm)),
    "scan(x, op='max')": (lambda x, comm: distscan.scan(x, op="max", comm=comm),
                          lambda x, comm: distscan.scan(x, "max", comm=comm)),
    "scan(x, op=np.minimum, exclusive=True)": (lambda x, comm: distscan.scan(x, op=np.minimum, exclusive=True, comm=comm),
                                               lambda x, comm: distscan.scan(x, np.minimum, exclusive=True, comm=comm)),
}


@pytest.mark.parametrize("name", sorted(KEYWORD_CALLS))
def test_a_part_alone_by_keyword_skips_the_general_route(comm, name, monkeypatch):
    """The part alone by keyword never reaches ``by_keyword`` (its cost is what the common route
    saves), and gives what the call by position gives."""
    keyword, positional = KEYWORD_CALLS[name]
    x = np.arange(6.0) - 2.0 * comm.rank

    def refused(*args, **kwargs):
        raise AssertionError("by_keyword called")

    want = positional(x, comm)
    monkeypatch.setattr(api, "by_keyword", refused)
    monkeypatch.setattr(arguments, "by_keyword", refused)  # (scan's general route calls it from parts_of)
    got = [keyword(x, comm) for _ in range(2)]  # the first call of its kind, and one that finds it
    all_ranks_ok(comm, lambda: [np.testing.assert_array_equal(g, want) for g in got])


@pytest.mark.parametrize("name", sorted(KEYWORD_CALLS))
def test_ranks_mixing_keyword_and_position_agree(comm, name):
    """Some ranks pass the part by keyword, the others by position: one call, the right result."""
    keyword, positional = KEYWORD_CALLS[name]
    x = np.arange(5.0) + comm.rank
    want = positional(x, comm)
    for shift in range(2):
        got = (keyword if (comm.rank + shift) % 2 else positional)(x, comm)
        all_ranks_ok(comm, lambda: np.testing.assert_array_equal(got, want))


# A mistake beside the part by keyword, on the last rank alone (the others make the valid call by
# keyword): the general route's message, raised on every rank
MISTAKES = {
    "cumsum(x, x=x)": (lambda x, comm: distscan.cumsum(x, x=x, comm=comm), "cumsum() got multiple values for "
                       "argument 'x'"),
    "cumsum(x=x, bogus=1)": (lambda x, comm: distscan.cumsum(x=x, bogus=1, comm=comm),
                             "cumsum() got unexpected keyword argument 'bogus'"),
    "cumsum(x=x) on a part given by position too": (lambda x, comm: distscan.cumsum(x, 0, x=x, comm=comm),
                                                   "cumsum() got multiple values for argument 'x'"),
    "scan(x, 'max', op='min')": (lambda x, comm: distscan.scan(x, "max", op="min", comm=comm),
                                 "scan() got multiple values for argument 'op'"),
    "scan(x, 'sum', op='sum')": (lambda x, comm: distscan.scan(x, "sum", op="sum", comm=comm),
                                 "scan() got multiple values for argument 'op'"),
    "scan(x, op='max', bogus=1)": (lambda x, comm: distscan.scan(x, op="max", bogus=1, comm=comm),
                                   "scan() got unexpected keyword argument 'bogus'"),
    "scan(op='max')": (lambda x, comm: distscan.scan(op="max", comm=comm),
                       "scan() missing 1 required positional argument: 'x'"),
    "cumsum(y=x)": (lambda x, comm: distscan.cumsum(y=x, comm=comm), "cumsum() got unexpected keyword argument 'y'"),
}


@pytest.mark.parametrize("name", sorted(MISTAKES))
def test_a_mistake_beside_a_keyword_part_is_refused_on_every_rank(comm, name):
    """The last rank's call has a mistake, the others' the part by keyword alone (the common route):
    every rank raises the general route's TypeError, named by the last rank's number, and the
    calls after it are right."""
    call, message = MISTAKES[name]
    valid = KEYWORD_CALLS["scan(x, op='max')" if name.startswith("scan") else "cumsum(x=x)"][0]
    x = np.arange(4.0) + comm.rank
    want = valid(x, comm)
    last = comm.size - 1
    msg = raises_everywhere(comm, TypeError, None, lambda: (call if comm.rank == last else valid)(x, comm))
    assert msg == ("" if comm.size == 1 else f"rank {last}: ") + message, msg
    again = valid(x, comm)
    all_ranks_ok(comm, lambda: np.testing.assert_array_equal(again, want))
