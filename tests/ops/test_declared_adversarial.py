"""Declared operators (``distscan.Operator``) used the way real code gets them wrong, on one rank:
a name that is a built-in operator's, an operator changed after its first call, ``check=True``
on warm calls and on float operators that are associative up to rounding, a combine of the
wrong shape, ``include_initial`` with a declared state, what makes two declarations one (the
definition the ranks compare: tests/dist/test_declared_ranks_differ.py runs them across ranks),
and the command line's ``--op`` values that are unknown or not associative.

Defects found when this file was written, each mended, its test here:

* two declared operators were one to the ranks when they shared a name (what they compare now is
  the definition: code, closure values, identity, state; never an address);
* a declared operator could take a built-in's name, and the built-in operators' shortcuts go by
  name: ``Operator("sum", np.multiply, ...)`` with ``segments=`` or ``compensated=True`` summed;
* ``check=True`` checked the first call of a kind only (later calls took the cached kind's route),
  and ``op.check`` could be set after the first call (the dataclass froze its own fields only);
* ``check=True`` refused float operators that are associative up to rounding: a float sum of
  random data about one call in five (the tolerance was relative to the result, not to the
  terms), a structured float state (the running mean of docs/operators.md) always (compared
  exactly);
* a combine that returns another shape than its inputs' was broadcast over the part;
* the definition described a combine by its code and closure, not the globals it reads (or a
  helper's, or an array's items), and a callable object by its type alone (what that did across
  ranks and between calls: tests/ops/test_declared_reads.py);
* ``segments=`` with a commutative declared ufunc raised "no scalar combine for the CPU's loops"
  instead of the documented refusal;
* two declared operators that differ only in their identity had one CUDA functor name (the GPU's
  caches of modules and plans go by it);
* ``include_initial=True`` with a declared state raised a TypeError (its identity is a state, cast
  to a value), and with ``initial=`` put the raw value where the exclusive scan gives its state's
  projection;
* ``--op subtract`` was an "unknown operator", where ``op=np.subtract`` is refused as not associative.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import types

import numpy as np
import pytest

import distscan
from distscan import cli
from tests.support.command import files_in, input_npy
from tests.support.declared import COUNTED as _COUNTED, counted, counted_combine as _counted_combine, \
    counted_lift as _counted_lift, mean
from tests.support.launch import mpi_command, run

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

pytestmark = pytest.mark.timeout(120)


def _counted(**kwargs):
    return counted(**kwargs)


def _mean(**kwargs):
    return mean(**kwargs)


# -- names -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["sum", "prod", "max", "nanmax", "gcd", "logaddexp", "SUM", " sum ", "add", "cumsum",
                                  "fmax", "^"])
def test_a_built_in_name_is_refused(name):
    """A declared operator needs a name of its own: the built-in operators' shortcuts go by name (a
    declared "sum" of products was summed by ``segments=`` and ``compensated=True``)."""
    with pytest.raises(ValueError, match="built-in operator"):
        distscan.Operator(name, np.multiply, identity=1, commutative=True)


def test_names_of_its_own_are_taken():
    for name in ("summed", "my max", "sum of squares", "Max2"):
        op = distscan.Operator(name, np.maximum, identity=lambda dt: np.iinfo(dt).min, kinds="i", commutative=True)
        np.testing.assert_array_equal(distscan.scan(np.array([3, 1, 4, 1, 5]), op), [3, 3, 4, 4, 5])


@pytest.mark.parametrize("make", [
    lambda: distscan.Operator("products", np.multiply, identity=1, commutative=True),
    lambda: distscan.Operator("products", np.multiply, identity=1),
    lambda: distscan.Operator("products", lambda a, b: a * b, identity=1),
    lambda: _counted(),
])
def test_segments_with_any_declared_operator_are_refused(make):
    """``segments=`` takes no declared operator (docs/operators.md), whatever its combine: the same
    ValueError (a commutative ufunc gave "no scalar combine for the CPU's loops")."""
    with pytest.raises(ValueError, match="segments= with the declared operator .* is not supported"):
        distscan.scan(np.arange(1, 6), make(), segments=np.array([1, 0, 0, 1, 0], bool))


def test_compensated_with_a_declared_operator_is_refused():
    op = distscan.Operator("products", np.multiply, identity=1.0, commutative=True)
    with pytest.raises(ValueError, match="compensated=True is for sums"):
        distscan.scan(np.arange(1.0, 6.0), op, compensated=True)


# -- what makes two declarations one -----------------------------------------------------------------

def _maker(limit):
    return lambda a, b: np.minimum(a + b, limit)


def test_definitions_alike_are_equal():
    """Declarations alike have one definition, however each was made: lambdas on lines of their
    own, closures over equal values and arrays, a function warmed up by many calls."""
    f = lambda a, b: np.minimum(a + b, 10)  # noqa: E731
    g = lambda a, b: np.minimum(a + b, 10)  # noqa: E731
    for _ in range(300):
        f(np.int64(1), np.int64(2))
    dt = np.dtype(np.int64)
    defs = {distscan.Operator("x", h, identity=0, kinds="i").definition(dt) for h in (f, g)}
    assert len(defs) == 1, defs
    arrays = {distscan.Operator("x", _maker(np.array([4, 5])), identity=0, kinds="i").definition(dt) for _ in range(3)}
    assert len(arrays) == 1, arrays
    ufuncs = {distscan.Operator("x", np.maximum, identity=0, commutative=True).definition(dt) for _ in range(2)}
    assert len(ufuncs) == 1
    states = {_counted().definition(dt) for _ in range(2)}
    assert len(states) == 1
    assert distscan.OPS["sum"].definition(dt) == "built-in"
    assert "0x" not in next(iter(defs))


@pytest.mark.parametrize("other", [
    lambda: distscan.Operator("x", lambda a, b: np.minimum(a + b, 11), identity=0, kinds="i"),   # a constant
    lambda: distscan.Operator("x", lambda a, b: np.maximum(a + b, 10), identity=0, kinds="i"),   # a name
    lambda: distscan.Operator("x", _maker(11), identity=0, kinds="i"),                           # a closure
    lambda: distscan.Operator("x", lambda a, b: np.minimum(a + b, 10), identity=1, kinds="i"),   # the identity
    lambda: distscan.Operator("x", lambda a, b: np.minimum(a + b, 10), identity=0, kinds="iu"),  # kinds
    lambda: distscan.Operator("x", lambda a, b: np.minimum(a + b, 10), identity=0, kinds="i",
                              cuda="min(a + b, 10)"),                                            # cuda=
    lambda: distscan.Operator("x", lambda a, b: np.minimum(a + b, 10), identity=0, kinds="i",
                              commutative=True),                                                 # commutative
    lambda: distscan.Operator("x", lambda a, b: np.minimum(a + b, 10), identity=0, kinds="i",
                              scalar=lambda a, b: min(a + b, 10)),                               # scalar=
])
def test_definitions_that_differ_are_not_equal(other):
    dt = np.dtype(np.int64)
    base = distscan.Operator("x", lambda a, b: np.minimum(a + b, 10), identity=0, kinds="i").definition(dt)
    assert other().definition(dt) != base


def test_states_that_differ_are_not_equal():
    dt = np.dtype(np.int64)
    base = _counted().definition(dt)
    other = distscan.Operator("counted", _counted_combine, identity=lambda dt: np.zeros((), _COUNTED),
                              state=_COUNTED, lift=_counted_lift, project=lambda s: s["s"])
    assert other.definition(dt) != base
    assert distscan.Operator("counted", _counted_combine, identity=0, kinds="i").definition(dt) != base


# -- what a combine reads: its snapshot (distscan/ops/snapshot.py) --------------------------------------

_READ = 10          # read by _reads_global, and through _read_helper by _reads_through_helper
_READ_ARRAY = np.array([10, 0])
k = 0               # a global named as an attribute that _Limited's __call__ reads (self.k): not read


def _reads_global(a, b):
    return np.minimum(a + b, _READ)


def _read_helper(v):
    return np.minimum(v, _READ)


def _reads_through_helper(a, b):
    return _read_helper(a + b)


def _reads_array(a, b):
    return np.minimum(a + b, _READ_ARRAY[0])


class _Limited:
    def __init__(self, k):
        self.k = k

    def __call__(self, a, b):
        return np.minimum(a + b, self.k)


def test_definitions_see_the_values_read(monkeypatch):
    """The definition the ranks compare covers the current values of what the combine reads: a
    global, a helper's global, a global array's items, a callable object's attribute (each was
    invisible: a global by its name alone, an object by its type).  A global that shares its name
    with an attribute the code reads (``self.k`` beside a global ``k``) is not read."""
    dt = np.dtype(np.int64)

    def definitions(make, change):
        first = distscan.Operator("x", make(), identity=0, kinds="i").definition(dt)
        again = distscan.Operator("x", make(), identity=0, kinds="i").definition(dt)
        change()
        return first, again, distscan.Operator("x", make(), identity=0, kinds="i").definition(dt)

    module = sys.modules[__name__]
    limited = _Limited(10)
    monkeypatch.setattr(module, "_READ_ARRAY", _READ_ARRAY.copy())  # changed in place below
    for make, change in [(lambda: _reads_global, lambda: monkeypatch.setattr(module, "_READ", 11)),
                         (lambda: _reads_through_helper, lambda: monkeypatch.setattr(module, "_READ", 12)),
                         (lambda: _reads_array, lambda: module._READ_ARRAY.__setitem__(0, 13)),
                         (lambda: limited, lambda: setattr(limited, "k", 14))]:
        first, again, changed = definitions(make, change)
        assert first == again and changed != first, (make(), first, changed)
    before = distscan.Operator("x", _Limited(10), identity=0, kinds="i").definition(dt)
    monkeypatch.setattr(module, "k", 99)
    assert distscan.Operator("x", _Limited(10), identity=0, kinds="i").definition(dt) == before


def test_what_cannot_be_digested_is_opaque_and_not_compiled():
    """A combine that reads what distscan cannot digest cheaply (an array over DIGEST_BYTES, a
    random generator) has an opaque snapshot, which the jit refuses (its NumPy path runs, reading
    every value anew in each call); what it can is not opaque."""
    from distscan.ops import jit, snapshot as snap

    big = np.zeros(snap.DIGEST_BYTES // 8 + 1, np.int64)
    rng = np.random.default_rng(0)
    for opaque, fn in [(True, lambda a, b: np.minimum(a + b, big[0])),
                       (True, lambda a, b: a + b + 0 * rng.integers(1)),
                       (False, lambda a, b: np.minimum(a + b, _READ_ARRAY[0])),
                       (False, _reads_through_helper), (False, _Limited(3))]:
        assert snap.snapshot(fn).opaque is opaque, fn
    with pytest.raises(jit.Unfrozen):
        jit.compile_loop("def scan(x):\n    return base(x, x)\n", "scan", lambda a, b: np.minimum(a + b, big[0]))
    op = distscan.Operator("big limit", lambda a, b: np.minimum(a + b, big[0] + 5), identity=0, kinds="i")
    np.testing.assert_array_equal(distscan.scan(np.arange(1, 5), op), [1, 3, 5, 5])
    big[0] = 1
    np.testing.assert_array_equal(distscan.scan(np.arange(1, 5), op), [1, 3, 6, 6])


_WORLD = types.ModuleType("distscan_test_world")  # the globals of the functions the next test changes
exec(compile("""
import numpy as np
LIMIT = 10
TABLE = np.array([1, 2, 3])
def helper(v):
    return np.minimum(v, LIMIT)
