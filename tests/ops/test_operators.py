"""Every associative scan of issue 30 against a sequential reference on the concatenation of the
ranks' parts: the NumPy ufuncs beyond the classic ten (NaN-aware, logaddexp, gcd, lcm), reverse
scans, segmented scans, linear recurrences, compensated sums, include_initial, and the errors
every rank raises together.

Written for any rank count (serially and under mpiexec, tests/run.sh).  Parts are drawn per
rank (empty ones included), so segments and recurrences cross rank boundaries anywhere.

Bounds: integers bit for bit.  Floats: plain and segmented scans within ``8 n eps sum|x|`` of the
float64 reference (the worst case of a sum of n terms in any association); linear recurrences
within ``8 n eps max|y|`` of a float64 (complex128) sequential loop for ``|a| <= 1``; compensated
float32 sums within 2 ulp of the correctly rounded prefix sums.
"""

from __future__ import annotations

import numpy as np
import pytest

import distscan
from distscan import _call, _kinds
from distscan.dist import exchange
from distscan.ops import get_op

from tests.support.data import local_part, random_array
from tests.support.ranks import all_ranks_ok
from tests.support.seeds import shared_rng

try:
    from mpi4py import MPI
    SELF = MPI.COMM_SELF  # references: the whole array on one rank, no communication
except ImportError:  # pragma: no cover
    SELF = None

pytestmark = [pytest.mark.anyranks, pytest.mark.timeout(300)]


def _counts(rng, size, max_rows=30):
    counts = rng.integers(0, max_rows + 1, size)
    counts[rng.random(size) < 0.25] = 0
    return counts


def _part(g, counts, comm):
    return np.ascontiguousarray(local_part(g, counts, comm.rank))


def _close(result, expected, x_abs_sums, dtype, n=None):
    """Floats within 8 n eps times the sum of magnitudes (n the global length); the rest exactly."""
    result, expected = np.asarray(result), np.asarray(expected)
    assert result.shape == expected.shape, (result.shape, expected.shape)
    if np.dtype(dtype).kind in "biu":
        np.testing.assert_array_equal(result, expected)
        return
    eps = np.finfo(np.dtype(dtype)).eps
    n = max(1, len(expected) if n is None else n)
    tol = 8 * n * eps * np.maximum(1.0, np.asarray(x_abs_sums, float))
    tol = tol.reshape(tol.shape + (1,) * (expected.ndim - tol.ndim)) if tol.ndim else tol
    err = np.abs(result.astype(np.complex128) - expected.astype(np.complex128))
    both_nan = np.isnan(result) & np.isnan(expected)
    assert np.all((err <= tol) | both_nan | (result == expected)), (result, expected)


# -- plain operators: NumPy's ufuncs and their NaN-aware forms, forwards and in reverse ---------

_NEW_OPS = {
    "nansum": (np.nancumsum, "float64"), "nanprod": (np.nancumprod, "float32"),
    "nanmax": (np.fmax.accumulate, "float64"), "nanmin": (np.fmin.accumulate, "float32"),
    "logaddexp": (np.logaddexp.accumulate, "float64"), "logaddexp2": (np.logaddexp2.accumulate, "float32"),
    "gcd": (np.gcd.accumulate, "int64"), "lcm": (np.lcm.accumulate, "int32"),
}


def _plain_reference(name, g, reverse):
    fn, _ = _NEW_OPS[name]
    h = g[::-1] if reverse else g
    ref = fn(h) if name not in ("lcm", "gcd") else fn(h, dtype=g.dtype)
    return ref[::-1] if reverse else ref


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("name", sorted(_NEW_OPS))
def test_new_ufunc_operators_match_numpy(name, reverse, comm):
    rng = shared_rng(comm)
    dtype = _NEW_OPS[name][1]
    counts = _counts(rng, comm.size)
    n = int(counts.sum())
    if name in ("gcd", "lcm"):
        g = rng.integers(1, 13, n).astype(dtype) * rng.choice([1, -1], n).astype(dtype)
    elif name == "nanprod":
        g = (1 + 0.05 * rng.standard_normal(n)).astype(dtype)
    else:
        g = random_array(rng, n, dtype)
    if dtype.startswith("float"):
        g[rng.random(n) < 0.2] = np.nan
    x = _part(g, counts, comm)
    spelled = [name, getattr(np, {"nanmax": "fmax", "nanmin": "fmin"}.get(name, name), None)]
    for op in [s for s in spelled if isinstance(s, (str, np.ufunc))]:
        y = distscan.scan(x, op, comm=comm, reverse=reverse)
        ref = _part(_plain_reference(name, g, reverse), counts, comm)
        all_ranks_ok(comm, lambda: _close(y, ref, np.nansum(np.abs(g)) + 1, dtype, n=len(g)))


