"""First calls from several threads at once, on the caches a first call fills.

Every thread starts behind a :class:`threading.Barrier`, the interpreter is asked to switch
threads every microsecond (``sys.setswitchinterval``; 5 ms by default), and the caches are
emptied between rounds and shrunk (``_kinds.MAX_PLANS``, ``cpu_states.MAX_LOOPS``) so that every
new entry evicts an old one: threads making their first calls collide inside the caches'
check, build, publish and evict steps.  Each thread has a communicator of its own (a ``Dup`` of
the test's: distributed under mpiexec, one rank alone serially), and two more share
``COMM_SELF`` (distscan makes no MPI call on one rank); threads never share a communicator of
several ranks (MPI's rule: collectives on one communicator from two threads at once are not
ordered).  Results are compared exactly with NumPy on the whole array (integers only).

Found here: two threads evicting at once from the call kinds, the plans or the state loops
popped the same oldest key (KeyError), or one read the dictionary while the other grew it
(RuntimeError: dictionary changed size during iteration).  Raised in ``Plans.get`` while a part
is resolved, every rank raised it (agreed in the exchange); raised in ``Kinds.remember`` or
``Kind.plan`` (outside the agreement) it would leave the other ranks waiting in the exchange
(by reading: not seen here).

Written for any rank count (serially and under ``mpiexec -n K python -m pytest --with-mpi``).
"""

from __future__ import annotations

import sys
import threading
import time
from contextlib import contextmanager

import numpy as np
import pytest

import distscan
from distscan import _kinds
from distscan.dist import nodes
from tests.support.ranks import all_ranks_ok
from tests.support.reference import recurrence_reference, reference_scan, segmented_reference

try:
    from mpi4py import MPI
except ImportError:  # pragma: no cover - the comm fixture skips then
    MPI = None

pytestmark = [pytest.mark.anyranks, pytest.mark.timeout(120)]

THREADS = 3    # threads on communicators of their own
SELF_THREADS = 2  # threads that share COMM_SELF
ROUNDS = 6     # caches emptied before each


