"""Linear recurrences whose coefficient is the same along the scanned axis (a scalar ``a``, an
exponential moving average; one ``a`` a column, a per-channel decay): the GPU reads that one
value (one row) for every item (``ModuleKey.coef_one``, ``ext_states.coefficient_row``) instead
of n copies written first.  The kernels differ from the array's only in where a coefficient comes
from, so the results are the array's bit for bit, on every device algorithm, both directions,
with segments, ``initial`` and ``out=``, on the cold route (``Part``) and the warm one (``Kind``).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tests.support.devices import require_gpu

cp = require_gpu()

import distscan  # noqa: E402
from distscan._dtypes import scan_types  # noqa: E402
from distscan.backends.cuda import columns  # noqa: E402
from distscan.backends.cuda import compile as cc  # noqa: E402
from distscan.backends.cuda.ext_states import coefficient_row, ext_module_key  # noqa: E402
from distscan.ops import affine  # noqa: E402
from mpi4py import MPI  # noqa: E402

SELF = MPI.COMM_SELF
# (dtype, device algorithm, reverse, segmented): each module of one coefficient and its array's
CASES = [("float32", "lookback", False, False), ("float32", "lookahead", False, True),
         ("float32", "lookback", True, True), ("float32", "lookahead", True, False),
         ("float64", "lookahead", False, False), ("float64", "lookback", True, True),
         ("complex64", "lookback", False, True), ("complex64", "lookahead", True, False),
         ("int64", "lookback", False, True), ("int64", "lookahead", True, False)]
# (dtype, reverse, segmented) of the column tiles
COLUMN_CASES = [("float32", False, False), ("float32", True, True), ("float64", False, True),
                ("complex64", True, False), ("int64", False, True)]


def _modules():
    keys = []
    for dtype, device, reverse, segs in CASES + [(d, "columns", r, s) for d, r, s in COLUMN_CASES]:
        op = affine(segs, reverse)
        dt = np.dtype(dtype)
        for one in (False, True):
            key = ext_module_key(dt, scan_types(op, dt), op, "lookback" if device == "columns" else device, reverse,
                                 one)
            keys.append(dataclasses.replace(key, columns=True) if device == "columns" else key)
    return keys


@pytest.fixture(scope="module", autouse=True)
def _precompiled():
    cc.precompile(sorted(set(_modules()), key=repr))
    yield


def _data(rng, dtype, shape):
    dt = np.dtype(dtype)
    if dt.kind == "i":
        return rng.integers(-50, 50, shape).astype(dt), np.array(-1, dt)
    b = rng.standard_normal(shape)
    if dt.kind == "c":
        return (b + 1j * rng.standard_normal(shape)).astype(dt), np.array(0.6 + 0.7j, dt)
    return b.astype(dt), np.array(0.93, dt)


@pytest.mark.parametrize("dtype,algorithm,reverse,segmented", CASES, ids=["-".join(map(str, c)) for c in CASES])
def test_one_coefficient_is_the_array_s_bits(dtype, algorithm, reverse, segmented, rng):
    """``linear_recurrence(a0, b)`` against ``linear_recurrence(full(n, a0), b)``: equal bit for bit
    at sizes around the tiles (one item, a tile and one more, many tiles), with an initial and
    without, the scalar as a NumPy scalar, a 0-d array, a CuPy 0-d array and a CuPy broadcast."""
    for n in (1, 2, 4095, 4097, 1_000_003):
        b, a0 = _data(rng, dtype, n)
        segments = cp.asarray(rng.random(n) < 0.001) if segmented else None
        for initial in (0, 3):
            kw = dict(reverse=reverse, initial=initial, algorithm=algorithm, comm=SELF, segments=segments)
            d_b = cp.asarray(b)
            want = cp.asnumpy(distscan.linear_recurrence(cp.full(n, a0), d_b, **kw))
            for way in (a0[()], a0, cp.asarray(a0), cp.broadcast_to(cp.asarray(a0), (n,))):
                got = distscan.linear_recurrence(way, d_b, **kw)
                assert got.dtype == np.dtype(dtype) and got.shape == (n,)
                np.testing.assert_array_equal(cp.asnumpy(got), want,
                                              err_msg=f"n={n} {type(way).__name__} initial={initial}")


@pytest.mark.parametrize("dtype,reverse,segmented", COLUMN_CASES, ids=["-".join(map(str, c)) for c in COLUMN_CASES])
@pytest.mark.parametrize("w", [3, 300])
def test_one_coefficient_a_column_is_the_array_s_bits(dtype, reverse, segmented, w, rng):
    """``a`` of shape ``(w,)`` over ``(n, w)`` rows (the column-tile kernels, one coefficient a
    column) and a scalar over them, with an initial, past CARRY_TILES tiles at 3 columns: the
    broadcast array's results bit for bit."""
    n = columns.tile_rows(w, 16) * (columns.CARRY_TILES + 2) + 5 if w == 3 else 3001
    b, a0 = _data(rng, dtype, (n, w))
    row = (a0 * np.linspace(0.5, 1.0, w)) if np.dtype(dtype).kind != "i" else np.arange(w) % 3 - 1
    row = row.astype(dtype)
    segments = cp.asarray(rng.random(n) < 0.002) if segmented else None
    d_b = cp.asarray(b)
    for a in (row, a0):
        kw = dict(reverse=reverse, initial=2, comm=SELF, segments=segments)
        want = cp.asnumpy(distscan.linear_recurrence(cp.asarray(np.broadcast_to(a, (n, w))), d_b, **kw))
        got = distscan.linear_recurrence(cp.asarray(a), d_b, **kw)
        np.testing.assert_array_equal(cp.asnumpy(got), want, err_msg=f"a {np.shape(a)}")


