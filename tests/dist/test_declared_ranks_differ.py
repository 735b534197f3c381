"""Custom operators where the ranks differ, as a real MPI code gets them wrong: the same operator
spelt differently (``np.add`` here, ``"sum"`` there), two declared operators sharing one name,
a combine that raises or returns the wrong shape on one rank only, ``check=True`` on one rank
only, parts of every kind (empty, a scalar, a list, a memmap, a view) under a declared state, and
``exclusive``/``reverse``/``initial``/``include_initial`` with declared operators; every scenario
several calls in a row on one communicator, so that caches are warm on some ranks and cold on
others.  The promise: one identical outcome on every rank (the same exception and message, or a
result equal to the sequential scan of the concatenated parts: integers exactly), never a hang,
and the call after a failed one is right.

Defects found when this file was written, each mended, its test here:

* two declared operators sharing a name were agreed as one (the plans compared the name alone):
  their results were mixed silently, and a declared operator named like a built-in one against
  the built-in one hung (only the declared one's exchange ends with its guard's collective);
* ``check=True`` sampled the first call of a kind only: later calls took the cached kind's route,
  which skipped the check (on the ranks whose cache was warm);
* a combine that returns another shape than its inputs' was broadcast over the part;
* ``check=True`` refused float operators that are associative up to rounding (a float sum now and
  then, the running mean always);
* ``segments=`` with a commutative declared ufunc raised "no scalar combine" instead of the
  documented refusal;
* ``include_initial=True`` with a declared state raised a TypeError (its identity, a state, cast to
  a value).

Runs serially and under ``mpiexec -n K python -m pytest --with-mpi``.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest

import distscan
from tests.support.declared import COUNTED as _COUNTED, MEAN as _MEAN, counted_combine as _counted_combine, \
    counted_lift as _counted_lift, mean_combine as _mean_combine, mean_lift as _mean_lift
from tests.support.kinds import part_as
from tests.support.ranks import all_ranks_ok, outcome_of, same_outcome

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

pytestmark = [pytest.mark.anyranks, pytest.mark.timeout(120)]

CALLS = 3  # calls of one kind in a row: the second and later find this rank's caches warm


# -- helpers ---------------------------------------------------------------------------------------

def _expect(comm, outcome, ref, tol=None, what=""):
    def check():
        assert outcome[0] == "ok", (what, outcome)
        got = np.asarray(outcome[1])
        if tol is None:
            assert got.dtype == ref.dtype, (what, got.dtype, ref.dtype)
            np.testing.assert_array_equal(got, ref, err_msg=what)
        else:
            np.testing.assert_allclose(got, ref, rtol=tol, atol=tol, err_msg=what)
    all_ranks_ok(comm, check)


def _mine(comm, counts):
    lo = sum(counts[:comm.rank])
    return slice(lo, lo + counts[comm.rank])


def _counts(comm, pattern):
    return [pattern[r % len(pattern)] for r in range(comm.size)]


# -- the operators and their sequential references ---------------------------------------------------

def _wrapped(value: int) -> int:
    """A Python integer as int64 arithmetic wraps it (the counted state's base-3 digits pass 2^63
    past 40 items: the reference's conversion overflowed at 6 ranks, found 2026-11-27)."""
    return (value + 2**63) % 2**64 - 2**63


def _saturating_add(a, b):
    return np.minimum(a + b, 1000)


def _operators():
    """Fresh declared operators (each rank makes its own, as an MPI program does), with a scalar
    sequential combine, lift and projection for the reference, and the reference's tolerance.
    The saturating add's combine is one function of the module, not a lambda made anew: numba
    compiles a declared function's loops per function object and part layout (distscan.ops.jit,
    in memory), and a fresh lambda in each drawn sequence cost 1-2 s a compile on each rank
    (9-12 compiles per rank, 30-45 s of the sequence test at 5 ranks on the 2-core VM);
    test_an_operator_redefined_under_its_name_in_later_calls makes fresh functions."""
    return {
        # a function (numba's loop), not commutative: the ordered path of a declared state
        "saturating": (distscan.Operator("saturating add", _saturating_add, identity=0, kinds="i"),
                       lambda a, b: min(a + b, 1000), None, None, None),
        # a commutative ufunc: the plain path (NumPy's accumulate, carries reduced by the ufunc)
        "imax": (distscan.Operator("integer max", np.maximum, identity=lambda dt: np.iinfo(dt).min, kinds="iu",
                                   commutative=True),
                 max, None, None, None),
        # a structured state with lift and projection, integers exact: order matters
        "counted": (distscan.Operator("counted", _counted_combine, identity=lambda dt: np.zeros((), _COUNTED),
                                      state=_COUNTED, lift=_counted_lift, project=lambda s: s["s"] * 100 + s["n"]),
                    lambda a, b: (a[0] + b[0], a[1] * 3 ** b[0] + b[1]), lambda v: (1, int(v)),
                    lambda s: _wrapped(s[1] * 100 + s[0]), None),
        # the running mean (floats)
        "mean": (distscan.Operator("running mean", _mean_combine, identity=lambda dt: np.zeros((), _MEAN),
                                   state=_MEAN, lift=_mean_lift, project=lambda s: s["m"]),
                 lambda a, b: (a[0] + b[0], (a[0] * a[1] + b[0] * b[1]) / (a[0] + b[0])), lambda v: (1.0, float(v)),
                 lambda s: s[1], 1e-12),
    }


OPS = sorted(_operators())
_IDENTITY = {"saturating": 0, "imax": np.iinfo(np.int64).min, "counted": (0, 0), "mean": (0.0, 0.0)}


def _data(rng, key, n):
    if key == "mean":
        return rng.standard_normal(n)
    if key == "counted":
        return rng.integers(0, 3, n).astype(np.int64)
    if key == "saturating":  # associative on items >= 0 only: with negative items, sums that reached
        # 1000 before one rank's part and not within it differed from the sequential scan (8 ranks)
        return rng.integers(0, 40, n).astype(np.int64)
    return rng.integers(-40, 90, n).astype(np.int64)


def _reference(key, g, *, exclusive=False, reverse=False, initial=None, include_initial=False):
    """The sequential scan of the whole array ``g``: the first item as it is (NumPy's accumulate),
    ``initial`` folded in before it; exclusive: the identity (or ``initial``) first."""
    _, combine, lift, project, _ = _operators()[key]
    lift = lift or (lambda v: v.item())
    project = project or (lambda s: s)
    h = g[::-1] if reverse else g
    acc = None if initial is None else lift(np.asarray(initial, g.dtype))
    out = []
    if include_initial:
        out.append(_IDENTITY[key] if acc is None else acc)
    for v in h:
        s = lift(v)
        if exclusive:
            out.append(_IDENTITY[key] if acc is None else acc)
        acc = s if acc is None else combine(acc, s)
        if not exclusive:
            out.append(acc)
    ref = np.array([project(s) for s in out], np.float64 if key == "mean" else np.int64)
    return ref[::-1] if reverse else ref


# -- one operator in different spellings ---------------------------------------------------------------

# (the spellings, the rows they name: equal rows are one operator, agreed as equal; docs/api.md)
SPELLINGS = [
    ((np.add, "sum", "cumsum", "ADD"), True),
    ((np.maximum, "max", " maximum "), True),
    ((np.fmax, "nanmax", "fmax"), True),
    ((np.logaddexp, "logaddexp", "logcumsumexp"), True),
    ((np.gcd, "gcd"), True),
    ((np.bitwise_xor, "^", "xor"), True),
    ((np.add, "nansum"), False),         # np.add is "sum": NaN is not skipped
    ((np.maximum, "nanmax"), False),     # maximum propagates NaN, fmax skips it
    ((np.logaddexp, "logaddexp2"), False),
]


@pytest.mark.parametrize("spellings, same", SPELLINGS, ids=lambda v: "-".join(map(str, v)) if isinstance(v, tuple)
                         else str(v))
def test_spellings_of_one_operator(comm, spellings, same):
    """Each rank names the operator its own way (ufunc, name, alias, case and spaces), calls in a
    row: the spellings of one table row are one operator (the result of the sequential scan);
    those of different rows are refused on every rank, naming both."""
    from distscan.ops import get_op

    rows = {get_op(s).name for s in spellings}
    assert (len(rows) == 1) == same
    for k in range(CALLS + 1):
        rng = np.random.default_rng(50 + k)
        counts = _counts(comm, [5, 0, 3] if k % 2 else [4])
        n = sum(counts)
        ufunc = get_op(spellings[0]).ufunc
        g = (rng.integers(1, 60, n) if ufunc in (np.gcd, np.bitwise_xor) else rng.standard_normal(n))
        mine = _mine(comm, counts)
        op = spellings[(comm.rank + k) % len(spellings)] if comm.size > 1 else spellings[k % len(spellings)]
        differ = comm.size > 1 and len({get_op(spellings[(r + k) % len(spellings)]).name
                                         for r in range(comm.size)}) > 1
        got = same_outcome(comm, lambda: distscan.scan(g[mine].copy(), op, comm=comm), must_fail=differ,
                            match="operator differs across ranks" if differ else None, what=f"call {k}")
        if not differ:
            ref = get_op(op).ufunc.accumulate(g)
            _expect(comm, got, ref[mine], None if ref.dtype.kind in "iu" else 1e-12, what=f"call {k}")


@pytest.mark.parametrize("bad", [np.subtract, np.divide, np.power, np.arctan2])
def test_a_non_associative_ufunc_on_one_rank_or_all(comm, bad):
    """A non-associative ufunc on the last rank only, then on every rank: refused on every rank with
    one message, calls in a row; the call after it is right."""
    x = np.arange(1.0, 6.0) + comm.rank
    for k in range(CALLS):
        op = bad if (k == CALLS - 1 or comm.rank == comm.size - 1) else np.add
        same_outcome(comm, lambda: distscan.scan(x, op, comm=comm), must_fail=True, match="not associative",
                      what=f"call {k}")
    g = np.concatenate(comm.allgather(x))
    _expect(comm, outcome_of(lambda: distscan.cumsum(x, comm=comm)), np.cumsum(g)[5 * comm.rank:5 * comm.rank + 5], 1e-12)


# -- declared operators: the same name, other definitions -----------------------------------------------

def _pick(kind, variant):
    """Two declared operators named alike that differ in ``kind`` (variant 0 and 1)."""
    if kind == "combine":
        return distscan.Operator("pick", (lambda a, b: np.maximum(a, b)) if variant == 0
                                 else (lambda a, b: np.minimum(a, b)), identity=0, kinds="i")
    if kind == "identity":
        return distscan.Operator("pick", lambda a, b: np.maximum(a, b), identity=[0, -7][variant], kinds="i")
    if kind == "closure":
        def make(k):
            return distscan.Operator("pick", lambda a, b: np.minimum(a + b, k), identity=0, kinds="i")
        return make([1000, 10][variant])
    if kind == "ufunc":
        return distscan.Operator("pick", [np.maximum, np.minimum][variant], identity=0, kinds="i", commutative=True)
    if kind == "commutative":
        return distscan.Operator("pick", np.maximum, identity=0, kinds="i", commutative=[True, False][variant])
    if kind == "state":  # a structured state against the value itself: carries of other sizes
        if variant == 0:
            return distscan.Operator("pick", _counted_combine, identity=lambda dt: np.zeros((), _COUNTED),
                                     state=_COUNTED, lift=_counted_lift, project=lambda s: s["s"])
        return distscan.Operator("pick", lambda a, b: a + b, identity=0, kinds="i")
    if kind == "projection":
        return distscan.Operator("pick", _counted_combine, identity=lambda dt: np.zeros((), _COUNTED),
                                 state=_COUNTED, lift=_counted_lift,
                                 project=[lambda s: s["s"], lambda s: s["n"]][variant])
    assert kind == "cuda"
    return distscan.Operator("pick", lambda a, b: np.maximum(a, b), identity=0, kinds="i",
                             cuda=["a > b ? a : b", "a < b ? a : b"][variant])


@pytest.mark.parametrize("kind", ["combine", "identity", "closure", "ufunc", "commutative", "state", "projection",
                                  "cuda"])
def test_declared_operators_sharing_a_name_are_refused(comm, kind):
    """Rank r declares variant r % 2 of an operator named "pick", calls in a row: with two variants
    among the ranks every rank raises the same ValueError naming the operator's definition (the
    plans compared the name alone: results were mixed, or the ranks hung); then the ranks agree on
    one variant and the call is right.  One rank: the result of its own variant."""
    g = np.random.default_rng(7).integers(0, 20, 4 * comm.size).astype(np.int64)
    mine = slice(4 * comm.rank, 4 * comm.rank + 4)
    for k in range(CALLS):
        op = _pick(kind, comm.rank % 2)  # made anew in each call, as a loop body would
        same_outcome(comm, lambda: distscan.scan(g[mine].copy(), op, comm=comm), must_fail=comm.size > 1,
                      match="operator definition differs across ranks" if comm.size > 1 else None, what=f"call {k}")
        same_outcome(comm, lambda: distscan.reduce(g[mine].copy(), op, comm=comm), must_fail=comm.size > 1,
                      match="operator definition differs across ranks" if comm.size > 1 else None,
                      what=f"reduce {k}")
    op = _pick(kind, 0)
    got = same_outcome(comm, lambda: distscan.scan(g[mine].copy(), op, comm=comm), must_fail=False)
    h = g.copy()
    if kind == "closure":
        ref = np.array([h[0]] + [0] * (len(h) - 1))
        for i in range(1, len(h)):
            ref[i] = min(ref[i - 1] + h[i], 1000)
    elif kind in ("state", "projection"):
        ref = np.zeros(len(h), np.int64)
        acc = 0
        for i, v in enumerate(h):
            acc = acc * 3 + v
            ref[i] = acc
    else:
        ref = np.maximum.accumulate(h)
    _expect(comm, got, ref[mine].astype(np.int64), what=kind)


def test_declared_operators_defined_alike_on_every_rank_agree(comm):
    """What every rank declares alike is one operator, however each made it: a lambda written on a
    line of its own per rank, a closure over an equal constant or array, a fresh object per call
    (and a function warmed up by many calls on some ranks only)."""
    table = np.array([3, 1, 2], np.int64)

    def make(weights):
        return lambda a, b: np.minimum(a + b, weights[0] * 100)

    g = np.random.default_rng(11).integers(0, 40, 4 * comm.size).astype(np.int64)
    mine = slice(4 * comm.rank, 4 * comm.rank + 4)
    ref = np.zeros(len(g), np.int64)
    for i, v in enumerate(g):
        ref[i] = v if i == 0 else min(ref[i - 1] + v, 300)
    for k in range(CALLS + 1):
        if k % 2:
            combine = make(table.copy())  # an equal array, a new object on every rank
        elif comm.rank % 2:
            combine = lambda a, b: np.minimum(a + b, table[0] * 100)  # noqa: E731 - a line of its own
        else:
            combine = lambda a, b: np.minimum(a + b, table[0] * 100)  # noqa: E731
        if comm.rank == 0:
            for _ in range(200):  # warm: CPython specialises what runs often (co_code stays the same)
                combine(np.int64(1), np.int64(2))
        op = distscan.Operator("limited", combine, identity=0, kinds="i")
        got = same_outcome(comm, lambda: distscan.scan(g[mine].copy(), op, comm=comm), must_fail=False,
                            what=f"call {k}")
        _expect(comm, got, ref[mine], what=f"call {k}")


# -- a combine that fails, or is wrong, on one rank only --------------------------------------------------

def _touchy(limit):
    def combine(a, b):
        if np.any(np.asarray(a) > limit) and np.any(np.asarray(b) < 0):
            raise FloatingPointError(f"past {limit}")
        return np.maximum(a, b)
    return combine


@pytest.mark.parametrize("where", ["first", "last", "seeded"])
@pytest.mark.parametrize("options", [{}, {"exclusive": True}, {"reverse": True}])
def test_a_combine_that_raises_on_one_rank(comm, where, options):
    """The combine raises where a large value meets a negative one: in one rank's own part (the
    first or the last in array order), or only once a rank is seeded by the ranks before it (its
    part is fine alone).  Every rank raises the same exception, named with the rank, calls in a
    row; then a call without the trouble is right."""
    op = distscan.Operator("touchy", _touchy(100), identity=-(2 ** 62), kinds="i")
    base = np.arange(4, dtype=np.int64) + 10 * comm.rank
    trouble = {"first": 0, "last": comm.size - 1, "seeded": None}[where]
    for k in range(CALLS):
        x = base.copy()
        if where == "seeded":  # the first rank in scan order holds the large value, the next a negative
            if comm.size == 1:
                x[:] = [500, 1, -3, 2] if not options.get("reverse") else [2, -3, 1, 500]
            elif comm.rank == (comm.size - 1 if options.get("reverse") else 0):
                x[:] = 500
            elif comm.rank == (comm.size - 2 if options.get("reverse") else 1):
                x[:] = -3
        elif comm.rank == trouble:
            x[:] = [500, -3, 500, -3]
        same_outcome(comm, lambda: distscan.scan(x, op, comm=comm, **options), must_fail=True, match="past 100",
                      what=f"{where} call {k}")
    got = same_outcome(comm, lambda: distscan.scan(base, op, comm=comm, **options), must_fail=False)
    g = np.concatenate(comm.allgather(base))
    h = g[::-1] if options.get("reverse") else g
    ref = np.maximum.accumulate(h)
    if options.get("exclusive"):
        ref = np.concatenate([[-(2 ** 62)], ref[:-1]])
    ref = ref[::-1] if options.get("reverse") else ref
    _expect(comm, got, ref[4 * comm.rank:4 * comm.rank + 4].astype(np.int64))


def test_a_combine_of_the_wrong_shape_on_one_rank(comm):
    """A combine that returns one item for a row of three (a reduction by mistake) where it meets
    items of 1000 and more, which the last rank alone holds: refused on every rank, naming the
    shapes, not broadcast over the part; calls in a row.  (A combine that differs by rank in its
    code or its closure is another definition: refused as such.)"""
    def combine(a, b):
        c = np.maximum(a, b)
        return c.reshape(-1)[:1] if c.ndim and c.size > 1 and np.any(c >= 1000) else c

    op = distscan.Operator("shapely", combine, identity=-np.inf, kinds="f")
    x = np.tile((np.arange(5.0) + 10 * comm.rank + (1000 if comm.rank == comm.size - 1 else 0))[:, None], (1, 3))
    for k in range(CALLS):
        same_outcome(comm, lambda: distscan.scan(x, op, comm=comm), must_fail=True,
                      match="must work element by element", what=f"call {k}")


def test_a_combine_of_another_dtype_is_cast(comm):
    """A combine that returns float64 or a list for integer states is read in the state's dtype,
    alike on every rank (the documented contract: element by element)."""
    ops = [distscan.Operator("to float", lambda a, b: (a + b).astype(np.float64), identity=0, kinds="i"),
           distscan.Operator("to list", lambda a, b: np.maximum(a, b).tolist(), identity=-(2 ** 62), kinds="i")]
    g = np.random.default_rng(3).integers(-9, 9, 3 * comm.size).astype(np.int64)
    mine = slice(3 * comm.rank, 3 * comm.rank + 3)
    for k in range(CALLS):
        op = ops[k % 2]
        got = same_outcome(comm, lambda: distscan.scan(g[mine].copy(), op, comm=comm), must_fail=False)
        ref = np.cumsum(g) if op is ops[0] else np.maximum.accumulate(g)
        _expect(comm, got, ref[mine], what=f"call {k}")


# -- check=True on one rank only, warm and cold ------------------------------------------------------------

def _clamped(check):
    # associative on items >= 0 only: min(min(a + b, 10) + c, 10) == min(a + min(b + c, 10), 10)
    return distscan.Operator("clamped", lambda a, b: np.minimum(a + b, 10), identity=0, kinds="i", check=check)


_BAD = np.array([5, 10, -5, 7, -8, 9, -3, 10, 4, -9] * 3, np.int64)


@pytest.mark.parametrize("checker", ["all", "one"])
def test_check_samples_every_call(comm, checker):
    """``check=True`` (every rank, or the last alone): good inputs pass and scan right; a rank that
    checks and holds inputs that are not associative makes every rank raise the same ValueError,
    in the first call and in every warm call after good ones (calls used to take the cached kind's
    route, which skipped the check); another rank's inputs are its own to check."""
    checks = checker == "all" or comm.rank == comm.size - 1
    op = _clamped(checks)
    good = (np.arange(30, dtype=np.int64) + comm.rank) % 4
    g = np.concatenate(comm.allgather(good))
    ref = np.zeros(len(g), np.int64)
    for i, v in enumerate(g):
        ref[i] = v if i == 0 else min(ref[i - 1] + v, 10)
    for k in range(CALLS):
        got = same_outcome(comm, lambda: distscan.scan(good, op, comm=comm), must_fail=False, what=f"good {k}")
        _expect(comm, got, ref[30 * comm.rank:30 * comm.rank + 30], what=f"good {k}")
        x = _BAD.copy() if comm.rank == comm.size - 1 else good.copy()
        same_outcome(comm, lambda: distscan.scan(x, op, comm=comm), must_fail=True, match="not associative",
                      what=f"bad {k}")


def test_check_refuses_an_identity_that_is_not_neutral_on_one_rank(comm):
    """An identity that is not neutral for the inputs of one rank (a max from 0, negative items on
    the last rank only): ``check=True`` refuses it on every rank, calls in a row."""
    op = distscan.Operator("max from zero", lambda a, b: np.maximum(a, b), identity=0, kinds="i", check=True)
    x = np.arange(1, 9, dtype=np.int64) * (-1 if comm.rank == comm.size - 1 else 1)
    for k in range(CALLS):
        same_outcome(comm, lambda: distscan.scan(x, op, comm=comm), must_fail=True, match="is not neutral",
                      what=f"call {k}")


def test_check_passes_float_operators_that_are_associative_up_to_rounding(comm):
    """``check=True`` on a float sum and on the running mean (a structured float state) of random
    data: rounding is not a failure (groupings that differ by an ulp of the largest term were
    refused in about one call in five, and the running mean's by one ulp always)."""
    fsum = distscan.Operator("float sum", lambda a, b: a + b, identity=0.0, kinds="f", check=True)
    mean = distscan.Operator("running mean", _mean_combine, identity=lambda dt: np.zeros((), _MEAN), state=_MEAN,
                             lift=_mean_lift, project=lambda s: s["m"], check=True)
    for k in range(8):
        rng = np.random.default_rng(900 + k)
        g = rng.standard_normal(40 * comm.size) * 10.0 ** rng.integers(-3, 4)
        mine = slice(40 * comm.rank, 40 * comm.rank + 40)
        got = same_outcome(comm, lambda: distscan.scan(g[mine].copy(), fsum, comm=comm), must_fail=False,
                            what=f"sum {k}")
        _expect(comm, got, np.cumsum(g)[mine], 1e-9, what=f"sum {k}")
        got = same_outcome(comm, lambda: distscan.scan(g[mine].copy(), mean, comm=comm), must_fail=False,
                            what=f"mean {k}")
        _expect(comm, got, (np.cumsum(g) / np.arange(1, len(g) + 1))[mine], 1e-9, what=f"mean {k}")


# -- parts of every kind, options, calls in a row -------------------------------------------------------------

PART_KINDS = ["contiguous", "strided", "reversed", "list", "readonly", "memmap", "scalar", "empty"]


def _part(g, kind, tmp_path, name):
    if kind == "scalar":
        return g[0].item()
    return part_as(g, kind, tmp_path, name)


def _run_sequence(comm, tmp_path, key, steps):
    """The calls of ``steps``, each part dropped and collected after its call.  What the process
    held before is frozen meanwhile (``gc.freeze``): each collection looks at what the sequence
    made, not at the whole heap (numba's and hypothesis's), which took 0.2 s a collection serially
    and 0.5-0.8 s per rank at 5 ranks on the 2-core VM."""
    gc.freeze()
    try:
        _run_steps(comm, tmp_path, key, steps)
    finally:
        gc.unfreeze()


def _run_steps(comm, tmp_path, key, steps):
    op, _, _, _, tol = _operators()[key]
    for k, step in enumerate(steps):
        kinds = [step["kinds"][r % len(step["kinds"])] for r in range(comm.size)]
        counts = [0 if kd == "empty" else 1 if kd == "scalar" else c
                  for kd, c in zip(kinds, [step["counts"][r % len(step["counts"])] for r in range(comm.size)])]
        rng = np.random.default_rng(step["seed"])
        g = _data(rng, key, sum(counts))
        mine = _mine(comm, counts)
        options = {name: step[name] for name in ("exclusive", "reverse", "include_initial") if step[name]}
        if step["initial"] is not None:
            options["initial"] = np.asarray(step["initial"], g.dtype)[()]
        if options.get("exclusive"):
            options.pop("include_initial", None)
        ref = _reference(key, g, exclusive=options.get("exclusive", False), reverse=options.get("reverse", False),
                         initial=options.get("initial"), include_initial=options.get("include_initial", False))
        if options.get("include_initial"):  # the extra item lies on the first rank in scan order
            first = comm.size - 1 if options.get("reverse") else 0
            lo = sum(counts[:comm.rank]) + (0 if options.get("reverse") or comm.rank == first else 1)
            mine = slice(lo, lo + counts[comm.rank] + (comm.rank == first))
        x = _part(g[_mine(comm, counts)], kinds[comm.rank], tmp_path, f"p{k}")
        what = f"{key} call {k}: {kinds} {counts} {options}"
        got = same_outcome(comm, lambda: distscan.scan(x, op, comm=comm, **options), must_fail=False, what=what)
        want = ref[mine]
        # a Python scalar gives a scalar (unless include_initial's item lies beside it)
        scalar = kinds[comm.rank] == "scalar" and not (options.get("include_initial") and comm.rank == (
            comm.size - 1 if options.get("reverse") else 0))
        all_ranks_ok(comm, lambda: np.testing.assert_equal(np.ndim(got[1]) == 0, scalar, err_msg=what))
        _expect(comm, ("ok", np.atleast_1d(np.asarray(got[1]))) if got[0] == "ok" else got, want, tol, what=what)
        del x
        gc.collect()


@pytest.mark.parametrize("key", OPS)
def test_declared_parts_of_every_kind_in_a_row(comm, tmp_path, key):
    """Contiguous calls first (caches warm), then each rank passes its part as a kind of its own
    (a view, a list, a read-only array, a memmap, a Python scalar, an empty part) call by call,
    with exclusive, reverse, initial and include_initial."""
    steps = [dict(seed=k, counts=[6], kinds=["contiguous"], exclusive=False, reverse=False, initial=None,
                  include_initial=False) for k in range(CALLS)]
    for k in range(2 * len(PART_KINDS)):
        steps.append(dict(seed=100 + k, counts=[5, 1, 7], kinds=PART_KINDS[k % len(PART_KINDS):] + PART_KINDS,
                          exclusive=k % 4 == 1, reverse=k % 3 == 2, initial=[None, 2, None][k % 3],
                          include_initial=k % 5 == 3))
    _run_sequence(comm, tmp_path, key, steps)


PROFILE = settings(max_examples=10, deadline=None, derandomize=True, database=None,
                   phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck),
                   print_blob=False)