def combine(a, b):
    return helper(a + b) + TABLE[0]
def plain(a, b, d=1):
    return np.minimum(a + b, LIMIT) * d
def make(c):
    def inner(a, b):
        return np.minimum(a + b, c + LIMIT)
    return inner
class Limited:
    def __init__(self, k):
        self.k = k
    def __call__(self, a, b):
        return np.minimum(a + b, self.k + LIMIT)
""", "<distscan test world>", "exec"), _WORLD.__dict__)


@settings(max_examples=40, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
@given(steps=st.lists(st.tuples(st.sampled_from(["LIMIT", "TABLE", "default", "cell", "attribute", "helper",
                                                 "none"]), st.integers(0, 3)), min_size=1, max_size=12))
def test_snapshots_kept_between_calls_are_those_made_afresh(steps):
    """The snapshots kept between calls (a function's text while it reads the very same immutable
    objects; the snapshot of several values while each is so) are those a fresh walk makes, after
    any sequence of changes: a global rebound, an array changed in place, a default, a closure
    cell, an object's attribute, a helper function replaced, or nothing."""
    from distscan.ops import snapshot as snap

    w = _WORLD.__dict__
    saved = {name: w[name] for name in ("LIMIT", "TABLE", "helper")}
    saved_table, saved_defaults = w["TABLE"].copy(), w["plain"].__defaults__
    inner, limited = w["make"](5), w["Limited"](2)
    helpers = [saved["helper"], lambda v: v, lambda v: np.maximum(v, w["LIMIT"])]
    # (one function alone before the values it is one of: its own snapshot renews what it keeps)
    functions = [w["plain"], (w["plain"], 0, None), inner, (inner, w["plain"]), w["combine"], limited,
                 (w["combine"], limited)]

    def fresh(values):
        kept = snap._MEMO, snap._SNAPSHOTS
        snap._MEMO, snap._SNAPSHOTS = {}, {}
        try:
            return snap.snapshot(*values)
        finally:
            snap._MEMO, snap._SNAPSHOTS = kept

    try:
        for what, value in steps:
            if what == "LIMIT":
                w["LIMIT"] = [10, 11, 10.0, 2 ** 70][value]
            elif what == "TABLE":
                w["TABLE"][value % 3] += 1
            elif what == "default":
                w["plain"].__defaults__ = (value,)
            elif what == "cell":
                inner.__closure__[0].cell_contents = value
            elif what == "attribute":
                limited.k = value
            elif what == "helper":
                w["helper"] = helpers[value % 3]
            for values in functions:
                values = values if isinstance(values, tuple) else (values,)
                kept = snap.snapshot(*values)
                assert kept == fresh(values), (what, value)
                assert snap.snapshot(*values) == kept
    finally:
        w.update(saved)
        w["TABLE"][:] = saved_table
        w["plain"].__defaults__ = saved_defaults


