"""Plain scans (no segments, no recurrences) called several times in a row while the ranks differ:
every call goes through the call kinds (``distscan._kinds``), the per-communicator plans
(``distscan.dist.plan``) and the lean paths (``ScanPlan.one_rank``, ``_fused_scan_then_add``,
``backends.cpu.scan_lean``) from its second or third repetition on, so each scenario here is
repeated at least :data:`REPS` times with new data.

In one call, ranks pass parts of different kinds (contiguous, strided, reversed views, lists,
read-only, byte-swapped, masked arrays, subclasses of ndarray, objects with ``__array__`` or
``__dlpack__``, Python scalars, 0-d arrays, Fortran 2-D parts, ``np.matrix``), empty parts,
``out=`` on some ranks only (of the result dtype, narrower, aliasing the input exactly or shifted
by one), ``dtype=`` on some ranks; values that wrap (integer overflow, uint64 near 2**64), NaN,
infinities and signed zeros, bool, float16 and complex; ``initial=`` of another type, exclusive
scans with ``initial``, ``include_initial`` with ``out=``, 2-D parts along every axis; a failure on
one rank in the middle of a sequence; results held across calls (views, weak references), inputs
never modified, memory of a dropped array reused; two communicators (``Dup`` and a ``Split`` in
reversed rank order) in turn; two threads, each on its own communicator, at the same time.

Every result equals NumPy on the concatenation of the ranks' parts, bit for bit (the float data
are small whole numbers, halves, signed zeros, infinities and NaN: every association of their sums
and products gives the same bits), or the call raises the same exception on every rank.

Two defects found while writing this file are mended, and their tests stay (the axis of a NumPy
integer type on one rank; a float axis taken once the kind was warm).  Complex products' signs of
zero past a rank boundary are a documented difference (docs/api.md): compared by value here.

Written for any rank count (serially and under ``mpiexec -n K python -m pytest --with-mpi``).
"""

from __future__ import annotations

import gc
import threading
import weakref

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import distscan  # noqa: E402
from distscan import _kinds  # noqa: E402
from tests.support.ranks import all_ranks_ok  # noqa: E402
from tests.support.reference import numpy_result_dtype, reference_scan  # noqa: E402
from tests.support.kinds import DLPack, part_as  # noqa: E402

try:
    from mpi4py import MPI
except ImportError:  # pragma: no cover - the comm fixture skips then
    MPI = None

pytestmark = [pytest.mark.anyranks, pytest.mark.timeout(120)]

REPS = 4  # calls of one scenario in a row: the lean paths start at the second or third

PROFILE = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                   phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck),
                   print_blob=False)


# -- parts, outcomes and comparisons ------------------------------------------------------------------

PART_KINDS = ["contiguous", "contiguous", "strided", "reversed", "list", "readonly", "byteswapped", "masked",
              "subclass", "array_like", "dlpack"]


def _values(x):
    """What a part holds, as a new NumPy array."""
    if isinstance(x, DLPack):
        return np.from_dlpack(x.a).copy()
    if isinstance(x, np.ma.MaskedArray):
        return np.ma.getdata(x).copy()
    return np.array(x, copy=True)


def _outcome(fn):
    try:
        return "ok", fn()
    except Exception as exc:  # noqa: BLE001 - compared across ranks
        return "raised", f"{type(exc).__name__}: {exc}"


def _assert_same_bits(got, want, what=""):
    """Equal dtype, shape and values; NaN where NumPy has NaN; the sign of every zero (and of every
    other number that is not NaN)."""
    got = np.asarray(got)
    assert got.dtype == want.dtype, (what, got.dtype, want.dtype)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    np.testing.assert_array_equal(got, want, err_msg=what)
    if want.dtype.kind in "fc":
        for part in ((got.real, want.real), (got.imag, want.imag)) if want.dtype.kind == "c" else ((got, want),):
            number = ~np.isnan(part[1])  # a NaN's sign means nothing (NumPy does not define it)
            assert np.array_equal(np.signbit(part[0])[number], np.signbit(part[1])[number]), \
                (what, "signs of zeros", got, want)


def _bounds(counts, rank, extra_first=0):
    lo = int(sum(counts[:rank])) + (extra_first if rank else 0)
    return lo, int(sum(counts[:rank + 1])) + extra_first


# -- drawn sequences of plain calls -------------------------------------------------------------------

OPS = {"sum": ["int64", "int32", "uint8", "uint64", "float64", "float32", "float16", "bool", "complex128"],
       "prod": ["int64", "int8", "float64", "complex128"],
       "max": ["int64", "uint64", "float64", "float32", "bool"],
       "min": ["int16", "float64", "bool"]}
OUT_MODES = [None, None, "same dtype", "narrower", "is the input", "input shifted"]


