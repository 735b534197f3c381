"""A ``comm=`` no collective can run over: ``COMM_NULL`` (what ``Split(MPI.UNDEFINED)`` gives a rank
left out), a freed communicator, an intercommunicator, something that is not a communicator.  Each
raised a raw error of its own on the rank (MPI's "Invalid communicator" from ``Get_size``, an
AttributeError for ``comm=5``; over an intercommunicator mpi4py's "Invalid buffer pointer" from the
agreement's Allreduce, or with one rank a side the call scanned that rank alone): now one clear
error, on the rank that passes it, at once (it can share no collective), and the next call goes on.
The same for ``COMM_NULL`` as the operator (``scan(x, MPI.COMM_NULL)``) and under a misspelt keyword
(``cumsum(x, communicator=MPI.COMM_NULL)``), which keep their own messages; and ``bind_gpu(MPI.COMM_NULL)``.

Runs serially and under ``mpiexec -n K python -m pytest --with-mpi``: the ranks are split by parity,
the even ones make the mistake, the odd ones make calls of their own meanwhile.
"""

import numpy as np
import pytest

import distscan

from tests.support.ranks import all_ranks_ok, outcome_of

pytestmark = [pytest.mark.anyranks, pytest.mark.timeout(60)]

CALLS = {
    "cumsum": lambda x, c: distscan.cumsum(x, comm=c),
    "cumsum reverse segments": lambda x, c: distscan.cumsum(x, comm=c, reverse=True, segments=x > 2),
    "scan max exclusive": lambda x, c: distscan.scan(x, "max", exclusive=True, comm=c),
    "exclusive_scan": lambda x, c: distscan.exclusive_scan(x, comm=c),
    "reduce": lambda x, c: distscan.reduce(x, comm=c),
    "cumulative_sum": lambda x, c: distscan.cumulative_sum(x, comm=c, include_initial=True),
    "linear_recurrence": lambda x, c: distscan.linear_recurrence(0.5, x, comm=c),
    "cumsum of a list": lambda x, c: distscan.cumsum(list(x), comm=c),
    "cumsum axis 1": lambda x, c: distscan.cumsum(x.reshape(1, -1), axis=1, comm=c),
}
NULL = "ValueError: comm is MPI.COMM_NULL (or a freed communicator): this rank is in no communicator"
INTER = "TypeError: comm is an intercommunicator: distscan's collectives run over the ranks of one intracommunicator"


def _unusable(comm):
    """(label, communicator or value, the start of the message) for this rank; the freed one and
    the intercommunicator are made collectively (every rank takes part)."""
    from mpi4py import MPI

    freed = comm.Dup()
    freed.Free()
    cases = [("COMM_NULL", MPI.COMM_NULL, NULL), ("freed", freed, NULL),
             ("5", 5, "TypeError: comm must be an mpi4py communicator, got int"),
             ("a name", "world", "TypeError: comm must be an mpi4py communicator, got str")]
    made = []
    if comm.size >= 2:
        last = comm.rank == comm.size - 1
        local = comm.Split(0 if last else 1)
        inter = local.Create_intercomm(0, comm, 0 if last else comm.size - 1)
        cases.append(("intercommunicator", inter, INTER))
        made = [inter, local]
    return cases, made


@pytest.mark.manyranks
@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_comm_no_collective_can_run_over_is_refused_on_the_rank_at_once(comm, name):
    call = CALLS[name]
    cases, made = _unusable(comm)
    x = np.arange(4.0) + comm.rank
    seen = {}
    try:
        if comm.rank % 2 == 0:  # (the odd ranks call over their own sub meanwhile: nothing waits)
            seen = {label: outcome_of(lambda c=c: call(x, c)) for label, c, _ in cases}
        sub = comm.Split(comm.rank % 2, comm.rank)
        try:
            again = distscan.cumsum(x, comm=sub)
        finally:
            sub.Free()
    finally:
        for c in made:
            c.Free()
    before = np.concatenate([np.arange(4.0) + r for r in range(comm.rank % 2, comm.rank + 1, 2)])

    def check():
        for label, _, message in cases:
            if seen:
                kind, text = seen[label]
                assert kind == "raised" and text.startswith(message), (label, seen[label])
        np.testing.assert_array_equal(again, np.cumsum(before)[-4:])
    all_ranks_ok(comm, check)


