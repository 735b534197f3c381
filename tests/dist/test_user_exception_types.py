"""A declared operator's combine that raises an exception of the user's own class (defined outside the
modules every rank may import to rebuild exceptions: ``distscan.dist.agree._TRUSTED_MODULES``) on some
ranks only, or on every rank alike.

Found 2026-11-27 (s40): the failing rank raised its own class (``MyError: rank 1: ...``) while the
others raised ``DistScanError`` with the same message, so no one ``except`` clause but ``Exception``
caught the call's failure on every rank.  The s40 fix kept a user's class only where every rank raised
it itself, which a scan across ranks never meets (its last rank runs the combine only after the
exchange): ``except Boom`` caught the call at one rank and never at two (s42).

docs/api.md: one class on every rank, the failing rank's where every rank can build it (a class of a
module every rank has imported, the user's own or ``__main__``, whose ``__init__`` takes the message),
else ``DistScanError``; the failing rank's own exception is the ``__cause__``.

Runs serially and under ``mpiexec -n K python -m pytest --with-mpi``.
"""

from __future__ import annotations

import numpy as np
import pytest

import distscan
from distscan import DistScanError

from tests.support.ranks import all_ranks_ok

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


def _outcome(fn):
    """What ``fn()`` raised on this rank: (class, message, the cause's class), or None."""
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - what each rank raised is the test
        return type(exc), str(exc), type(exc.__cause__)
    return None


def _check(ok, got):
    assert ok, got


def _same_everywhere(comm, got):
    """``got`` (an :func:`_outcome`), the same class and message on every rank."""
    outcomes = comm.allgather(None if got is None else (f"{got[0].__module__}:{got[0].__qualname__}", got[1]))
    assert len(set(outcomes)) == 1, outcomes
    assert got is not None, outcomes


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
    got = _outcome(lambda: getattr(distscan, call)(part, op, comm=comm))
    _same_everywhere(comm, got)
    # every rank imported this module: each builds the user's class (s40 gave DistScanError on
    # every rank where some rank had not raised it itself)
    assert got[0] is exc_type, got
    if who == "every rank" or size == 1:
        assert got[1] == "refused", got
    else:
        assert got[1] == f"rank {size - 1}: refused", got
        if fails:
            assert got[2] is exc_type  # the original, as the cause
    # the next calls are right
    np.testing.assert_array_equal(distscan.scan(np.ones(2, np.int64), op, comm=comm),
                                  [2 * rank + 1, 2 * rank + 2])


class Boom(Exception):
    """The user's class of /tmp/rt42/repro_custom_exc.py, defined in the user's module."""


def _negative_refused(a, b):
    if np.any(np.asarray(b) < 0):
        raise Boom("negative")
    return np.add(a, b)


NEGATIVE_REFUSED = distscan.Operator("negative refused", _negative_refused, identity=0.0, kinds="f")


@pytest.mark.mpi(min_size=1)
@pytest.mark.parametrize("call", ["scan", "reduce"])
@pytest.mark.parametrize("who", ["rank 0", "every rank"])
def test_except_the_users_class_catches_the_call_on_every_rank(who, call, comm):
    """``except Boom`` catches the call on every rank, at any rank count, in every call of a row; a
    scan whose every rank holds refused data fails before the exchange on every rank but the last
    (which runs the combine only after it), so its message names rank 0 and the others before the last."""
    size, rank = comm.Get_size(), comm.Get_rank()
    x = np.arange(4.0) - (10 if who == "every rank" or rank == 0 else 0)
    for _ in range(3):
        try:
            getattr(distscan, call)(x, NEGATIVE_REFUSED, comm=comm)
            got = None
        except Boom as exc:
            got = Boom, str(exc), type(exc.__cause__)
        except Exception as exc:  # noqa: BLE001 - the class is the test
            got = type(exc), str(exc), type(exc.__cause__)
        _same_everywhere(comm, got)
        assert got[0] is Boom, got
        if size == 1 or (who == "every rank" and call == "reduce"):
            assert got[1] == "negative", got  # every rank failed alike: no rank named
        elif who == "rank 0" or size == 2:
            assert got[1] == "rank 0: negative", got
        else:
            others = size - 2
            assert got[1] == f"rank 0 (and {others} other rank{'s' if others > 1 else ''}): negative", got
        # the ranks that raised Boom themselves keep it as the cause (one rank: Boom itself)
        raised = {0} if who == "rank 0" else set(range(size if call == "reduce" else size - 1))
        cause = Boom if rank in raised and size > 1 else type(None)
        all_ranks_ok(comm, lambda: _check(got[2] is cause, got))
    ones = np.ones(2)
    np.testing.assert_array_equal(getattr(distscan, call)(ones, NEGATIVE_REFUSED, comm=comm),
                                  [2 * rank + 1, 2 * rank + 2] if call == "scan" else 2.0 * size)