def test_one_coefficient_on_the_warm_route_with_out_and_held_results(rng):
    """Calls of one kind in a row take the warm route (``Kind.aux``): a Python float there is one
    device word broadcast.  ``out=`` on some calls; every result the caller holds stays as it
    was; the float64 loop's result within float32's bound."""
    n = 200_003
    held = []
    for k in range(6):
        b = rng.standard_normal(n).astype(np.float32)
        a = 0.5 + 0.1 * k
        out = cp.full(n, np.nan, np.float32) if k % 2 else None
        got = distscan.linear_recurrence(a, cp.asarray(b), out=out, comm=SELF)
        assert out is None or got is out
        want = distscan.linear_recurrence(a, b.astype(np.float64), comm=SELF)
        np.testing.assert_allclose(cp.asnumpy(got), want, rtol=0, atol=1e-5 * max(1.0, np.abs(want).max()))
        held.append((got, cp.asnumpy(got).copy()))
    for got, was in held:
        np.testing.assert_array_equal(cp.asnumpy(got), was)


def test_a_coefficient_row_is_found_only_where_every_row_repeats_it():
    """``coefficient_row``: a zero stride along axis 0 (a broadcast) and two rows or more; not a
    contiguous array, a strided view, one row, or a NumPy array."""
    one = cp.asarray(np.float32(0.5))
    row, mode = coefficient_row(cp.broadcast_to(one, (7,)))
    assert row.shape == (1,) and mode == 1  # (not one of one_coefficient's: its bound unknown)
    row, mode = coefficient_row(cp.broadcast_to(cp.arange(3.0), (5, 3)))
    assert row.tolist() == [0.0, 1.0, 2.0] and mode == 1
    for a in (cp.full(7, 0.5), cp.arange(12.0).reshape(6, 2)[::2], cp.broadcast_to(one, (1,)),
              np.broadcast_to(np.float32(0.5), (7,))):
        row, mode = coefficient_row(a)
        assert row is None and mode == 0
    # one_coefficient's words are tame (mode 2) in every shape a call broadcasts them to: Part's
    # 1-D rows (n, 1) keep the word's item stride on their axis of one (the Part route's 1-D
    # calls were never tame, where Kind's were: their bits differed, tests/gpu/test_kinds.py)
    from distscan.backends.cuda.ext_states import one_coefficient
    for shape in ((7,), (7, 1), (7, 3)):
        row, mode = coefficient_row(one_coefficient(0.5, np.dtype(np.float32), shape))
        assert row.shape == (shape[-1] if len(shape) > 1 else 1,) and mode == 2, shape


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64"])
def test_one_coefficient_past_one_or_not_finite_keeps_the_rule(dtype, rng):
    """A scalar a with |a| > 1, or infinite, or NaN, is not tame (``one_coefficient`` records it
    so): its kernels keep the zero rule; tame or not, they give the full array's results bit for
    bit, zero values among b included."""
    from distscan.backends.cuda.ext_states import _TAME_AT, one_coefficient

    n = 100_003
    b, _ = _data(rng, dtype, n)
    b[rng.random(n) < 0.1] = 0
    d_b = cp.asarray(b)
    for a0 in (1.5, -1.0000001, np.inf, np.nan, 0.5):
        one = one_coefficient(a0, np.dtype(dtype), (n,))
        assert _TAME_AT.get(one.data.ptr, False) == (a0 == 0.5 and dtype != "complex64"), a0
        want = cp.asnumpy(distscan.linear_recurrence(cp.full(n, a0, dtype), d_b, comm=SELF))
        with np.errstate(all="ignore"):
            got = cp.asnumpy(distscan.linear_recurrence(a0, d_b, comm=SELF))
        # (tame, 0.5: IEEE's products with no test, the rule's bits: float32's a*y + b is one
        # explicit FMA in every path, states.cuh)
        np.testing.assert_array_equal(got, want, err_msg=f"a={a0}")