@st.composite
def sequences(draw):
    key = draw(st.sampled_from(OPS))
    steps = draw(st.lists(st.fixed_dictionaries({
        "seed": st.integers(0, 2 ** 31),
        "counts": st.lists(st.sampled_from([0, 1, 2, 5, 9]), min_size=3, max_size=3),
        "kinds": st.lists(st.sampled_from(PART_KINDS), min_size=3, max_size=3),
        "exclusive": st.booleans(), "reverse": st.booleans(), "include_initial": st.booleans(),
        "initial": st.sampled_from([None, None, 0, 3]),
    }), min_size=CALLS, max_size=CALLS + 2))
    return key, steps


# Run alone (-k) or first in its process, the test compiles each rank's loops of the saturating
# add for the layouts and options drawn (3 to 7 per rank, 1-2 s each serially, 4-6 s each with 8
# ranks on the 2-core VM: 77 s at 8 ranks there, load 9); after test_declared_parts_of_every_kind_in_a_row
# most are compiled (17 s at 5 ranks).  The file's 120 s would leave no margin for the first case.
@pytest.mark.timeout(240)
@PROFILE
@given(seq=sequences())
def test_sequences_of_declared_calls_where_ranks_differ(comm, tmp_path, seq):
    """Drawn sequences of calls of one declared operator (the draws are the same on every rank):
    each rank's part of a kind and a length of its own in each call, with the options drawn."""
    key, steps = seq
    _run_sequence(comm, tmp_path, key, steps)