@pytest.mark.parametrize("opname", ["sum", "prod", "max", "min", "bitwise_xor", "logical_or"])
@pytest.mark.parametrize("dtype", ["int32", "uint8", "float32", "float64", "complex64"])
def test_reverse_is_the_mirrored_scan(opname, dtype, comm):
    op = get_op(opname)
    if np.dtype(dtype).kind not in op.kinds:
        pytest.skip("operator not defined on the dtype")
    rng = shared_rng(comm)
    for exclusive in (False, True):
        counts = _counts(rng, comm.size)
        g = random_array(rng, int(counts.sum()), dtype, trailing=(2,) if rng.random() < 0.3 else ())
        if opname == "prod" and np.dtype(dtype).kind in "fc":
            g = (1 + 0.01 * g).astype(dtype)
        initial = None if rng.random() < 0.5 else np.asarray(1, dtype)
        x = _part(g, counts, comm)
        y = distscan.scan(x, opname, exclusive=exclusive, initial=initial, reverse=True, comm=comm)
        mirrored = distscan.scan(g[::-1], opname, exclusive=exclusive, initial=initial, comm=SELF)[::-1]
        ref = _part(mirrored, counts, comm)
        all_ranks_ok(comm, lambda: _close(y, ref, np.abs(g).sum() + 1, y.dtype, n=len(g)))
        assert y.dtype == mirrored.dtype


# -- segmented scans --------------------------------------------------------------------------

def segmented_reference(g, flags, op, *, exclusive=False, initial=None, reverse=False, dtype=None):
    """Each run (a flag starts one; the array's first element always does) scanned on its own with
    NumPy, right to left with ``reverse``: ``initial op prefix``, the identity (or ``initial``)
    first for an exclusive scan."""
    op = get_op(op)
    result_dtype = distscan._dtypes.scan_types(op, g.dtype, dtype)
    acc, res = result_dtype.acc, result_dtype.result
    out = np.empty(g.shape, res)
    starts = np.flatnonzero(np.asarray(flags, bool) | (np.arange(len(g)) == 0))
    for s, e in zip(starts, list(starts[1:]) + [len(g)]):
        seg = op.lift(g[s:e], acc)
        seg = seg[::-1] if reverse else seg
        scanned = op.ufunc.accumulate(seg, axis=0, dtype=acc)
        if initial is not None:
            scanned = op.ufunc(np.asarray(initial, acc), scanned)
        if exclusive:
            first = np.full((1,) + g.shape[1:], initial if initial is not None else op.identity(acc), acc)
            scanned = np.concatenate([first, scanned[:-1]])
        out[s:e] = (scanned[::-1] if reverse else scanned).astype(res)
    return out


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("opname,dtype", [("sum", "int32"), ("sum", "float64"), ("prod", "int64"),
                                          ("max", "float32"), ("min", "int16"), ("bitwise_xor", "uint32"),
                                          ("sum", "complex128"), ("nansum", "float32"), ("logaddexp", "float64")])
