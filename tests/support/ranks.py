"""Running under a launcher, and checks that every rank passes or every rank fails."""

from __future__ import annotations

import os
import warnings

import pytest

try:
    from mpi4py import MPI

    SELF = MPI.COMM_SELF  # one rank alone: references of the whole array, no communication
except ImportError:  # pragma: no cover - the serial tests run without mpi4py too
    SELF = None

_RANK_VARS = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK")  # MPICH (hydra), Open MPI, PMIx launchers


def launcher_rank():
    """This process's rank from the launcher's environment, or None when not started by mpiexec."""
    for name in _RANK_VARS:
        v = os.environ.get(name, "")
        if v.isdigit():
            return int(v)
    return None


UNDER_MPIEXEC = launcher_rank() is not None


def all_ranks_ok(comm, check):
    """Run ``check()`` on every rank; fail on every rank if it failed on any."""
    error = None
    try:
        check()
    except AssertionError as exc:
        error = exc
    failed = comm.allgather(None if error is None else str(error))
    bad = [(r, m) for r, m in enumerate(failed) if m is not None]
    assert not bad, "\n".join(f"rank {r}: {m}" for r, m in bad)


def raises_everywhere(comm, exc_type, match, fn):
    """``fn()`` raises ``exc_type`` (matching ``match``) with the same message on every rank; the message."""
    with pytest.raises(exc_type, match=match) as info:
        fn()
    messages = comm.allgather(str(info.value))
    assert len(set(messages)) == 1, messages
    return messages[0]


def outcome_of(fn):
    """``("ok", fn())``, or ``("raised", "Type: message")``: what a call did, comparable across ranks."""
    try:
        return ("ok", fn())
    except Exception as exc:  # noqa: BLE001 - compared across ranks
        return ("raised", f"{type(exc).__name__}: {exc}")


def same_outcome(comm, fn, must_fail=None, what="", *, match=None):
    """``fn()``'s outcome, checked alike on every rank (the same exception and message, or success
    on all); ``must_fail``: whether it must raise; ``match``: a text the message must hold.  Warnings
    are silenced (a complex coefficient cast to a real accumulator, overflowing casts)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outcome = outcome_of(fn)
    seen = comm.allgather(outcome if outcome[0] == "raised" else ("ok",))

    def check():
        assert len(set(seen)) == 1, (what, seen)
        if must_fail is not None:
            assert (seen[0][0] == "raised") == must_fail, (what, seen[0])
        if match is not None:
            assert match in seen[0][1], (what, seen[0])
    all_ranks_ok(comm, check)
    return outcome