@contextmanager
def switching_often():
    """Thread switches every microsecond (5 ms by default): collisions inside a cache's few steps."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def _threaded(comm, work, errors):
    """``work(t, c)`` on THREADS threads with a ``Dup`` of ``comm`` each and SELF_THREADS on
    COMM_SELF, all started behind one barrier; what they raise goes into ``errors``."""
    comms = [comm.Dup() for _ in range(THREADS)] + [MPI.COMM_SELF] * SELF_THREADS
    start = threading.Barrier(len(comms))

    def run(t):
        try:
            start.wait()
            work(t, comms[t])
        except Exception as exc:  # noqa: BLE001 - reported, with every rank's, by the test
            errors.append(f"thread {t}: {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=run, args=(t,)) for t in range(len(comms))]
    try:
        with switching_often():
            for th in threads:
                th.start()
            for th in threads:
                th.join()
    finally:
        for c in comms[:THREADS]:
            c.Free()


def _part(g, c):
    """This rank's rows of ``g`` on ``c``: uneven, some ranks' empty where ``g`` is short."""
    s, r = c.Get_size(), c.Get_rank()
    cuts = [len(g) * k * k // (s * s) for k in range(s + 1)]
    return slice(cuts[r], cuts[r + 1])


def _none(errors):
    assert not errors, f"{len(errors)} failures, the first: " + "\n".join(errors[:4])


def _skip_without_threads():
    if MPI.Query_thread() < MPI.THREAD_MULTIPLE:
        pytest.skip("MPI is not initialised with THREAD_MULTIPLE")


PLAIN_KINDS = [(op, dtype, exclusive) for op in ("sum", "prod", "max", "min", "bitwise_xor")
               for dtype in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32, np.uint64)
               for exclusive in (False, True)]


def test_plain_kinds_made_and_evicted_by_threads_at_once(comm, monkeypatch):
    """The call kinds and plans (``distscan._kinds``), filled from empty by every thread at once,
    three entries at most (each new kind or plan evicts one): two evictions at once raised KeyError
    on one rank, where the others went on into the exchange."""
    _skip_without_threads()
    monkeypatch.setattr(_kinds, "MAX_PLANS", 3)
    errors = []

    def work(t, c):
        for k in range(len(PLAIN_KINDS)):
            op, dtype, exclusive = PLAIN_KINDS[(k * 5 + 3 * t) % len(PLAIN_KINDS)]
            for rep in range(2):  # the second call of a kind takes the kind's lean route
                g = ((np.arange(11 + k % 5) * (k + rep + 3) + t) % 7 + 1).astype(dtype)
                part = _part(g, c)
                y = distscan.scan(g[part], op=op, exclusive=exclusive, comm=c)
                want = reference_scan(g, op, exclusive=exclusive)[part]
                if y.dtype != want.dtype or not np.array_equal(y, want):
                    errors.append(f"thread {t} {op} {np.dtype(dtype)} exclusive={exclusive}: {y} != {want}")

    for _ in range(ROUNDS):
        _kinds.KINDS.clear()
        _kinds.PLANS.clear()
        _threaded(comm, work, errors)
    all_ranks_ok(comm, lambda: _none(errors))


STATE_KINDS = ([("segmented", op, dtype, exclusive) for op in ("sum", "max", "min", "bitwise_xor")
                for dtype in (np.int8, np.int32, np.int64, np.uint16) for exclusive in (False, True)]
               + [("recurrence", None, dtype, segmented) for dtype in (np.int32, np.int64)
                  for segmented in (False, True)])


def test_state_loops_made_and_evicted_by_threads_at_once(comm, monkeypatch):
    """The CPU state loops (``backends.cpu_states.loops``: segmented scans, recurrences), made from
    empty by every thread at once, two at most (each new one evicts one; one rank asks for them
    on every call): two evictions at once raised KeyError."""
    _skip_without_threads()
    pytest.importorskip("numba")
    from distscan.backends import cpu_states
    monkeypatch.setattr(cpu_states, "MAX_LOOPS", 2)
    errors = []

    def work(t, c):
        for k in range(len(STATE_KINDS)):
            what, op, dtype, option = STATE_KINDS[(k * 7 + 5 * t) % len(STATE_KINDS)]
            n = 13 + k % 4
            g = ((np.arange(n) * (k + 3) + t) % 9 - (4 if np.dtype(dtype).kind == "i" else 0)).astype(dtype)
            flags = (np.arange(n) * (k + 1)) % 5 == 0
            part = _part(g, c)
            if what == "segmented":
                y = distscan.scan(g[part], op=op, exclusive=option, segments=flags[part], comm=c)
                want = segmented_reference(g, flags, op, exclusive=option)[part]
            else:
                a = ((np.arange(n) + k + t) % 3 - 1).astype(dtype)
                y = distscan.linear_recurrence(a[part], g[part], segments=flags[part] if option else None, comm=c)
                want = recurrence_reference(a, g, segments=flags if option else None)[part]
            if y.dtype != want.dtype or not np.array_equal(y, want):
                errors.append(f"thread {t} {what} {op} {np.dtype(dtype)} {option}: {y} != {want}")

    for _ in range(ROUNDS):
        cpu_states._LOOPS.clear()
        _kinds.KINDS.clear()
        _kinds.PLANS.clear()
        _threaded(comm, work, errors)
    all_ranks_ok(comm, lambda: _none(errors))


class _SlowKeys:
    """``mpi4py.MPI`` whose ``Comm.Create_keyval`` takes a millisecond (and lets other threads run
    meanwhile): the window between a thread's check for the key and its publication, which the
    interpreter's switches alone seldom hit."""

    def __init__(self, mpi):
        self._mpi = mpi

        class Comm:
            @staticmethod
            def Create_keyval(*args, **kwargs):
                time.sleep(1e-3)
                return mpi.Comm.Create_keyval(*args, **kwargs)

        self.Comm = Comm

    def __getattr__(self, name):
        return getattr(self._mpi, name)


def test_the_hierarchy_key_is_made_once_by_threads_at_once(comm, monkeypatch):
    """The attribute key under which communicators keep their node split
    (``dist.nodes._hierarchy_keyval``), made by every thread's first split at once (each on its
    own communicator): one key, under which every communicator finds its split.  Two keys (made
    without the lock of b3ee365) left a communicator's split under the lost one: its next call
    split it again, a collective the other ranks skipped.  Checked before any next call; the
    key's making is slowed down (:class:`_SlowKeys`) so that the threads' first splits meet in it."""
    _skip_without_threads()
    import mpi4py
    monkeypatch.setattr(mpi4py, "MPI", _SlowKeys(MPI))  # what `from mpi4py import MPI` gives in nodes
    for _ in range(ROUNDS):
        monkeypatch.setattr(nodes, "_keyval", None)
        comms = [comm.Dup() for _ in range(THREADS + SELF_THREADS)]
        start, errors = threading.Barrier(len(comms)), []

        def work(t):
            try:
                start.wait()
                nodes.get_hierarchy(comms[t], 1)
            except Exception as exc:  # noqa: BLE001
                errors.append(f"thread {t}: {type(exc).__name__}: {exc}")

        threads = [threading.Thread(target=work, args=(t,)) for t in range(len(comms))]
        with switching_often():
            for th in threads:
                th.start()
            for th in threads:
                th.join()
        lost = [t for t, c in enumerate(comms) if not (c.Get_attr(nodes._keyval) or {}).get(1)]
        dup = comms[0].Dup()  # a Dup splits on its own: it must not share its parent's node communicators
        inherited = [] if dup.Get_attr(nodes._keyval) is None else ["a Dup took its parent's split"]
        dup.Free()
        try:
            all_ranks_ok(comm, lambda: (_none(errors), _none(inherited),
                                        _none([f"thread {t}: its split is under another key" for t in lost])))
        finally:
            for c in comms:
                c.Free()