def test_segmented_scans_match_each_segment_scanned_alone(opname, dtype, reverse, comm):
    rng = shared_rng(comm)
    for trial in range(3):
        counts = _counts(rng, comm.size)
        n = int(counts.sum())
        trailing = (3,) if trial == 2 else ()
        g = random_array(rng, n, dtype, trailing)
        if opname == "prod":
            g = rng.choice(np.array([-1, 1, 2], dtype), (n,) + trailing)
        if opname == "nansum":
            g[rng.random(g.shape) < 0.2] = np.nan
        flags = rng.random(n) < [0.02, 0.2, 0.6][trial]  # long runs over several ranks, or short ones
        exclusive = bool(rng.integers(2))
        initial = None if trial == 0 or opname in ("max", "min", "logaddexp") else np.asarray(3, dtype)
        x, f = _part(g, counts, comm), _part(flags, counts, comm)
        y = distscan.scan(x, opname, segments=f, reverse=reverse, exclusive=exclusive, initial=initial, comm=comm)
        ref = _part(segmented_reference(g, flags, opname, exclusive=exclusive, initial=initial, reverse=reverse),
                    counts, comm)
        all_ranks_ok(comm, lambda: _close(y, ref, np.nansum(np.abs(g)) + 1, y.dtype, n=len(g)))


def test_segmented_named_scans_and_integer_exactness(comm):
    rng = shared_rng(comm)
    counts = _counts(rng, comm.size, 60)
    n = int(counts.sum())
    g = rng.integers(-2**40, 2**40, n)
    flags = rng.random(n) < 0.1
    x, f = _part(g, counts, comm), _part(flags, counts, comm)
    for fn, name in [(distscan.cumsum, "sum"), (distscan.cummax, "max"), (distscan.cummin, "min")]:
        y = fn(x, segments=f, comm=comm)
        ref = _part(segmented_reference(g, flags, name), counts, comm)
        all_ranks_ok(comm, lambda: np.testing.assert_array_equal(y, ref))


# -- linear recurrences ----------------------------------------------------------------------

def recurrence_reference(a, b, *, initial=0, reverse=False, segments=None):
    """``y[i] = a[i] y[i-1] + b[i]`` by a sequential loop in float64 (complex128; exact for
    integers, which wrap as NumPy's arithmetic does)."""
    kind = np.result_type(a, b).kind
    wide = {"f": np.float64, "c": np.complex128}.get(kind, np.result_type(a, b))
    a = np.broadcast_to(a, b.shape).astype(wide)
    b = b.astype(wide)
    n = len(b)
    order = range(n - 1, -1, -1) if reverse else range(n)
    starts = np.zeros(n, bool) if segments is None else np.asarray(segments, bool)
    ends = np.zeros(n, bool)
    if reverse and segments is not None:  # in reverse, a run restarts after its first element
        ends = starts
    y = np.empty_like(b)
    prev = None
    with np.errstate(over="ignore"):
        for i in order:
            restart = prev is None or (not reverse and starts[i])
            p = np.asarray(initial, wide) if restart else prev
            y[i] = a[i] * p + b[i] if (restart and np.any(initial)) or not restart else b[i]
            prev = y[i]
            if ends[i]:
                prev = None
    return y


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128", "int64"])
def test_linear_recurrence_matches_a_sequential_loop(dtype, reverse, comm):
    rng = shared_rng(comm)
    for trial in range(3):
        counts = _counts(rng, comm.size, 40)
        n = int(counts.sum())
        trailing = (2,) if trial == 1 else ()
        b = random_array(rng, n, dtype, trailing)
        if np.dtype(dtype).kind in "iu":
            a = rng.integers(-3, 4, (n,) + trailing).astype(dtype)
        elif np.dtype(dtype).kind == "c":
            a = (rng.uniform(0.5, 1, (n,) + trailing) * np.exp(1j * rng.uniform(0, 6.3, (n,) + trailing))).astype(dtype)
        else:
            a = rng.uniform(-1, 1, (n,) + trailing).astype(dtype)
        segments = rng.random(n) < 0.15 if trial == 2 else None
        initial = 0 if trial == 0 else np.asarray(2, dtype)
        x_a, x_b = _part(a, counts, comm), _part(b, counts, comm)
        f = None if segments is None else _part(segments, counts, comm)
        y = distscan.linear_recurrence(x_a, x_b, initial=initial, reverse=reverse, segments=f, comm=comm)
        ref = recurrence_reference(a, b, initial=initial, reverse=reverse, segments=segments)
        mine = _part(ref, counts, comm)
        scale = np.abs(ref).max() + 2 if n else 1
        all_ranks_ok(comm, lambda: _close(y, mine.astype(dtype), np.full(len(mine), scale), dtype, n=n))
        assert y.dtype == np.dtype(dtype)