# -- the cache of one-item coefficients (ext_states.one_coefficient) ------------------------------

def test_a_coefficient_first_met_inside_a_refused_capture_is_right_after(rng):
    """A recurrence inside a caller's capture is refused; the number it met first is filled on the
    side stream and waited for, never recorded into the caller's graph, so the cached word is right
    for the next calls, cold (``Part``) and warm (``Kind``), on another stream too."""
    from distscan.backends.cuda import clear_caches, ext_states

    clear_caches()
    n = 100_003
    b = rng.standard_normal(n).astype(np.float32)
    d_b = cp.asarray(b)
    cp.cuda.Device().synchronize()
    stream = cp.cuda.Stream(non_blocking=True)
    for met, a0 in enumerate((0.8125, np.float32(-0.6875)), 1):  # the warm route (Kind), the cold one (Part)
        with stream:
            stream.begin_capture()
            try:
                with pytest.raises(RuntimeError, match="capture"):
                    distscan.linear_recurrence(a0, d_b, comm=SELF)
            finally:
                stream.end_capture()
        assert len(ext_states.ONE_COEFFICIENTS) == met  # (the entry was made inside the capture)
        want = distscan.linear_recurrence(float(a0), b.astype(np.float64), comm=SELF)
        for on in (stream, cp.cuda.Stream(non_blocking=True)):
            with on:
                got = cp.asnumpy(distscan.linear_recurrence(a0, d_b, comm=SELF))
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * max(1.0, np.abs(want).max()))


def test_numbers_past_the_cache_s_bound_get_words_of_their_own(monkeypatch, rng):
    """The cache keeps the first ``_MAX_ONES`` numbers a device meets and never frees one while
    kernels may read it (until ``clear_caches``); later numbers get a word of their own on the
    caller's stream, without the tame bound (so more slowly, with the same bits: the full
    array's, as the cached ones'), and every result the caller holds stays as it was."""
    from distscan.backends.cuda import clear_caches, ext_states

    clear_caches()
    monkeypatch.setattr(ext_states, "_MAX_ONES", 3)
    n = 50_001
    b = rng.standard_normal(n).astype(np.float32)
    d_b = cp.asarray(b)
    held = []
    for k in range(7):
        a0 = 0.5 + k / 16  # tame numbers: only the cached ones are known to be
        got = distscan.linear_recurrence(a0, d_b, comm=SELF) if k % 2 else \
            distscan.linear_recurrence(np.float32(a0), d_b, comm=SELF)
        array_s = cp.asnumpy(distscan.linear_recurrence(cp.full(n, a0, np.float32), d_b, comm=SELF))
        np.testing.assert_array_equal(cp.asnumpy(got), array_s, err_msg=f"a={a0}")  # (tame or not)
        held.append((got, cp.asnumpy(got)))
    assert len(ext_states.ONE_COEFFICIENTS) == 3 and len(ext_states._TAME_AT) == 3
    assert all(ext_states._TAME_AT.values())
    for got, was in held:
        np.testing.assert_array_equal(cp.asnumpy(got), was)
    clear_caches()
    assert not ext_states.ONE_COEFFICIENTS and not ext_states._TAME_AT