def test_the_gpu_functor_name_covers_the_identity():
    """The CUDA functor of a declared operator is named by its whole source: two declarations that
    differ only in their identity (or kinds) get two names, so that the GPU's caches of modules and
    plans, which go by the name, never serve one for the other; equal ones share it."""
    def make(identity, kinds="f"):
        return distscan.Operator("h", np.hypot, identity=identity, cuda="hypot(a, b)", commutative=True, kinds=kinds)

    a, b, c = make(0.0), make(1.0), make(0.0)
    assert a.functor != b.functor
    assert a.functor == c.functor and a.source == c.source
    assert make(0.0, "fc").functor != a.functor
    assert f"struct {a.functor} " in a.source and "DECLARED_FUNCTOR" not in a.source


# -- an operator changed after its first call ---------------------------------------------------------

def test_an_operator_cannot_be_changed_after_it_is_made():
    """Plans and call kinds keep the operator they were made with: every attribute is frozen,
    ``check`` too (it was not, and a kind cached before it was set skipped the check)."""
    op = distscan.Operator("limited", lambda a, b: np.minimum(a + b, 10), identity=0, kinds="i")
    distscan.scan(np.arange(5), op)
    for name, value in [("check", True), ("name", "other"), ("identity", lambda dt: 1), ("kinds", "f"),
                        ("anything", 1)]:
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(op, name, value)
    assert op.check is False and op.name == "limited"