def test_linear_recurrence_with_a_scalar_decay_and_near_one(comm):
    """An exponential moving average (a constant a) and |a| near 1 over many steps."""
    rng = shared_rng(comm)
    counts = _counts(rng, comm.size, 3000)
    n = int(counts.sum())
    b = rng.standard_normal(n)
    for a in (0.9, 1 - 2.0**-20):
        y = distscan.linear_recurrence(a, _part(b, counts, comm), comm=comm)
        ref = _part(recurrence_reference(np.full(n, a), b), counts, comm)
        all_ranks_ok(comm, lambda: np.testing.assert_allclose(y, ref, rtol=0, atol=1e-9 * (np.abs(ref).max(initial=0) + 1)))


# -- compensated sums -------------------------------------------------------------------------

def _ulps(result, exact):
    """Distance in float32 ulps between ``result`` and the float64 ``exact`` rounded to float32."""
    r = np.asarray(result, np.float32)
    e = np.asarray(exact, np.float64).astype(np.float32)
    return np.abs(r.view(np.int32).astype(np.int64) - e.view(np.int32).astype(np.int64))


def test_compensated_float32_sums_are_within_2_ulp(comm):
    """Inputs that are multiples of 2^-12 of wildly different sizes: their exact prefix sums are
    integers times 2^-12 (exact in int64), rounded once to float32 for the reference."""
    rng = shared_rng(comm)
    for reverse in (False, True):
        counts = _counts(rng, comm.size, 500)
        n = int(counts.sum())
        k = rng.integers(-2**20, 2**20, n) * (2 ** rng.integers(0, 30, n))  # |x| up to 2^38 units
        small = rng.random(n) < 0.3  # small terms among the large ones: what a plain sum loses
        k[small] = rng.integers(-50, 50, int(small.sum()))
        g = (k * 2.0**-12).astype(np.float32)
        units = (g.astype(np.float64) * 2**12).astype(np.int64)  # exact: g holds these multiples
        order = slice(None, None, -1) if reverse else slice(None)
        exact = (np.cumsum(units[order])[order]).astype(np.float64) * 2.0**-12
        y = distscan.cumsum(_part(g, counts, comm), compensated=True, reverse=reverse, comm=comm)
        plain = distscan.cumsum(_part(g, counts, comm), reverse=reverse, comm=comm)
        mine = _part(exact, counts, comm)
        all_ranks_ok(comm, lambda: _assert_le(_ulps(y, mine), 2))
        assert y.dtype == np.float32 and plain.dtype == np.float32


def _assert_le(values, bound):
    assert values.size == 0 or values.max() <= bound, values.max()


def test_compensated_refuses_integers_on_every_rank(comm):
    with pytest.raises((TypeError, distscan.DistScanError), match="compensated sum|not defined"):
        distscan.cumsum(np.arange(3), compensated=True, comm=comm)


# -- include_initial and the Array API functions ------------------------------------------------

@pytest.mark.parametrize("reverse", [False, True])
def test_include_initial_puts_one_element_on_the_first_rank(reverse, comm):
    rng = shared_rng(comm)
    counts = _counts(rng, comm.size)
    g = rng.integers(-9, 9, int(counts.sum()))
    y = distscan.scan(_part(g, counts, comm), "sum", include_initial=True, initial=5, reverse=reverse, comm=comm)
    whole = distscan.scan(g, "sum", initial=5, reverse=reverse, comm=SELF)
    ref = np.concatenate([[5], whole]) if not reverse else np.concatenate([whole, [5]])
    first = comm.size - 1 if reverse else 0
    lengths = np.array(counts) + (np.arange(comm.size) == first)
    all_ranks_ok(comm, lambda: np.testing.assert_array_equal(y, _part(ref, lengths, comm)))