def test_comm_null_as_the_operator_or_under_a_misspelt_keyword_keeps_its_own_message(comm):
    """``scan(x, MPI.COMM_NULL)`` is the mistake of ``cumsum(x, sub)`` one place on, and
    ``cumsum(x, communicator=MPI.COMM_NULL)`` a misspelt ``comm=``: their messages say so (each
    raised MPI's "Invalid communicator" before), on the rank at once."""
    from mpi4py import MPI

    x = np.arange(4.0)
    with pytest.raises(TypeError, match=r"^scan\(\) got a communicator as its operator: pass it as comm=$"):
        distscan.scan(x, MPI.COMM_NULL)
    with pytest.raises(TypeError, match=r"^reduce\(\) got a communicator as its operator"):
        distscan.reduce(x, MPI.COMM_NULL)
    with pytest.raises(TypeError, match=r"^cumsum\(\) got unexpected keyword argument 'communicator'$"):
        distscan.cumsum(x, communicator=MPI.COMM_NULL)
    with pytest.raises(TypeError, match=r"^exclusive_scan\(\) got unexpected keyword argument 'communicator'$"):
        distscan.exclusive_scan(x, communicator=MPI.COMM_NULL)
    with pytest.raises(ValueError, match=r"^comm is MPI.COMM_NULL"):  # (before any GPU is looked for)
        distscan.bind_gpu(MPI.COMM_NULL)
    all_ranks_ok(comm, lambda: np.testing.assert_array_equal(distscan.cumsum(x, comm=comm)[-1:],
                                                             [6.0 * (comm.rank + 1)]))


def test_a_communicator_freed_through_another_handle_is_refused_as_freed(comm):
    """A copy of a communicator's handle (``MPI.Intracomm(c)``) outlives ``c.Free()``: it is not
    ``COMM_NULL``, and MPI's ``Is_inter`` raises "Invalid communicator" on it.  As ``comm=`` it was
    called an intercommunicator, and in a part's place or past the parts MPI's raw error came out
    (red team, s43): now the freed communicator's message, and the part's own, on the rank at once."""
    from mpi4py import MPI

    x = np.arange(4.0)
    freed = comm.Dup()
    handle = MPI.Intracomm(freed)
    freed.Free()
    assert handle != MPI.COMM_NULL
    seen = {
        "comm=": outcome_of(lambda: distscan.cumsum(x, comm=handle)),
        "bind_gpu": outcome_of(lambda: distscan.bind_gpu(handle)),
        "part": outcome_of(lambda: distscan.cumsum(handle)),
        "extra": outcome_of(lambda: distscan.cumsum(x, handle)),
        "operator": outcome_of(lambda: distscan.scan(x, handle)),
    }
    again = distscan.cumsum(x, comm=comm)

    def check():
        assert seen["comm="] == ("raised", NULL + " the call's collectives could run over"), seen["comm="]
        assert seen["bind_gpu"][1].startswith(NULL), seen["bind_gpu"]
        assert seen["part"] == ("raised", "TypeError: cumsum() got a communicator as its part 'x': pass it as comm="), seen
        assert seen["extra"] == ("raised", "TypeError: cumsum() got a communicator as an extra positional argument: "
                                           "pass it as comm="), seen
        assert seen["operator"] == ("raised", "TypeError: scan() got a communicator as its operator: pass it as comm="), seen
        np.testing.assert_array_equal(again[-1:], [6.0 * (comm.rank + 1)])
    all_ranks_ok(comm, check)
