"""Declared operators whose combine reads values that change between calls: a global, a variable
it closes over, a default, a module's attribute, a small global array changed in place, a global
array too large to digest (its operator runs the NumPy path), a helper's global, a callable
object's attribute.  Each call must compute with the values of that call everywhere (the compiled
loop of each part, the carries between ranks, the total of ``reduce``): the sequential scan with
the new value, at any rank count; ranks that hold different values in one call are refused on
every rank with one message, never a hang or a mix (docs/operators.md, "Values the combine
reads").

Defects found when this file was written, each mended, its test here:

* numba compiled the globals and closure values of a combine into its loop as constants at the
  first call, while the carries between ranks were combined by the Python combine with the values
  of each call: a global changed between two calls kept its old value on one rank (the loop) and
  gave a mix of the old and the new at 3 ranks (the third rank's loop seeded by the first two
  ranks' carries combined with the new one), silently;
* the ranks compared a declared operator's definition as the plan of its first call held it, and
  described a combine by its code and closure, not the globals it reads, and a callable object by
  its type alone: ranks holding different globals, or callable objects of one class with other
  attributes, mixed their results silently.

Written for any rank count (serially and under mpiexec, tests/run.sh).
"""

from __future__ import annotations

import types

import numpy as np
import pytest

import distscan
from tests.support.ranks import all_ranks_ok, same_outcome

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

pytestmark = [pytest.mark.anyranks, pytest.mark.timeout(300)]

FIRST = 1000  # every value read starts here (and is put back after each test)

# -- combines that read a value that the tests change between calls ----------------------------------

_LIMIT = FIRST


def _global_combine(a, b):
    return np.minimum(a + b, _LIMIT)


_HELPER_LIMIT = FIRST


def _clamp(v):
    return np.minimum(v, _HELPER_LIMIT)


def _helper_combine(a, b):  # (numba does not compile a call of a plain Python function: the NumPy path)
    return _clamp(a + b)


_SETTINGS = types.ModuleType("distscan_test_settings")  # a module of the user's, not a library
_SETTINGS.LIMIT = FIRST


def _module_combine(a, b):
    return np.minimum(a + b, _SETTINGS.LIMIT)


_TABLE = np.array([FIRST, 0], np.int64)  # changed in place (numba compiles a global array as a constant)


def _array_combine(a, b):
    return np.minimum(a + b, _TABLE[0])


_BIG = np.full(4096, FIRST, np.int64)  # 32 KiB: more than distscan digests (ops/snapshot.py: DIGEST_BYTES)


def _big_combine(a, b):
    return np.minimum(a + b, _BIG[0])


def _default_combine(a, b, limit=FIRST):
    return np.minimum(a + b, limit)


class _Clamp:
    """A callable object: its state is an attribute."""

    def __init__(self, limit):
        self.limit = limit

    def __call__(self, a, b):
        return np.minimum(a + b, self.limit)


def _closure():
    limit = FIRST

    def combine(a, b):
        return np.minimum(a + b, limit)

    def set_limit(value):
        nonlocal limit
        limit = value
    return combine, set_limit


def _set_global(name):
    def set_limit(value):
        globals()[name] = value
    return set_limit


def _reading(kind):
    """A fresh declared operator (the limited sum ``min(a + b, limit)``) whose combine reads the
    limit as ``kind`` says, and the function that sets the limit it reads."""
    if kind == "global":
        combine, set_limit = _global_combine, _set_global("_LIMIT")
    elif kind == "helper":
        combine, set_limit = _helper_combine, _set_global("_HELPER_LIMIT")
    elif kind == "module":
        combine, set_limit = _module_combine, lambda v: setattr(_SETTINGS, "LIMIT", v)
    elif kind == "array":
        combine, set_limit = _array_combine, lambda v: _TABLE.__setitem__(0, v)
    elif kind == "big array":
        combine, set_limit = _big_combine, lambda v: _BIG.__setitem__(0, v)
    elif kind == "default":
        combine, set_limit = _default_combine, lambda v: setattr(_default_combine, "__defaults__", (v,))
    elif kind == "closure":
        combine, set_limit = _closure()
    else:
        assert kind == "object"
        combine = _Clamp(FIRST)
        set_limit = lambda v: setattr(combine, "limit", v)  # noqa: E731
    return distscan.Operator("limited sum", combine, identity=0, kinds="i"), set_limit