@pytest.mark.parametrize("a", [np.float32(0.875), np.float64(-0.5), np.float32(1.25), np.complex64(0.5 + 0.5j),
                               "0-d float32", "0-d float64"], ids=str)
def test_a_numpy_scalar_takes_the_warm_route_and_the_cold_one_s_bits(monkeypatch, a, rng):
    """A NumPy scalar or a 0-d CuPy array ``a`` is a call kind of its own (its dtype is strong):
    after the first call no call builds a ``Part``, and each gives the cold route's bits (a
    strided ``b`` takes it), in the dtype NumPy 2 gives ``a*b``.  A 0-d array's word is read
    where it is (changed between calls, the next call reads the new value)."""
    if isinstance(a, str):
        a = cp.asarray(np.array(0.75, a.split()[1]))
    n = 100_003
    b = cp.asarray(rng.standard_normal(2 * n).astype(np.float32))
    cold = distscan.linear_recurrence(a, b[::2], comm=SELF)
    assert cold.dtype == np.result_type(a.dtype, np.float32)
    warm_b = cp.ascontiguousarray(b[::2])
    distscan.linear_recurrence(a, warm_b, comm=SELF)
    built = []
    real_part = distscan.api.Part
    monkeypatch.setattr(distscan.api, "Part", lambda *args, **kw: built.append(1) or real_part(*args, **kw))
    for _ in range(3):
        got = distscan.linear_recurrence(a, warm_b, comm=SELF)
        assert got.dtype == cold.dtype
        np.testing.assert_array_equal(cp.asnumpy(got), cp.asnumpy(cold))
    assert not built
    if isinstance(a, cp.ndarray):
        a[...] = -0.25
        want = distscan.linear_recurrence(cp.full(n, -0.25, a.dtype), warm_b, comm=SELF)  # (the array's bits)
        np.testing.assert_array_equal(cp.asnumpy(distscan.linear_recurrence(a, warm_b, comm=SELF)), cp.asnumpy(want))
        assert not built


class _Decay(float):
    """A float subclass (its arithmetic could be its own): not a number the host holds."""


@pytest.mark.parametrize("a", [True, np.bool_(False), _Decay(0.5), 0.5, np.float64(0.5)], ids=repr)
def test_numbers_the_host_holds_take_one_route_cold_and_warm(a, rng):
    """``is_host_number`` decides for the cold route (``Part``) and the warm one (``Kind``) alike
    whether ``a`` is read as one device word: bools and subclasses are not (they take the array's
    rows); either way the bits are those of the full array in the dtype NumPy resolves."""
    from distscan._dtypes import is_host_number
    assert is_host_number(a) == (type(a) is float or isinstance(a, np.number))
    n = 50_001
    b = cp.asarray(rng.standard_normal(2 * n).astype(np.float32))
    cold = distscan.linear_recurrence(a, b[::2], comm=SELF)
    full = distscan.linear_recurrence(cp.full(n, float(a), cold.dtype), cp.ascontiguousarray(b[::2]), comm=SELF)
    warm_b = cp.ascontiguousarray(b[::2])
    for _ in range(3):
        warm = distscan.linear_recurrence(a, warm_b, comm=SELF)
        assert warm.dtype == cold.dtype
        np.testing.assert_array_equal(cp.asnumpy(warm), cp.asnumpy(full))
    np.testing.assert_array_equal(cp.asnumpy(cold), cp.asnumpy(full))