class Coded(Exception):
    """A user's class whose ``__init__`` takes other arguments: no rank builds it from a message."""

    def __init__(self, code, where):
        super().__init__(f"code {code} at {where}")
        self.code, self.where = code, where


def _coded(a, b):
    if np.any(np.asarray(b) < 0):
        raise Coded(7, "combine")
    return np.add(a, b)


CODED = distscan.Operator("coded", _coded, identity=0.0, kinds="f")


@pytest.mark.mpi(min_size=1)
@pytest.mark.parametrize("call", ["scan", "reduce"])
@pytest.mark.parametrize("who", ["rank 0", "every rank"])
def test_a_users_class_no_rank_can_build_is_distscan_error_everywhere(who, call, comm):
    """At several ranks every rank raises DistScanError with the message (one rank: its own Coded,
    raised as it is), in every call of a row, and the calls after it are right."""
    size, rank = comm.Get_size(), comm.Get_rank()
    x = np.arange(4.0) - (10 if who == "every rank" or rank == 0 else 0)
    for _ in range(3):
        got = _outcome(lambda: getattr(distscan, call)(x, CODED, comm=comm))
        _same_everywhere(comm, got)
        assert got[0] is (Coded if size == 1 else DistScanError), got
        assert got[1].endswith("code 7 at combine"), got
        all_ranks_ok(comm, lambda: _check(got[2] is Coded or rank != 0 or size == 1, got))
    np.testing.assert_array_equal(distscan.scan(np.ones(2), CODED, comm=comm), [2 * rank + 1, 2 * rank + 2])


_ZERO_ONLY = {"by name": False}  # the test's parameter, alike on every rank (the operator reads it)


def _made_where_refused(a, b):
    """A sum that refuses negative items with a class it makes there (``type()``): only the ranks
    whose data holds them define it; "by name", as a global of this module too (not read here: the
    operator's definition, compared across ranks, stays the same on every rank)."""
    if np.any(np.asarray(b) < 0):
        cls = type("OnRankZeroOnly", (Exception,), {"__module__": __name__, "__qualname__": "OnRankZeroOnly"})
        if _ZERO_ONLY["by name"]:
            globals()["OnRankZeroOnly"] = cls
        raise cls("refused here")
    return np.add(a, b)


ZERO_ONLY = distscan.Operator("made where refused", _made_where_refused, identity=0.0, kinds="f")


@pytest.mark.mpi(min_size=1)
@pytest.mark.parametrize("found", ["by name", "not by name"])
def test_a_class_defined_on_some_ranks_only_is_distscan_error_everywhere(found, comm, monkeypatch):
    """A class made on rank 0 alone (its combine meets rank 0's negative items only), raised there:
    rank 0 builds it (its own error's class; "by name" a global of this module there too), the
    others cannot, so every rank raises DistScanError; the agreement on it is one more collective of
    every rank, never a hang (pytest-timeout), in every call of a row."""
    size, rank = comm.Get_size(), comm.Get_rank()
    monkeypatch.setitem(_ZERO_ONLY, "by name", found == "by name")
    x = np.arange(4.0) - (10 if rank == 0 else 0)
    try:
        for _ in range(3):
            got = _outcome(lambda: distscan.scan(x, ZERO_ONLY, comm=comm))
            _same_everywhere(comm, got)
            if size == 1:
                assert got[0].__name__ == "OnRankZeroOnly" and got[1] == "refused here", got
            else:
                assert got[0] is DistScanError and got[1] == "rank 0: refused here", got
            all_ranks_ok(comm, lambda: _check((found == "by name") == ("OnRankZeroOnly" in globals()) or rank != 0,
                                              "rank 0's global"))
            all_ranks_ok(comm, lambda: _check(rank == 0 or "OnRankZeroOnly" not in globals(), "another's global"))
        np.testing.assert_array_equal(distscan.scan(np.ones(2), ZERO_ONLY, comm=comm), [2 * rank + 1, 2 * rank + 2])
    finally:
        globals().pop("OnRankZeroOnly", None)