def test_cumulative_sum_and_prod_follow_the_array_api(comm):
    rng = shared_rng(comm)
    counts = _counts(rng, comm.size)
    g = rng.integers(1, 4, int(counts.sum())).astype(np.int32)
    lengths = np.array(counts) + (np.arange(comm.size) == 0)
    for fn, ufunc, zero in [(distscan.cumulative_sum, np.add, 0), (distscan.cumulative_prod, np.multiply, 1)]:
        y = fn(_part(g, counts, comm), include_initial=True, comm=comm)
        ref = np.concatenate([[zero], ufunc.accumulate(g, dtype=np.int64)])
        all_ranks_ok(comm, lambda: np.testing.assert_array_equal(y, _part(ref, lengths, comm)))
        assert y.dtype == np.int64
        y = fn(_part(g, counts, comm), comm=comm)
        all_ranks_ok(comm, lambda: np.testing.assert_array_equal(y, _part(ref[1:], counts, comm)))
    with pytest.raises(ValueError, match="axis is required"):
        distscan.cumulative_sum(np.ones((2, 2)), comm=comm)


# -- errors on every rank, never a hang --------------------------------------------------------

def test_flags_of_the_wrong_length_on_one_rank_fail_everywhere(comm):
    x = np.arange(4.0)
    flags = np.zeros(4 if comm.rank != comm.size - 1 else 3, bool)
    with pytest.raises((ValueError, distscan.DistScanError), match="segments"):
        distscan.cumsum(x, segments=flags, comm=comm)
    assert distscan.cumsum(x, comm=comm)[0] == 6 * comm.rank  # the next call works


def test_unknown_combinations_are_refused(comm):
    x = np.arange(4.0)
    for kwargs, match in [({"op": np.subtract}, "not associative"), ({"op": np.power}, "not associative"),
                          ({"op": "sum", "exclusive": True, "include_initial": True}, "include_initial"),
                          ({"op": "max", "compensated": True}, "compensated")]:
        with pytest.raises((ValueError, TypeError), match=match):
            distscan.scan(x, comm=comm, **kwargs)
    with pytest.raises(ValueError, match="exclusive"):  # a recurrence has no exclusive form
        _call.Part(x, "sum", True, None, None, None, 0, "auto", "auto", "auto", coefficients=x)


def test_projected_initial_must_agree_on_every_rank(comm):
    if comm.size == 1:
        pytest.skip("needs two ranks")
    x = np.arange(3.0)
    with pytest.raises((ValueError, distscan.DistScanError)):
        distscan.cumsum(x, segments=np.zeros(3, bool), initial=float(comm.rank), comm=comm)


# -- the exchange at any scale: recursive doubling gives what the gather gives ---------------------

@pytest.mark.parametrize("reverse", [False, True])
def test_recursive_doubling_exchange_gives_the_same_results(reverse, comm, monkeypatch):
    rng = shared_rng(comm)
    counts = _counts(rng, comm.size)
    n = int(counts.sum())
    g = rng.integers(-9, 9, (n, 6))  # 48-byte carries: the second pass of the doubling
    flags = rng.random(n) < 0.2
    expected = [distscan.cumsum(_part(g, counts, comm), reverse=reverse, comm=comm),
                distscan.cumsum(_part(g[:, 0], counts, comm), segments=_part(flags, counts, comm),
                                reverse=reverse, comm=comm),
                distscan.linear_recurrence(0.5, _part(g[:, 0] * 1.0, counts, comm), reverse=reverse, comm=comm)]
    monkeypatch.setattr(exchange, "DOUBLING_RANKS", 1)  # on every rank alike
    _kinds.PLANS.clear()
    _kinds.KINDS.clear()
    try:
        got = [distscan.cumsum(_part(g, counts, comm), reverse=reverse, comm=comm),
               distscan.cumsum(_part(g[:, 0], counts, comm), segments=_part(flags, counts, comm),
                               reverse=reverse, comm=comm),
               distscan.linear_recurrence(0.5, _part(g[:, 0] * 1.0, counts, comm), reverse=reverse, comm=comm)]
        for e, r in zip(expected, got):
            all_ranks_ok(comm, lambda: np.testing.assert_array_equal(r, e))
        # a failure on one rank is agreed through the doubling too
        bad = np.arange(3.0) if comm.rank != 0 else "not a number"
        with pytest.raises((TypeError, ValueError, distscan.DistScanError)):
            distscan.cumsum(bad, comm=comm)
    finally:
        _kinds.PLANS.clear()
        _kinds.KINDS.clear()