def test_check_samples_every_call_of_a_kind():
    """``check=True`` checks each call's input, also when the kind of call was seen before (the
    cached kind's route skipped it: bad inputs after good ones gave a result)."""
    op = distscan.Operator("clamped", lambda a, b: np.minimum(a + b, 10), identity=0, kinds="i", check=True)
    good = np.arange(30, dtype=np.int64) % 4
    bad = np.array([5, 10, -5, 7, -8, 9, -3, 10, 4, -9] * 3, np.int64)
    for _ in range(3):
        assert distscan.scan(good, op)[-1] == 10
        with pytest.raises(ValueError, match="not associative"):
            distscan.scan(bad, op)


# -- check=True and rounding ---------------------------------------------------------------------------

_CHECKED_SUM = distscan.Operator("float sum", lambda a, b: a + b, identity=0.0, kinds="fc", check=True)
_CHECKED_MEAN = _mean(check=True)


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2 ** 32 - 1), dtype=st.sampled_from(["float32", "float64", "complex128"]),
       scale=st.integers(-20, 20), n=st.integers(3, 80))
def test_check_passes_float_sums_and_means(seed, dtype, scale, n):
    """``check=True`` on a float sum (any magnitude, both signs: groupings differ by rounding of the
    largest term) and on the running mean (a structured float state): never refused."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * 2.0 ** scale).astype(dtype)
    if dtype == "complex128":
        x = x + 1j * rng.standard_normal(n) * 2.0 ** scale
    fsum = _CHECKED_SUM
    np.testing.assert_allclose(distscan.scan(x, fsum), np.cumsum(x.astype(np.complex128 if dtype == "complex128"
                                                                          else np.float64)),
                               rtol=1e-4 if dtype == "float32" else 1e-9, atol=float(np.abs(x).sum()) * 1e-6)
    if dtype == "float64":
        mean = _CHECKED_MEAN
        np.testing.assert_allclose(distscan.scan(x, mean), np.cumsum(x) / np.arange(1, n + 1), rtol=1e-9,
                                   atol=float(np.abs(x).max()) * 1e-12)


@settings(max_examples=30, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2 ** 32 - 1), dtype=st.sampled_from(["float32", "float64"]), scale=st.integers(-20, 20))
def test_check_still_refuses_what_is_not_associative(seed, dtype, scale):
    """The tolerance for rounding does not let a non-associative combine through: the average, a
    difference, on data of any magnitude."""
    x = (np.random.default_rng(seed).random(40) * 2.0 ** scale + 2.0 ** scale).astype(dtype)
    for name, f in [("average", lambda a, b: (a + b) / 2), ("difference", lambda a, b: a - b)]:
        op = distscan.Operator(name, f, identity=0.0, kinds="f", check=True)
        with pytest.raises(ValueError, match="not associative"):
            distscan.scan(x, op)


# -- a combine of the wrong shape, include_initial with a state ------------------------------------------

def test_a_combine_of_the_wrong_shape_is_refused():
    """A combine that reduces (returns one item for a row of three) is refused, naming the shapes;
    NumPy would have broadcast its result over the part."""
    op = distscan.Operator("reducer", lambda a, b: np.atleast_1d(np.maximum(a, b).max()), identity=-np.inf,
                           kinds="f")
    with pytest.raises(ValueError, match=r"gave shape \(1,\) for inputs of shapes .*element by element"):
        distscan.scan(np.arange(15.0).reshape(5, 3), op)


@pytest.mark.parametrize("initial", [None, 2])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("make", [_counted, _mean])
def test_include_initial_with_a_declared_state(make, initial, reverse):
    """``include_initial=True`` is the exclusive scan followed by the total (Part's own words): with
    a declared state its extra item is the exclusive scan's first, the projection of the state of
    ``initial`` (or of the identity).  It raised a TypeError without ``initial`` and gave the raw
    ``initial`` with it."""
    op = make()
    x = np.array([1, 2, 0, 1, 2], np.int64 if make is _counted else np.float64)
    kw = {} if initial is None else {"initial": initial}
    got = distscan.scan(x, op, include_initial=True, reverse=reverse, **kw)
    exclusive = distscan.scan(x, op, exclusive=True, reverse=reverse, **kw)
    inclusive = distscan.scan(x, op, reverse=reverse, **kw)
    want = np.concatenate([inclusive, exclusive[-1:]]) if reverse else np.concatenate([exclusive[:1], inclusive])
    np.testing.assert_array_equal(got, want)
    assert got.dtype == inclusive.dtype


# -- the command line's --op ------------------------------------------------------------------------------

_BAD_OPS = [("subtract", "not associative"), ("np.subtract", "not associative"), ("divide", "not associative"),
            ("power", "not associative"), ("nope", "unknown operator"), ("", "unknown operator"),
            ("Operator", "unknown operator")]


@pytest.mark.parametrize("op, words", _BAD_OPS)
def test_command_refuses_a_bad_op_with_one_line(tmp_path, capsys, op, words):
    """``python -m distscan --op X`` with an unknown or non-associative X: a usage error (exit 2), one
    ``distscan: error:`` line naming why, nothing written."""
    inp = input_npy(tmp_path)
    before = files_in(tmp_path)
    try:
        code = cli.main([str(inp), "--op", op, "-o", str(tmp_path / "out.npy"), "--report", str(tmp_path / "r.json")])
    except SystemExit as exc:  # argparse's way
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    errors = [ln for ln in err.splitlines() if ln.startswith("distscan: error:")]
    assert len(errors) == 1 and words in errors[0] and "--op" in errors[0], err
    assert "Traceback" not in err
    assert files_in(tmp_path) == before


@pytest.mark.parametrize("ranks", [2, 3])
def test_command_refuses_a_bad_op_once_on_every_rank(tmp_path, ranks):
    """The same under mpiexec: every rank exits 2, one error line in all, nothing written."""
    inp = input_npy(tmp_path)
    before = files_in(tmp_path)
    for op, words in (_BAD_OPS[0], _BAD_OPS[4]):
        proc = run(mpi_command(ranks, [sys.executable, "-m", "distscan", inp, "--op", op, "-o", tmp_path / "out.npy"]),
                   timeout=60)
        assert isinstance(proc, subprocess.CompletedProcess)
        assert proc.returncode == 2, (proc.returncode, proc.stderr)
        errors = [ln for ln in proc.stderr.splitlines() if "distscan: error:" in ln]
        assert len(errors) == 1 and words in errors[0], proc.stderr
        assert "Traceback" not in proc.stderr
        assert files_in(tmp_path) == before


def test_check_needs_an_identity_neutral_on_the_right_too():
    """``lambda a, b: b`` ("keep the last") is associative and any identity is neutral on its left
    only: the GPU kernels also pad on the right (a partial tile's total is a rank's carry), so
    ``check=True`` refuses it; the NaN-skipping forward fill has an identity on both sides."""
    last = distscan.Operator("keep the last", lambda a, b: np.asarray(b).copy(), identity=0.0, check=True)
    x = np.arange(1.0, 9.0)
    with pytest.raises(ValueError, match=r"combine\(x, e\) == x"):
        distscan.scan(x, last)
    ffill = distscan.Operator("forward fill, both sides", lambda a, b: np.where(np.isnan(b), a, b), identity=np.nan,
                              check=True)
    y = np.array([np.nan, 1.0, np.nan, 3.0, np.nan])
    np.testing.assert_array_equal(distscan.scan(y, ffill), [np.nan, 1.0, 1.0, 3.0, 3.0])