KINDS = ["global", "closure", "default", "module", "array", "big array", "helper", "object"]


@pytest.fixture(autouse=True)
def _first_values():
    """Every value a combine here reads is FIRST before and after each test."""
    yield
    for kind in KINDS:
        if kind not in ("closure", "object"):
            _reading(kind)[1](FIRST)


def _reference(g, limit, *, reverse=False, exclusive=False):
    """The sequential scan of ``g`` by ``min(a + b, limit)``: the first item as it is, the
    identity 0 first in an exclusive scan."""
    h = g[::-1] if reverse else g
    out, acc = [], None
    for v in h:
        if exclusive:
            out.append(0 if acc is None else acc)
        acc = int(v) if acc is None else min(acc + int(v), limit)
        if not exclusive:
            out.append(acc)
    ref = np.array(out, np.int64)
    return ref[::-1] if reverse else ref


def _mine(comm, counts):
    lo = sum(counts[:comm.rank])
    return slice(lo, lo + counts[comm.rank])


def _expect(comm, outcome, ref, what):
    def check():
        assert outcome[0] == "ok", (what, outcome)
        got = np.asarray(outcome[1])
        assert got.dtype == ref.dtype, (what, got.dtype)
        np.testing.assert_array_equal(got, ref, err_msg=what)
    all_ranks_ok(comm, check)


def _data(comm, pattern, seed):
    counts = [pattern[r % len(pattern)] for r in range(comm.size)]
    g = np.random.default_rng(seed).integers(1, 10, sum(counts)).astype(np.int64)
    return g, counts


# Back and forth: a value never seen, then one whose loop was compiled before.  The items are
# 1 to 9: FIRST never clamps, 9 clamps from the second or third item on.
LIMITS = [FIRST, 9, FIRST, 9]


@pytest.mark.parametrize("kind", KINDS)
def test_a_value_changed_between_calls_takes_effect_everywhere(comm, kind):
    """The limit the combine reads changes between calls in a row (one operator): each scan and
    each reduce is the sequential one with that call's limit, on every rank.  Before the fix the
    compiled loops kept the limit of the first call: the scan of one rank or two kept the old
    limit, and at 3 ranks the third rank's part mixed the old and the new."""
    op, set_limit = _reading(kind)
    g, counts = _data(comm, [5, 4, 6], 1)
    mine = _mine(comm, counts)
    for k, limit in enumerate(LIMITS):
        set_limit(limit)
        what = f"{kind}: call {k}, limit {limit}"
        got = same_outcome(comm, lambda: distscan.scan(g[mine].copy(), op, comm=comm), must_fail=False, what=what)
        ref = _reference(g, limit)
        _expect(comm, got, ref[mine], what)
        total = same_outcome(comm, lambda: distscan.reduce(g[mine].copy(), op, comm=comm), must_fail=False,
                             what=what)
        _expect(comm, total, np.asarray(ref[-1]), f"reduce, {what}")


@pytest.mark.parametrize("options", [{"reverse": True}, {"exclusive": True}])
def test_a_changed_global_with_reverse_and_exclusive_scans(comm, options):
    op, set_limit = _reading("global")
    g, counts = _data(comm, [4, 7, 5], 2)
    mine = _mine(comm, counts)
    for k, limit in enumerate([FIRST, 9, 20]):
        set_limit(limit)
        what = f"{options}: call {k}, limit {limit}"
        got = same_outcome(comm, lambda: distscan.scan(g[mine].copy(), op, comm=comm, **options), must_fail=False,
                           what=what)
        _expect(comm, got, _reference(g, limit, **options)[mine], what)