def test_nancumprod_zeros_and_infinities_across_ranks(comm):
    """A zero that meets an overflow, or an infinity after a zero, in another rank's part: the
    sequential product NumPy gives (NaN read as 1), not the 0 * inf of a product of parts."""
    rng = shared_rng(comm)
    for reverse in (False, True):
        counts = _counts(rng, comm.size, 12)
        n = int(counts.sum())
        g = rng.choice(np.array([0.0, np.inf, -np.inf, np.nan, 1e200, -2.0, 0.5, -0.0]), n)
        h = g[::-1] if reverse else g
        ref = np.nancumprod(h)
        ref = ref[::-1] if reverse else ref
        with np.errstate(all="ignore"):
            y = distscan.nancumprod(_part(g, counts, comm), reverse=reverse, comm=comm)
        mine = _part(ref, counts, comm)
        all_ranks_ok(comm, lambda: np.testing.assert_array_equal(y, mine))


# -- declared operators -------------------------------------------------------------------------

_MEAN_STATE = np.dtype([("n", "f8"), ("m", "f8")])


def _mean_lift(x):
    s = np.zeros(np.shape(x), _MEAN_STATE)
    s["n"], s["m"] = 1, x
    return s


def _mean_combine(a, b):
    out = np.empty(np.broadcast(a, b).shape, _MEAN_STATE)
    n = a["n"] + b["n"]
    out["n"] = n
    out["m"] = np.where(n > 0, (a["n"] * a["m"] + b["n"] * b["m"]) / np.where(n > 0, n, 1), 0)
    return out


DECLARED = {
    "hypot": distscan.Operator("hypot", np.hypot, identity=0.0, cuda="hypot(a, b)", commutative=True),
    "absmax": distscan.Operator("absmax", lambda a, b: np.maximum(np.abs(a), np.abs(b)), identity=0.0,
                                cuda="fmax(fabs(a), fabs(b))"),
    "affine2": distscan.Operator("saturating add", lambda a, b: np.minimum(a + b, 1000), identity=0, kinds="i",
                                 cuda="(a + b < 1000) ? a + b : 1000", commutative=True),
    "mean": distscan.Operator("running mean", _mean_combine, identity=lambda dt: np.zeros((), _MEAN_STATE),
                              state=_MEAN_STATE, lift=_mean_lift, project=lambda s: s["m"]),
}


def _declared_reference(name, g):
    """The sequential scan: y[0] = x[0] (as ufunc.accumulate), y[i] = y[i-1] op x[i]."""
    if name == "mean":
        return np.cumsum(g) / np.arange(1, len(g) + 1)
    combine = {"hypot": np.hypot, "absmax": lambda a, b: max(abs(a), abs(b)),
               "affine2": lambda a, b: min(a + b, 1000)}[name]
    out = np.empty(len(g), np.result_type(g, float) if name != "affine2" else g.dtype)
    for i, v in enumerate(g):
        out[i] = v if i == 0 else combine(out[i - 1], v)
    return out


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("name", sorted(DECLARED))
def test_declared_operators_across_ranks(name, reverse, comm):
    rng = shared_rng(comm)
    counts = _counts(rng, comm.size, 50)
    n = int(counts.sum())
    g = rng.integers(0, 30, n) if name == "affine2" else rng.standard_normal(n)
    h = g[::-1] if reverse else g
    ref = _declared_reference(name, h) if n else np.empty(0)
    ref = ref[::-1] if reverse else ref
    y = distscan.scan(_part(g, counts, comm), DECLARED[name], reverse=reverse, comm=comm)
    mine = _part(ref, counts, comm)
    all_ranks_ok(comm, lambda: np.testing.assert_allclose(y, mine, rtol=1e-12, atol=1e-12))


def test_declared_check_refuses_a_non_associative_combine_on_every_rank(comm):
    avg = distscan.Operator("average", lambda a, b: (a + b) / 2, identity=0.0, check=True)
    x = np.random.default_rng(comm.rank).random(50)
    with pytest.raises((ValueError, distscan.DistScanError), match="not associative"):
        distscan.scan(x, avg, comm=comm)
    assert distscan.cumsum(x, comm=comm).shape == x.shape  # and the next call works