@pytest.mark.parametrize("reverse", [False, True])
def test_auto_looks_ahead_for_a_tame_float32_coefficient_with_the_look_back_s_bits(monkeypatch, reverse, rng):
    """"auto" scans the float32 recurrence of one tame coefficient (an EMA: ``|a| <= 1``,
    unsegmented) with the look-ahead from the plain scan's size (``plans.aux_looks_ahead``), on the
    cold route and the warm one, giving the look-back's bits; an untamed coefficient and a
    segmented EMA stay on the look-back, and so does an array ``a`` but forwards on a GPU of fast
    DRAM (``plans.fast_dram``: an H200), where the look-ahead gives the named look-ahead's bits;
    under the size, the look-back."""
    from distscan.backends.cuda import extended_lean, plans
    chosen = []

    def recording(auto_device):
        def choose(*args):
            chosen.append(auto_device(*args))
            return chosen[-1]
        return choose
    monkeypatch.setattr(plans, "auto_device", recording(plans.auto_device))
    monkeypatch.setattr(extended_lean, "auto_device", recording(extended_lean.auto_device))
    large, small = (1 << 23) + 777, 4097
    assert plans.uses_lookahead(large, 4, 4) and not plans.uses_lookahead(small, 4, 4)
    array_device = "lookahead" if plans.fast_dram(cp.cuda.Device().id) and not reverse else "lookback"
    for n in (large, small):
        b = cp.asarray(rng.standard_normal(2 * n).astype(np.float32))
        flags = cp.asarray(rng.random(n) < 1e-4)
        for a, segments, want_device in [
                (0.9375, None, "lookahead"), (np.float32(-0.5), None, "lookahead"),
                (1.25, None, "lookback"), (cp.full(n, 0.9375, np.float32), None, array_device),
                (0.9375, flags, "lookback")]:
            if n == small:
                want_device = "lookback"
            kw = dict(reverse=reverse, comm=SELF, segments=segments)
            # An array a's look-ahead rescans each run (not the look-back's bits): its own algorithm's
            named = want_device if isinstance(a, cp.ndarray) else "lookback"
            back = cp.asnumpy(distscan.linear_recurrence(a, b[::2], algorithm=named, **kw))
            contiguous = cp.ascontiguousarray(b[::2])
            for route, b_part in (("cold", b[::2]), ("warm", contiguous), ("warm", contiguous)):
                chosen.clear()
                got = distscan.linear_recurrence(a, b_part, **kw)
                assert chosen and set(chosen) == {want_device}, (n, type(a).__name__, segments is None, route, chosen)
                np.testing.assert_array_equal(cp.asnumpy(got), back, err_msg=f"n={n} {type(a).__name__} {route}")


def test_the_lean_route_asks_for_the_dram_only_where_a_choice_depends_on_it(monkeypatch, rng):
    """The warm route's "auto" asks the device for its DRAM (``plans.fast_dram``) only for an
    operator whose choice depends on it (the forward float32 recurrence with an array ``a``), not
    for a segmented sum, whose choice is the same on every GPU; the results stay the named kernels'."""
    from distscan.backends.cuda import extended_lean
    asked, chosen = [], []
    fast_dram, auto_device = extended_lean.fast_dram, extended_lean.auto_device
    monkeypatch.setattr(extended_lean, "fast_dram", lambda dev_id: asked.append(dev_id) or fast_dram(dev_id))
    monkeypatch.setattr(extended_lean, "auto_device",
                        lambda *args: chosen.append(auto_device(*args)) or chosen[-1])
    n = (1 << 23) + 777
    b = cp.asarray(rng.standard_normal(n).astype(np.float32))
    flags = cp.asarray(rng.random(n) < 1e-3)
    a = cp.asarray(rng.uniform(-1, 1, n).astype(np.float32))
    for _ in range(3):
        got = distscan.cumsum(b, segments=flags, comm=SELF)
    assert chosen and not asked, (chosen, asked)  # the lean route took the calls without asking
    want = distscan.cumsum(b, segments=flags, comm=SELF, algorithm=chosen[-1])
    np.testing.assert_array_equal(cp.asnumpy(got), cp.asnumpy(want))
    chosen.clear()
    for _ in range(3):
        got = distscan.linear_recurrence(a, b, comm=SELF)
    assert chosen and len(asked) == len(chosen), (chosen, asked)
    want = distscan.linear_recurrence(a, b, comm=SELF, algorithm=chosen[-1])
    np.testing.assert_array_equal(cp.asnumpy(got), cp.asnumpy(want))