@pytest.mark.parametrize("kind", [k for k in KINDS if k != "big array"])
def test_ranks_holding_different_values_are_refused_on_every_rank(comm, kind):
    """After a call where every rank agrees (warm caches), the last rank alone changes the value
    the combine reads: every rank raises the same ValueError naming the operator's definition, in
    that call and the next (warm on the ranks that refused); then the ranks agree on the new value
    and the call is right.  One rank: its own value.  (Before the fix the ranks compared the
    definition as their first call's plan held it, without the globals read, and a callable
    object by its type: a mix, silently.)  The array too large to digest is compared by its type
    alone (docs/operators.md): not here."""
    op, set_limit = _reading(kind)
    g, counts = _data(comm, [5, 3, 6], 3)
    mine = _mine(comm, counts)
    differ = comm.size > 1
    for k, limits in enumerate([[FIRST], [FIRST, 9], [FIRST, 9], [9]]):
        limit = limits[-1] if comm.rank == comm.size - 1 else limits[0]
        set_limit(limit)
        fails = differ and len(limits) > 1
        what = f"{kind}: call {k}"
        match = "operator definition differs across ranks" if fails else None
        got = same_outcome(comm, lambda: distscan.scan(g[mine].copy(), op, comm=comm), must_fail=fails, match=match,
                           what=what)
        same_outcome(comm, lambda: distscan.reduce(g[mine].copy(), op, comm=comm), must_fail=fails, match=match,
                     what=f"reduce, {what}")
        if not fails:
            _expect(comm, got, _reference(g, limits[0] if comm.size > 1 else limit)[mine], what)


def test_callable_objects_of_one_class_with_other_state_are_other_operators(comm):
    """Two callable objects of one class, made anew in each call as a loop body would: the same
    attributes on every rank are one operator; another attribute on one rank is refused on every
    rank (an object was described by its type alone: a mix)."""
    g, counts = _data(comm, [6, 2, 5], 4)
    mine = _mine(comm, counts)
    for k in range(3):
        limit = 9 if k == 1 and comm.rank == comm.size - 1 else 20
        fails = comm.size > 1 and k == 1
        op = distscan.Operator("clamped", _Clamp(limit), identity=0, kinds="i")
        got = same_outcome(comm, lambda: distscan.scan(g[mine].copy(), op, comm=comm), must_fail=fails,
                           match="operator definition differs across ranks" if fails else None, what=f"call {k}")
        if not fails:
            _expect(comm, got, _reference(g, limit)[mine], f"call {k}")


PROFILE = settings(max_examples=10, deadline=None, derandomize=True, database=None,
                   phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck),
                   print_blob=False)


@PROFILE
@given(steps=st.lists(st.fixed_dictionaries({
    "limit": st.sampled_from([9, 25, FIRST]),
    "counts": st.lists(st.integers(0, 7), min_size=3, max_size=3),
    "reverse": st.booleans(),
    "reduce": st.booleans(),
}), min_size=2, max_size=5))
def test_drawn_calls_with_the_global_changed_between_them(comm, steps):
    """Drawn sequences of calls of one operator (the draws are the same on every rank), the global
    its combine reads set anew before each (from a few values: loops compiled before come back),
    each rank's part of a length of its own (empty ones too), forwards or in reverse, a scan or a
    reduce: each the sequential result with that call's value."""
    op, set_limit = _reading("global")
    try:
        for k, step in enumerate(steps):
            set_limit(step["limit"])
            g, counts = _data(comm, step["counts"], 10 + k)
            mine = _mine(comm, counts)
            ref = _reference(g, step["limit"], reverse=step["reverse"])
            what = f"call {k}: {step}"
            if step["reduce"]:
                if not len(g):
                    continue
                got = same_outcome(comm, lambda: distscan.reduce(g[mine].copy(), op, comm=comm), must_fail=False,
                                   what=what)
                _expect(comm, got, np.asarray(_reference(g, step["limit"])[-1]), what)
            else:
                got = same_outcome(comm, lambda: distscan.scan(g[mine].copy(), op, comm=comm,
                                                               reverse=step["reverse"]), must_fail=False, what=what)
                _expect(comm, got, ref[mine], what)
    finally:
        set_limit(FIRST)
