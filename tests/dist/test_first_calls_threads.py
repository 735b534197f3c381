"""First calls from several threads at once, on the caches a first call fills.

Every thread starts behind a :class:`threading.Barrier` and gives up the GIL before each line
and after each built-in call of the functions that fill and evict the caches (:func:`interleaved`:
a trace and a profile hook, so that another thread runs between a cache's check, insert and
eviction, however busy the machine); the caches are emptied between rounds and shrunk
(``_kinds.MAX_PLANS``, ``cpu_states.MAX_LOOPS``) so that every new entry evicts an old one.  Each
thread has a communicator of its own (a ``Dup`` of the test's: distributed under mpiexec, one rank
alone serially), and two more share ``COMM_SELF`` (distscan makes no MPI call on one rank);
threads never share a communicator of several ranks (MPI's rule: collectives on one communicator
from two threads at once are not ordered).  Results are compared exactly with NumPy on the whole
array (integers only).

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
ROUNDS = 2     # caches emptied before each


# The functions that fill and evict the caches under test (and their earlier forms: Plans.get,
# Kind.plan and Kinds.remember evicted inline).
CACHE_STEPS = {"_publish", "get", "plan", "remember", "loops", "_hierarchy_keyval"}


@contextmanager
def interleaved(*modules):
    """Threads started inside give up the GIL (``time.sleep(0)``) before every line of
    :data:`CACHE_STEPS` in ``modules`` and after every built-in call they make (a trace and a
    profile hook), and the interpreter is asked to switch every microsecond (5 ms by default):
    another thread runs between a cache's check, build, insert and eviction steps, however busy
    the machine (where the interpreter's own switches come every few milliseconds, they seldom
    land between two of those steps)."""
    files = {m.__file__ for m in modules}

    def ours(code):
        return code.co_name in CACHE_STEPS and code.co_filename in files

    def each_line(frame, event, arg):
        if event == "line":
            time.sleep(0)
        return each_line

    def trace(frame, event, arg):
        return each_line if ours(frame.f_code) else None

    def profile(frame, event, arg):
        if event == "c_return" and ours(frame.f_code):
            time.sleep(0)

    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    threading.settrace(trace)
    threading.setprofile(profile)
    try:
        yield
    finally:
        threading.setprofile(None)
        threading.settrace(None)
        sys.setswitchinterval(before)


def _together(comms, work, errors, modules):
    """``work(t, comms[t])`` on a thread each, all started behind one barrier and
    :func:`interleaved` in ``modules``; what they raise goes into ``errors``."""
    start = threading.Barrier(len(comms))

    def run(t):
        try:
            start.wait()
            work(t, comms[t])
        except Exception as exc:  # noqa: BLE001 - reported, with every rank's, by the test
            errors.append(f"thread {t}: {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=run, args=(t,)) for t in range(len(comms))]
    with interleaved(*modules):
        for th in threads:
            th.start()
        for th in threads:
            th.join()


def _threaded(comm, work, errors, modules):
    """:func:`_together` on THREADS threads with a ``Dup`` of ``comm`` each and SELF_THREADS on
    COMM_SELF."""
    comms = [comm.Dup() for _ in range(THREADS)] + [MPI.COMM_SELF] * SELF_THREADS
    try:
        _together(comms, work, errors, modules)
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
        for k in range(len(PLAIN_KINDS) // 2):  # half of them each, from a place of its own
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
        _threaded(comm, work, errors, [_kinds])
    all_ranks_ok(comm, lambda: _none(errors))


def test_one_kinds_plans_for_many_communicators_from_threads_at_once():
    """``Kind.plan`` (a call kind's plans by communicator, 8 kept), from every thread at once, each
    going round one-rank communicators of its own (more of them in all than a kind keeps: every
    call evicts): each gives the plan of the communicator asked for.  The API reaches it on
    several ranks only (one rank's calls share one plan), where threads evicting at once raised
    KeyError outside the agreement."""
    x = np.arange(5, dtype=np.int32)
    for _ in range(ROUNDS):
        _kinds.KINDS.clear()
        _kinds.PLANS.clear()
        for _ in range(2):  # the kind is made
            np.testing.assert_array_equal(distscan.cumsum(x, comm=MPI.COMM_SELF), np.cumsum(x))
        kinds = [k for k in _kinds.KINDS._kinds.values() if k.types.input == np.int32]
        assert len(kinds) == 1, f"{len(kinds)} kinds made by one kind of call"
        comms = [[MPI.COMM_SELF.Dup() for _ in range(3)] for _ in range(THREADS + SELF_THREADS)]
        errors = []

        def work(t, mine):
            for k in range(30):
                c = mine[k % len(mine)]
                if kinds[0].plan(c).comm is not c:
                    errors.append(f"thread {t}: the plan of another communicator")

        _together(comms, work, errors, [_kinds])
        for c in sum(comms, []):
            c.Free()
        _none(errors)


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
        for k in range(len(STATE_KINDS) // 2):
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
        _threaded(comm, work, errors, [cpu_states])
    all_ranks_ok(comm, lambda: _none(errors))


def test_the_hierarchy_key_is_made_once_by_threads_at_once(comm, monkeypatch):
    """The attribute key under which communicators keep their node split
    (``dist.nodes._hierarchy_keyval``), made by every thread's first split at once (each on its
    own communicator): one key, under which every communicator finds its split.  Two keys (made
    without the lock of b3ee365) left a communicator's split under the lost one: its next call
    split it again, a collective the other ranks skipped.  Checked before any next call."""
    _skip_without_threads()
    for _ in range(5 * ROUNDS):
        monkeypatch.setattr(nodes, "_keyval", None)
        comms = [comm.Dup() for _ in range(THREADS + SELF_THREADS)]
        errors = []
        _together(comms, lambda t, c: nodes.get_hierarchy(c, 1), errors, [nodes])
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