def _data(rng, dtype, op, n):
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.integers(0, 2, n).astype(bool)
    if dt == np.uint64:  # near 2**64: sums wrap
        return (np.uint64(2**64 - 1) - rng.integers(0, 4, n).astype(np.uint64)) if op != "prod" else \
            rng.integers(0, 3, n).astype(dt)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        if op == "sum" and dt.itemsize <= 2:  # near the top: sums wrap
            return rng.integers(info.max // 2, info.max, n, endpoint=True).astype(dt)
        if op == "prod":  # products of these wrap in int8 and int64 alike
            return rng.choice(np.array([-3, -1, 1, 2, 3, 127 if dt.itemsize == 1 else 2**31 + 1]), n).astype(dt)
        return rng.integers(max(info.min, -50), min(info.max, 50), n).astype(dt)
    if dt.kind == "c":
        pool = [1, -1, 1j, 1 + 1j, -0.0, 2, complex(0, -0.0)]
        if op == "prod":  # complex products' signs of zero: docs/api.md
            pool = [1, -1, 1j, 1 + 1j, 2, -1j, complex(0, -0.0)]
        return rng.choice(np.array(pool), n).astype(dt)
    # floats: every association gives the same bits (small whole numbers and halves, signed zeros,
    # infinities, NaN); products stay far from overflow
    pool = [-0.0, 0.0, -0.0, 1.0, -2.0, 0.5, 3.0, np.inf, -np.inf, np.nan]
    if op == "prod":
        pool = [-0.0, 1.0, -1.0, 2.0, 0.5, -0.5, np.inf, np.nan, 1.0, -1.0]
    if op == "sum" and dt == np.float16:
        pool = [-0.0, 1.0, -2.0, 0.5, 3.0]  # float16 sums accumulate in float32: no inf, whole sums
    return rng.choice(np.array(pool), n).astype(dt)


@st.composite
def _calls(draw):
    op = draw(st.sampled_from(sorted(OPS)))
    dtype = draw(st.sampled_from(OPS[op]))
    exclusive = draw(st.booleans())
    initial = None
    if draw(st.booleans()):
        # a value that needs a cast: a Python int for floats, a NumPy int32 for int64, True for bool sums
        initial = draw(st.sampled_from([np.int32(2), 3, 1.0, True, np.float32(-0.0)]))
        if np.dtype(dtype).kind == "b" and op in ("max", "min"):
            initial = True
        if np.dtype(dtype).kind in "iu" and isinstance(initial, float):
            initial = 2
        if np.dtype(dtype) == np.uint64 or np.dtype(dtype).kind == "u" and np.asarray(initial).dtype.kind != "u":
            initial = np.uint8(1)
    return {"op": op, "dtype": dtype, "exclusive": exclusive, "initial": initial,
            "seed": draw(st.integers(0, 2**31)),
            "counts": draw(st.lists(st.sampled_from([0, 1, 2, 5, 9]), min_size=4, max_size=4)),
            "kinds": draw(st.lists(st.sampled_from(PART_KINDS), min_size=4, max_size=4)),
            "outs": draw(st.lists(st.sampled_from(OUT_MODES), min_size=4, max_size=4)),
            "named": draw(st.booleans())}


def _run_drawn(call, comm, rep):
    rank, size = comm.rank, comm.size
    rng = np.random.default_rng([call["seed"], rep])
    counts = [call["counts"][(r + rep) % 4] for r in range(size)]
    op, dtype = call["op"], np.dtype(call["dtype"])
    g = _data(rng, dtype, op, sum(counts))
    lo, hi = _bounds(counts, rank)
    want = reference_scan(g, op, exclusive=call["exclusive"], initial=call["initial"])[lo:hi]
    if dtype != np.float16:  # float16 sums accumulate in float32 (documented); else NumPy's dtype
        assert want.dtype == numpy_result_dtype(op, dtype), (want.dtype, op, dtype)
    kind = call["kinds"][(rank + rep) % 4]
    x = part_as(g[lo:hi].copy(), kind)
    before = _values(x)
    mode = call["outs"][(rank + rep) % 4]
    out, expect_input = None, before
    if mode == "same dtype":
        out = np.full(want.shape, 7, want.dtype)
    elif mode == "narrower" and want.dtype in (np.int64, np.float64) and dtype == want.dtype:
        out = np.full(want.shape, 7, np.int32 if want.dtype == np.int64 else np.float32)
        want = want.astype(out.dtype)  # NumPy computes in the wide dtype and casts each result
    elif mode in ("is the input", "input shifted") and type(x) is np.ndarray and x.dtype == want.dtype \
            and x.flags.writeable and x.ndim == 1 and x.size:
        if mode == "is the input":
            out = x
        else:  # the part one element into a buffer, out one element before it (or after it)
            buf = np.zeros(x.size + 2, x.dtype)
            buf[1:-1] = x
            shift = 1 if rep % 2 else -1
            x, out = buf[1:-1], buf[1 + shift:buf.size - 1 + shift]
        expect_input = None  # written through out
    kw = {"exclusive": call["exclusive"], "initial": call["initial"], "out": out, "comm": comm}
    if call["named"] and not call["exclusive"] and call["initial"] is None:
        fn = {"sum": distscan.cumsum, "prod": distscan.cumprod, "max": distscan.cummax, "min": distscan.cummin}[op]
        outcome = _outcome(lambda: fn(x, out=out, comm=comm))
    else:
        outcome = _outcome(lambda: distscan.scan(x, op, **kw))
    what = f"call {call}, repetition {rep}, kind {kind}, out {mode}"

    def check():
        assert outcome[0] == "ok", (what, outcome[1])
        got = outcome[1]
        if out is not None:
            assert got is out, (what, "out= not returned")
        if kind == "masked" and out is None:
            assert isinstance(got, np.ma.MaskedArray), (what, type(got))
            got = np.ma.getdata(got)
        if op == "prod" and want.dtype.kind == "c":
            # the signs of zero components of complex products depend on the association (as the
            # rounding of float sums does): values only
            np.testing.assert_array_equal(np.asarray(got), want, err_msg=what)
            assert np.asarray(got).dtype == want.dtype
        else:
            _assert_same_bits(np.asarray(got), want, what)
        if expect_input is not None:
            _assert_same_bits(_values(x), expect_input, what + ": the input changed")
    all_ranks_ok(comm, check)
    return outcome[1]


@PROFILE
@given(sequence=st.lists(_calls(), min_size=2, max_size=3))
def test_drawn_plain_calls_in_a_row_with_ranks_that_differ(sequence, comm):
    """Each drawn call :data:`REPS` times in a row (parts, outs and counts rotate between ranks from one
    repetition to the next), then the results of all of them are still what they were."""
    held = []
    for call in sequence:
        for rep in range(REPS):
            got = _run_drawn(call, comm, rep)
            if isinstance(got, np.ndarray):
                held.append((got, np.array(got, copy=True)))
    all_ranks_ok(comm, lambda: [_assert_same_bits(y, snap, "a held result changed") for y, snap in held])


# -- the NaN-aware and Array API names ----------------------------------------------------------------

@pytest.mark.parametrize("name", ["nancumsum", "nancumprod", "cumulative_sum", "cumulative_prod"])
def test_nan_aware_and_array_api_names(comm, name):
    rank, size = comm.rank, comm.size
    fn, ref = getattr(distscan, name), _numpy(name)
    for rep in range(REPS):
        rng = np.random.default_rng([7, rep])
        counts = [(r + rep) % 3 * 3 for r in range(size)]
        g = rng.choice(np.array([np.nan, -0.0, 1.0, -0.5, 2.0, -0.0]), sum(counts))
        if rep % 2 and name.startswith("cumulative"):
            g = rng.integers(0, 2, sum(counts)).astype(bool)
        lo, hi = _bounds(counts, rank)
        # (dlpack: cumulative_sum/prod took an object without ndim as 0-d and refused it, 2026-11-25)
        x = part_as(g[lo:hi], ["contiguous", "strided", "list", "readonly", "dlpack"][(rank + 2 * rep) % 5])
        y = fn(x, comm=comm)
        all_ranks_ok(comm, lambda: _assert_same_bits(np.asarray(y), ref(g)[lo:hi], f"{name} repetition {rep}"))


@pytest.mark.parametrize("name", ["nancumsum", "nancumprod"])
@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool"])
def test_nan_aware_names_with_an_integer_dtype_drop_nan_before_converting(comm, name, dtype):
    """numpy.nancumsum(x, dtype=int64) replaces NaN with 0 (nancumprod with 1) and then converts;
    distscan converted first (NaN became INT64_MIN, summed: 2026-11-25).  Warm calls in a row, the
    plain and the segmented scan, parts of several kinds."""
    rank, size = comm.rank, comm.size
    fn, ref = getattr(distscan, name), _numpy(name)
    for rep in range(REPS):
        rng = np.random.default_rng([11, rep])
        counts = [(r + rep) % 3 * 3 + 1 for r in range(size)]
        g = rng.choice(np.array([np.nan, 1.0, 2.0, 3.0, 1.5]), sum(counts))
        lo, hi = _bounds(counts, rank)
        x = part_as(g[lo:hi], ["contiguous", "strided", "readonly"][(rank + rep) % 3])
        y = fn(x, dtype=dtype, comm=comm)
        all_ranks_ok(comm, lambda: _assert_same_bits(y, ref(g, dtype=dtype)[lo:hi], f"{name} {dtype} {rep}"))
        flags = np.zeros(sum(counts), bool)
        flags[::4] = True
        ys = fn(x, dtype=dtype, segments=flags[lo:hi], comm=comm)
        want = np.concatenate([ref(part, dtype=dtype) for part in np.split(g, np.flatnonzero(flags)[1:])])
        all_ranks_ok(comm, lambda: _assert_same_bits(ys, want[lo:hi], f"segmented {name} {dtype} {rep}"))


# -- scalars and 0-d parts ----------------------------------------------------------------------------

def test_python_scalars_numpy_scalars_and_one_element_parts(comm):
    """The write-offset idiom ``exclusive_scan(n_local)``: each rank passes its count as a Python int,
    a NumPy scalar or a one-element array (rotating), a few times in a row; 0-d arrays take
    ``axis=None``.  A scalar gives a NumPy scalar; ``out=`` a 0-d array."""
    rank, size = comm.rank, comm.size
    for rep in range(REPS + 1):
        counts = np.array([(3 * r + rep) % 5 for r in range(size)], np.int64)
        want = np.concatenate([[0], np.cumsum(counts)[:-1]])[rank]
        k = (rank + rep) % 4
        if k == 3 and rep % 2 == 0:
            k = 2  # a 0-d part only in the calls where every rank passes axis=None
        v = int(counts[rank])
        x = [v, np.int64(v), np.array([v]), np.array(v)][k]
        out = np.full((1,) if k == 3 else (), -1, np.int64) if rep == 2 else None
        kw = {"axis": None} if rep % 2 else {}
        y = distscan.exclusive_scan(x, comm=comm, out=out if k != 2 else None, **kw)

        def check():
            got = np.asarray(y).reshape(-1)
            assert got.tolist() == [want], (rep, k, y, want)
            assert np.asarray(y).dtype == np.int64, (rep, k, y)
            if k in (0, 1) and (out is None):
                assert isinstance(y, np.int64), (rep, k, type(y))
            if out is not None and k != 2:
                assert y is out
        all_ranks_ok(comm, check)
        f = distscan.cumsum(float(rank) - 0.5 if rep % 2 else -0.0, comm=comm)
        want_f = np.cumsum(np.array([float(r) - 0.5 if rep % 2 else -0.0 for r in range(size)]))[rank]
        all_ranks_ok(comm, lambda: _assert_same_bits(np.asarray(f), np.asarray(want_f), f"float scalar {rep}"))


def test_a_zero_d_part_on_axis_0_is_refused_on_every_rank(comm):
    """NumPy refuses axis 0 of a 0-d array (AxisError); one rank's 0-d part fails the call everywhere,
    and the calls after it work."""
    rank, size = comm.rank, comm.size
    for rep in range(REPS):
        bad = rep % size
        x = np.array(5) if rank == bad else np.array([5])
        outcome = _outcome(lambda: distscan.cumsum(x, comm=comm))
        seen = comm.allgather(outcome[0] if outcome[0] == "ok" else outcome)
        all_ranks_ok(comm, lambda: (np.testing.assert_equal(len(set(map(str, seen))), 1),
                                    np.testing.assert_equal(outcome[0], "raised")))
        assert "AxisError" in outcome[1]
        y = distscan.cumsum(np.array([5]), comm=comm)
        all_ranks_ok(comm, lambda: np.testing.assert_array_equal(y, [5 * (rank + 1)]))


@pytest.mark.parametrize("name", ["cumulative_sum", "cumulative_prod"])
@pytest.mark.parametrize("part", ["0-d", "scalar", "2-D, axis None"])
def test_the_array_api_names_refuse_one_rank_s_part_on_every_rank(comm, name, part):
    """cumulative_sum/prod refuse 0-d parts and, without an axis, parts of more than one
    dimension; one such rank raised alone and the others hung in the exchange (2026-11-25).
    Now every rank raises its ValueError, and the calls after it work."""
    rank, size = comm.rank, comm.size
    fn = getattr(distscan, name)
    odd = {"0-d": np.array(5), "scalar": 5, "2-D, axis None": np.ones((2, 2), np.int64)}[part]
    for rep in range(REPS):
        bad = rep % size
        x = odd if rank == bad else np.array([1, 2], np.int64)
        outcome = _outcome(lambda: fn(x, comm=comm))
        seen = comm.allgather(outcome)
        all_ranks_ok(comm, lambda: (np.testing.assert_equal(len(set(map(str, seen))), 1),
                                    np.testing.assert_equal(outcome[0], "raised")))
        assert "ValueError" in outcome[1] and name in outcome[1], outcome
        y = fn(np.array([2], np.int64), comm=comm)
        all_ranks_ok(comm, lambda: np.testing.assert_array_equal(
            y, [2 * (rank + 1)] if name == "cumulative_sum" else [2 ** (rank + 1)]))


@pytest.mark.parametrize("kind", ["list", "tuple", "scalar"])
def test_an_out_that_would_be_copied_is_refused_on_every_rank(comm, kind):
    """out= as a list was converted to a new array, written, and dropped: the call returned the
    untouched list (2026-11-25).  NumPy says "output must be an array"; now every rank raises a
    TypeError when one rank's out would be a copy, and out= over the buffer protocol (array.array)
    is written in place."""
    import array

    rank, size = comm.rank, comm.size
    for rep in range(REPS):
        bad = rep % size
        x = np.arange(1, 4, dtype=np.float64)
        out = {"list": [0.0] * 3, "tuple": (0.0,) * 3, "scalar": 0.0}[kind] if rank == bad else np.empty(3)
        outcome = _outcome(lambda: distscan.cumsum(x, out=out, comm=comm))
        seen = comm.allgather(outcome)
        all_ranks_ok(comm, lambda: (np.testing.assert_equal(len(set(map(str, seen))), 1),
                                    np.testing.assert_equal(outcome[0], "raised")))
        assert "TypeError" in outcome[1] and "copied" in outcome[1], outcome
    held = array.array("d", [0.0] * 3)
    distscan.cumsum(np.arange(1, 4, dtype=np.float64), out=held, comm=comm)
    all_ranks_ok(comm, lambda: np.testing.assert_array_equal(np.asarray(held), 6.0 * rank + np.array([1.0, 3.0, 6.0])))


# -- 2-D parts along every axis ----------------------------------------------------------------------

TWO_D_KINDS = ["C", "F", "matrix", "reversed columns", "list"]


@pytest.mark.parametrize("axis", [0, -2, 1, -1, None])
def test_two_d_parts_along_every_axis(comm, axis):
    rank, size = comm.rank, comm.size
    for rep in range(REPS):
        rng = np.random.default_rng([11, rep])
        counts = [0 if (r + rep) % 3 == 2 else 1 + (r + rep) % 3 for r in range(size)]
        g = rng.integers(-9, 10, (sum(counts), 3))
        lo, hi = _bounds(counts, rank)
        p = g[lo:hi].copy()
        kind = TWO_D_KINDS[(rank + rep) % len(TWO_D_KINDS)]
        x = {"C": p, "F": np.asfortranarray(p), "matrix": np.asmatrix(p), "list": p.tolist() if p.size else p,
             "reversed columns": p[:, ::-1].copy()[:, ::-1]}[kind]
        if axis in (0, -2):
            want = np.cumsum(g, axis=0)[lo:hi]
        elif axis is None:
            want = np.cumsum(g)[3 * lo:3 * hi]
        else:
            want = np.cumsum(p, axis=1)
        out = np.full(want.shape, 99, want.dtype, order="F") if rep % 2 and kind != "matrix" else None
        y = distscan.cumsum(x, axis=axis, out=out, comm=comm)

        def check():
            if out is not None:
                assert y is out
            if kind == "matrix":
                assert isinstance(y, np.matrix), type(y)
            _assert_same_bits(np.asarray(y).reshape(want.shape), want, f"axis {axis} {kind} repetition {rep}")
            if axis is not None:
                assert np.asarray(y).shape == want.shape
        all_ranks_ok(comm, check)


# -- include_initial with out on some ranks --------------------------------------------------------

def _numpy(name):
    """NumPy's function ``name``; NumPy 1.x (the floor CI's) has no ``cumulative_sum`` and
    ``cumulative_prod``: their definition from ``cumsum`` and ``cumprod`` then."""
    if hasattr(np, name):
        return getattr(np, name)
    scan, identity = {"cumulative_sum": (np.cumsum, 0), "cumulative_prod": (np.cumprod, 1)}[name]

    def cumulative(g, include_initial=False):
        r = scan(g)
        return np.concatenate([np.full(1, identity, r.dtype), r]) if include_initial else r
    return cumulative


@pytest.mark.parametrize("op", ["sum", "prod"])
def test_include_initial_with_out_on_some_ranks(comm, op):
    rank, size = comm.rank, comm.size
    fn, ref = (distscan.cumulative_sum, _numpy("cumulative_sum")) if op == "sum" else \
        (distscan.cumulative_prod, _numpy("cumulative_prod"))
    for rep in range(REPS + 1):
        rng = np.random.default_rng([13, rep])
        counts = [0 if (r + rep) % 4 == 3 else 1 + (r + rep) % 4 for r in range(size)]
        g = rng.choice(np.array([-0.0, 1.0, -1.0, 2.0, 0.5]), sum(counts)).astype(np.float32 if rep % 2 else np.float64)
        lo, hi = _bounds(counts, rank, extra_first=1)
        want = ref(g, include_initial=True)[lo:hi]
        part = g[sum(counts[:rank]):sum(counts[:rank + 1])].copy()
        out = np.full(want.shape, 7, want.dtype) if (rank + rep) % 2 else None
        y = fn(part, include_initial=True, out=out, comm=comm)

        def check():
            if out is not None:
                assert y is out
            _assert_same_bits(y, want, f"{op} repetition {rep}")
        all_ranks_ok(comm, check)


# -- dtype= on some ranks ----------------------------------------------------------------------------

def test_dtype_on_some_ranks(comm):
    """``dtype=`` that names the default on some ranks only changes nothing; one that changes the
    computation on some ranks only fails the call on every rank with one message; the calls after it
    are right."""
    rank, size = comm.rank, comm.size
    g = np.arange(-5, 5 * size - 5, dtype=np.int32)
    x = g[5 * rank:5 * rank + 5]
    for rep in range(REPS):
        y = distscan.cumsum(x, dtype=[None, np.int64, "int64", np.dtype("int64")][(rank + rep) % 4], comm=comm)
        all_ranks_ok(comm, lambda: _assert_same_bits(y, np.cumsum(g)[5 * rank:5 * rank + 5], f"repetition {rep}"))
    if size > 1:
        for rep in range(REPS):
            outcome = _outcome(lambda: distscan.cumsum(x, dtype=np.float64 if rank == rep % size else None,
                                                       comm=comm))
            seen = comm.allgather(outcome)
            all_ranks_ok(comm, lambda: (np.testing.assert_equal(outcome[0], "raised"),
                                        np.testing.assert_equal(len(set(seen)), 1)))
            y = distscan.cumsum(x, comm=comm)
            all_ranks_ok(comm, lambda: _assert_same_bits(y, np.cumsum(g)[5 * rank:5 * rank + 5], "after"))


# -- a failure on one rank in the middle of a sequence -------------------------------------------------

FAILURES = {
    "non-associative ufunc": lambda x: ((x,), {"op": np.subtract}),
    "object part": lambda x: ((x.astype(object),), {}),
    "axis out of bounds": lambda x: ((x,), {"axis": 3}),
    "read-only out": lambda x: ((x,), {"out": np.frombuffer(np.zeros(x.size, x.dtype).tobytes(), x.dtype)}),
    "out of the wrong shape": lambda x: ((x,), {"out": np.empty(x.size + 1, x.dtype)}),
    "complex initial": lambda x: ((x,), {"initial": 1j}),
    "2-D part": lambda x: ((x.reshape(-1, 1),), {}),
    "unknown operator": lambda x: ((x,), {"op": "bogus"}),
}


@pytest.mark.parametrize("dtype", ["int64", "float64"])
@pytest.mark.parametrize("failure", sorted(FAILURES))
def test_a_failure_on_one_rank_mid_sequence(comm, failure, dtype):
    rank, size = comm.rank, comm.size
    for rep in range(REPS + 2):
        g = (np.arange(6 * size) * (rep + 1) % 13 - 4).astype(dtype)
        x = g[6 * rank:6 * rank + 6].copy()
        want = np.cumsum(g)[6 * rank:6 * rank + 6]
        args, kw = (x,), {"op": "sum"}
        failing = rep == 3 and (size > 1 or failure != "2-D part")  # alone, a 2-D part is a valid call
        if failing and rank == (rep + 1) % size:
            args, more = FAILURES[failure](x)
            kw.update(more)
        outcome = _outcome(lambda: distscan.scan(*args, comm=comm, **kw))
        seen = comm.allgather(outcome if outcome[0] == "raised" else ("ok",))

        def check():
            if failing:
                assert outcome[0] == "raised", (failure, rep, outcome)
                assert len(set(seen)) == 1, (failure, rep, seen)
            else:
                assert outcome[0] == "ok", (failure, rep, outcome)
                _assert_same_bits(outcome[1], want, f"{failure} repetition {rep}")
        all_ranks_ok(comm, check)


@pytest.mark.parametrize("mode", ["errstate", "warnings"])
def test_floating_point_errors_raised_on_one_rank_only(comm, mode):
    """One rank turns overflow into an exception (``np.errstate``, or warnings made errors) on a warm
    kind: every rank raises or none does, and the calls after it are right."""
    import warnings

    rank, size = comm.rank, comm.size
    g = np.full(4 * size, 1e308)
    x = g[4 * rank:4 * rank + 4].copy()
    with np.errstate(over="ignore"):
        want = np.cumsum(g)[4 * rank:4 * rank + 4]
    for rep in range(REPS + 2):
        strict = rep in (2, 3) and rank == rep % size

        def call():
            if not strict:
                with np.errstate(over="ignore"):
                    return distscan.cumsum(x, comm=comm)
            if mode == "errstate":
                with np.errstate(over="raise"):
                    return distscan.cumsum(x, comm=comm)
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                return distscan.cumsum(x, comm=comm)
        outcome = _outcome(call)
        seen = comm.allgather(outcome[0] if outcome[0] == "ok" else outcome)

        def check():
            assert len(set(map(str, seen))) == 1, (rep, seen)
            if outcome[0] == "ok":
                _assert_same_bits(outcome[1], want, f"repetition {rep}")
            else:
                assert rep in (2, 3), (rep, outcome)
        all_ranks_ok(comm, check)


@pytest.mark.parametrize("mode", ["errstate", "warnings"])
@pytest.mark.parametrize("call", ["reduce", "exclusive", "inclusive", "reverse exclusive", "reduce prod",
                                  "exclusive cumprod", "reduce into float16"])
@pytest.mark.parametrize("strict_ranks", ["all", "one"])
def test_an_overflow_in_the_fold_of_the_totals_raises_as_numpy(comm, mode, call, strict_ranks):
    """Every part holds one float64 max (1e200 for products): no rank's own part overflows, but the
    fold of the ranks' totals does (the total, and the seed of a rank after two others), or the
    cast of reduce's float32 total of float16 parts to float16.  Under ``np.errstate(over=
    "raise")`` (or warnings made errors) NumPy's reduce and cumsum of the whole array raise; the
    exchange's quiet fold gave inf on every rank instead (an audit, 2026-11-27).  Now the ranks whose
    NumPy raises raise it inside an agreement: every rank raises, or none does where nothing
    overflows; the calls after it (quiet) are right."""
    import warnings

    rank, size = comm.rank, comm.size
    x = np.array([np.finfo(np.float64).max])
    g = np.full(size, x[0])
    # a float product's carries (five fields, distscan._carry) multiply in their own combine; a
    # float16 total is cast after the fold (where one rank's raise left the others returning)
    p, h = np.array([1e200]), np.array([40000.0], np.float16)
    gp, gh = np.full(size, p[0]), np.full(size, h[0])
    fns = {"reduce prod": (lambda: distscan.reduce(p, "prod", comm=comm), lambda: np.prod(gp)),
           "exclusive cumprod": (lambda: distscan.cumprod(p, exclusive=True, comm=comm),
                                 lambda: np.cumprod(np.concatenate([[1.0], gp[:-1]]))[rank:rank + 1]),
           "reduce into float16": (lambda: distscan.reduce(h, comm=comm),
                                   lambda: np.sum(gh.astype(np.float32)).astype(np.float16)),
           "reduce": (lambda: distscan.reduce(x, comm=comm), lambda: np.sum(g)),
           "exclusive": (lambda: distscan.cumsum(x, exclusive=True, comm=comm),
                         lambda: np.cumsum(np.concatenate([[0.0], g[:-1]]))[rank:rank + 1]),
           "inclusive": (lambda: distscan.cumsum(x, comm=comm), lambda: np.cumsum(g)[rank:rank + 1]),
           "reverse exclusive": (lambda: distscan.cumsum(x, exclusive=True, reverse=True, comm=comm),
                                 lambda: np.cumsum(np.concatenate([[0.0], g[:-1]]))[size - 1 - rank:size - rank])}
    fn, ref = fns[call]
    with np.errstate(over="ignore"):
        want = ref()
    # NumPy's scan of the whole array overflows where any prefix the call computes does
    overflows = {"reduce": size >= 2, "inclusive": size >= 2, "exclusive": size >= 3,
                 "reverse exclusive": size >= 3, "reduce prod": size >= 2, "exclusive cumprod": size >= 3,
                 "reduce into float16": size >= 2}[call]
    strict = strict_ranks == "all" or rank == size - 1
    for rep in range(3):
        def run():
            if not (strict and rep == 1):
                with np.errstate(over="ignore"):
                    return fn()
            if mode == "errstate":
                with np.errstate(over="raise"):
                    return fn()
            with warnings.catch_warnings(), np.errstate(over="warn"):
                warnings.simplefilter("error")
                return fn()
        outcome = _outcome(run)
        seen = comm.allgather(outcome[0] if outcome[0] == "ok" else outcome)

        def check():
            assert len(set(map(str, seen))) == 1, (rep, seen)
            if rep == 1 and overflows and strict_ranks == "all":
                assert outcome[0] == "raised" and "overflow" in str(outcome), (rep, outcome)
            if outcome[0] == "ok":
                _assert_same_bits(np.asarray(outcome[1]), np.asarray(want), f"repetition {rep}")
            else:
                assert rep == 1, (rep, outcome)
        all_ranks_ok(comm, check)


# -- held results, inputs, reused memory ----------------------------------------------------------

def test_held_results_views_and_weak_references(comm):
    """Results (and views of them) held across many calls of the same kinds never change; every
    result is a new array (a weak reference to a dropped result dies: nothing else holds it); a
    new array in a dropped array's memory is scanned for its own content."""
    rank, size = comm.rank, comm.size
    held, refs = [], []
    fns = [(distscan.cumsum, np.cumsum), (distscan.cummax, np.maximum.accumulate),
           (distscan.cumprod, np.cumprod)]
    for rep in range(3 * REPS):
        for fn, ref in fns:
            for dtype in (np.int64, np.float64, np.int32, np.uint8):
                g = (np.arange(6 * size) * (rep + 1) % 7 + 1).astype(dtype)
                x = g[6 * rank:6 * rank + 6].copy()
                y = fn(x, comm=comm)
                want = ref(g)[6 * rank:6 * rank + 6]
                all_ranks_ok(comm, lambda: _assert_same_bits(y, want, f"{fn.__name__} {dtype} {rep}"))
                if rep % 3 == 0:
                    held.append((y, y[2:5], want.copy()))
                else:
                    refs.append(weakref.ref(y))
                del x, y  # the next part is often allocated where this one was
    gc.collect()

    def check():
        for y, view, want in held:
            _assert_same_bits(y, want, "a held result changed")
            _assert_same_bits(view, want[2:5], "a view of a held result changed")
        assert len({id(y) for y, _, _ in held}) == len(held)
        alive = [r for r in refs if r() is not None]
        assert not alive, f"{len(alive)} dropped results are still referenced"
    all_ranks_ok(comm, check)


# -- communicators ------------------------------------------------------------------------------

def test_two_communicators_dup_and_reversed_split_in_turn(comm):
    """The same kinds on the world duplicate, another ``Dup`` and a ``Split`` that reverses the rank
    order, in turn: each call's parts are laid out in that communicator's rank order."""
    dup = comm.Dup()
    rev = comm.Split(0, comm.size - comm.rank)
    try:
        for rep in range(REPS + 1):
            for c in (comm, dup, rev, comm, rev):
                r, s = c.rank, c.size
                g = (np.arange(5 * s) * (rep + 2) % 11 - 3)
                for fn, ref in [(distscan.cumsum, np.cumsum), (distscan.cumprod, np.cumprod),
                                (distscan.cummin, np.minimum.accumulate)]:
                    for dtype in (np.int64, np.float64):
                        y = fn(g[5 * r:5 * r + 5].astype(dtype), comm=c)
                        want = ref(g.astype(dtype))[5 * r:5 * r + 5]
                        all_ranks_ok(comm, lambda: _assert_same_bits(y, want, f"{fn.__name__} {dtype} rank {r}"))
    finally:
        dup.Free()
        rev.Free()


@pytest.mark.timeout(60)
def test_two_threads_on_two_communicators_at_the_same_time(comm):
    if MPI.Query_thread() < MPI.THREAD_MULTIPLE:
        pytest.skip("MPI is not initialised with THREAD_MULTIPLE")
    comms = [comm.Dup(), comm.Dup()]
    errors = []
    start = threading.Barrier(2)

    def work(t):
        c = comms[t]
        r, s = c.rank, c.size
        try:
            start.wait()
            for k in range(40):
                counts = [2 + (k + q + t) % 4 for q in range(s)]
                lo, hi = _bounds(counts, r)
                for fn, ref, dtype in [(distscan.cumsum, np.cumsum, np.int64),
                                       (distscan.cummax, np.maximum.accumulate, np.float64),
                                       (distscan.cumsum, np.cumsum, np.float64),
                                       (distscan.exclusive_scan, None, np.int64)]:
                    g = (np.arange(sum(counts)) * (k + 1 + t) % 17 - 5).astype(dtype)
                    y = fn(g[lo:hi], comm=c)
                    want = ref(g) if ref is not None else np.concatenate([[0], np.cumsum(g)[:-1]])
                    if not np.array_equal(y, want[lo:hi]):
                        errors.append(f"thread {t} call {k} {fn.__name__} {dtype.__name__}: {y} != {want[lo:hi]}")
                if k % 10 == 0:
                    v = distscan.reduce(np.full(2, t + 1), comm=c)
                    if v != 2 * (t + 1) * s:
                        errors.append(f"thread {t} reduce gave {v}")
        except Exception as exc:  # noqa: BLE001
            errors.append(f"thread {t}: {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=work, args=(t,)) for t in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for c in comms:
        c.Free()
    all_ranks_ok(comm, lambda: np.testing.assert_equal(errors, []))


# -- mended defects-------------------------------------------------------------------------------

@pytest.mark.mpi(min_size=2)
def test_an_axis_of_a_numpy_integer_type_on_one_rank_is_the_same_axis(comm):
    """``axis=np.int64(0)`` on one rank and ``axis=0`` on the others name the same axis (NumPy takes
    both), and the calls after it are right.  distscan refused it ("arguments differs across ranks:
    ranks 0-1 have none": the fingerprint hashed ``repr(axis)``), and then every later call of that
    kind on that communicator (the odd rank's cached plan kept that fingerprint); the plan's axis
    is now an int in range(ndim)."""
    _kinds.KINDS.clear()  # cold kinds and plans on every rank (a warm kind of axis=0 hides the defect)
    _kinds.PLANS.clear()
    c = comm.Dup()
    rank, size = c.rank, c.size
    g = np.arange(4 * size, dtype=np.int64)
    x = g[4 * rank:4 * rank + 4]
    want = np.cumsum(g)[4 * rank:4 * rank + 4]
    outcomes = []
    for rep in range(REPS):
        axis = np.int64(0) if rep == 0 and rank == 1 else 0
        outcomes.append(_outcome(lambda: distscan.cumsum(x, axis=axis, comm=c)))

    def check():
        wrong = [(rep, value) for rep, (status, value) in enumerate(outcomes)
                 if status != "ok" or not np.array_equal(value, want)]
        assert not wrong, f"{len(wrong)} of {REPS} calls refused or wrong (all ranks pass axis=0 from call 1 on): {wrong}"
    try:
        all_ranks_ok(comm, check)
    finally:
        c.Free()


def test_a_float_axis_is_refused_also_when_the_kind_is_warm(comm):
    """``axis=0.0`` is refused (TypeError, as NumPy) on a cold call and once a call kind of
    ``axis=0`` exists (the kind cache's key compared ``0.0 == 0``: an axis that is not an int is
    now keyed with its type)."""
    x = np.arange(4, dtype=np.int16) + comm.rank  # a kind of its own
    first = _outcome(lambda: distscan.cumsum(x, axis=0.0, comm=comm))
    for _ in range(REPS):
        distscan.cumsum(x, axis=0, comm=comm)
    later = _outcome(lambda: distscan.cumsum(x, axis=0.0, comm=comm))
    all_ranks_ok(comm, lambda: (np.testing.assert_equal(first[0], "raised"),
                                np.testing.assert_equal(later[0], "raised", err_msg=f"warm: {later}")))