def test_segments_with_a_declared_operator_are_refused_on_every_rank(comm):
    """``segments=`` takes no declared operator (docs/operators.md): refused on every rank with one
    message, whether every rank passes flags or one rank alone; the call after is right."""
    ops = _operators()
    x = np.arange(6, dtype=np.int64) + comm.rank
    flags = np.zeros(6, bool)
    flags[::3] = True
    for key in ("saturating", "imax", "counted"):
        for k in range(CALLS):
            seg = flags if (k != 1 or comm.rank == comm.size - 1) else None
            same_outcome(comm, lambda: distscan.scan(x, ops[key][0], segments=seg, comm=comm), must_fail=True,
                          match="not supported" if comm.size == 1 or k != 1 else None, what=f"{key} call {k}")
    g = np.concatenate(comm.allgather(x))
    _expect(comm, outcome_of(lambda: distscan.scan(x, ops["imax"][0], comm=comm)),
            np.maximum.accumulate(g)[6 * comm.rank:6 * comm.rank + 6])


def test_an_operator_redefined_under_its_name_in_later_calls(comm):
    """A loop that declares "step" anew in each pass (another limit, the old one dropped and
    collected, so that its id may come back): each call computes with the operator it was given,
    on every rank, never one cached from an earlier pass."""
    g = np.random.default_rng(5).integers(1, 9, 5 * comm.size).astype(np.int64)
    mine = slice(5 * comm.rank, 5 * comm.rank + 5)
    for k, limit in enumerate([7, 30, 12, 7, 1000, 3]):
        op = distscan.Operator("step", (lambda lim: lambda a, b: np.minimum(a + b, lim))(limit), identity=0,
                               kinds="i")
        got = same_outcome(comm, lambda: distscan.scan(g[mine].copy(), op, comm=comm), must_fail=False)
        ref = np.zeros(len(g), np.int64)
        for i, v in enumerate(g):
            ref[i] = v if i == 0 else min(ref[i - 1] + v, limit)
        _expect(comm, got, ref[mine], what=f"pass {k}, limit {limit}")
        del op
        gc.collect()
