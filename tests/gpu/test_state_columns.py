"""Reverse scans and state operators (segmented scans, linear recurrences, compensated sums) over
``(n, w)`` rows along axis 0, ``w >= 2``, on the GPU: the extended module's columns kernels
(``backends/cuda/columns.scan_state_columns``; COLUMN_STATES and COLUMN_LIFTED in
``kernels/agent/agent_columns.cuh``).

Integers bit for bit against the CPU backend (whose loops are sequential: tests/ops check them
against the references), with every option at once: forwards and in reverse, inclusive and
exclusive (not the recurrences, which have none), seeded (a carry of rows before, as a rank's, by value in more than one launch past 64
columns), ``initial`` (projected per column), and the totals, at every edge of the tiling (one
row, a tile's rows and one more, more tiles than the carry kernel takes, slabs of 256 columns).
The reductions (a part's carry between ranks) are the CPU's states.  Float recurrences within
test_operators.py's bound of a float64 loop, and bit for bit where infinite and NaN coefficients
meet zero states (the zero rule); compensated float32 sums within assert_compensated's bound, column by
column."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from distscan._dtypes import scan_types
from distscan.ops import affine, compensated, get_op, segmented

from tests.support.devices import require_gpu
from tests.support.data import zero_rule_case
from tests.support.reference import assert_compensated, compensated_case, recurrence_reference

cp = require_gpu()
pytestmark = pytest.mark.gpu

import distscan  # noqa: E402
from distscan.backends import cpu as cpu_backend  # noqa: E402
from distscan.backends import cuda as gpu  # noqa: E402
from distscan.backends.cuda import columns, extended  # noqa: E402
from distscan.backends.cuda import compile as cc  # noqa: E402
from mpi4py import MPI  # noqa: E402

SELF = MPI.COMM_SELF

# (operator, dtype): integer state operators and reverse plain scans, exact in any association
EXACT = [(lambda rev: segmented(get_op("sum"), rev), "int64"), (lambda rev: segmented(get_op("max"), rev), "int32"),
         (lambda rev: segmented(get_op("gcd"), rev), "int64"), (lambda rev: affine(False, rev), "int64"),
         (lambda rev: affine(True, rev), "int64"), (lambda rev: segmented(get_op("sum"), rev), "int8"),
         (lambda rev: get_op("sum"), "int32"), (lambda rev: get_op("max"), "float16"),
         (lambda rev: get_op("bitwise_xor"), "uint8")]
EXACT_IDS = ["seg-sum-i64", "seg-max-i32", "seg-gcd-i64", "affine-i64", "seg-affine-i64", "seg-sum-i8",
             "sum-i32", "max-f16", "xor-u8"]


def _modules():
    keys = []
    for make, dt in EXACT:
        for reverse in (False, True):
            op = make(reverse)
            if op.state is None and not reverse:
                continue  # forward plain scans: the plain module's columns
            key = extended.ext_module_key(np.dtype(dt), scan_types(op, np.dtype(dt)), op, "lookback", reverse)
            keys.append(dataclasses.replace(key, columns=True))
    for dt in ("float32", "float64", "complex64"):
        for segs in (False, True):
            for reverse in (False, True):
                op = affine(segs, reverse)
                key = extended.ext_module_key(np.dtype(dt), scan_types(op, np.dtype(dt)), op, "lookback", reverse)
                keys.append(dataclasses.replace(key, columns=True))
    for reverse in (False, True):
        op = compensated(get_op("sum"))
        key = extended.ext_module_key(np.dtype("float32"), scan_types(op, np.dtype("float32")), op, "lookback",
                                      reverse)
        keys.append(dataclasses.replace(key, columns=True))
    return keys


@pytest.fixture(scope="module", autouse=True)
def _precompiled():
    cc.precompile(sorted(set(_modules()), key=repr))
    yield


def _values(rng, op, dtype, shape):
    dt = np.dtype(dtype)
    if "gcd" in op.name:
        return (rng.integers(1, 30, shape) * rng.choice([1, -1], shape)).astype(dt)
    if dt.kind == "f":
        return rng.integers(-60, 60, shape).astype(dt)  # float16 maxima: exact
    return rng.integers(-100, 100, shape).astype(dt)


def _aux(op, rng, n, w, dtype, density):
    """The auxiliary inputs in the order the operator names them, NumPy."""
    names = tuple(op.state.aux) if op.state is not None else ()
    out = []
    for name in names:
        if name == "segments":
            out.append(rng.random(n) < density)
        else:
            out.append(rng.integers(-2, 3, (n, w)).astype(np.dtype(dtype)))
    return tuple(out)


def _same(got, want, what):
    got, want = np.asarray(got), np.asarray(want)
    if want.dtype.names:
        for field in want.dtype.names:
            np.testing.assert_array_equal(got[field], want[field], err_msg=f"{what}: {field}")
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


@pytest.mark.parametrize("make,dtype", EXACT, ids=EXACT_IDS)
@pytest.mark.parametrize("reverse", [False, True])
def test_exact_state_columns_are_the_cpus_at_the_edges_of_the_tiling(make, dtype, reverse, rng):
    op = make(reverse)
    if op.state is None and not reverse:
        pytest.skip("a forward plain scan of columns is the plain module's (test_columns.py)")
    types = scan_types(op, np.dtype(dtype))
    size = extended.kernel_state(op, types).itemsize
    first = True
    for w in (2, 3, 65, 257):
        rows = columns.tile_rows(w, size)
        heights = [1, rows - 1, rows, rows + 1, 3 * rows + 5]
        if first and w == 3:
            heights.append(rows * columns.CARRY_TILES + 7)  # the tile folds scanned as rows again
        for n in heights:
            x = _values(rng, op, dtype, (n, w))
            for exclusive in (False, True) if op.state is None or not op.state.kind.startswith("affine") else (False,):
                for kw in ({}, {"seed": True}, {"initial": True}, {"seed": True, "initial": True}):
                    aux = _aux(op, rng, n, w, dtype, 0.02 if n > 100 else 0.3)
                    call = {}
                    if "seed" in kw:
                        head = _values(rng, op, dtype, (7, w))
                        call["seed"] = cpu_backend.reduce(head, op, types, aux=_aux(op, rng, 7, w, dtype, 0.3),
                                                          reverse=reverse)
                    if "initial" in kw:
                        if op.state is None:
                            continue  # plain scans take initial as a seed (the API folds it in)
                        call["initial"] = _values(rng, op, types.acc, (w,))
                    what = f"{op.name} {dtype} ({n}, {w}) exclusive={exclusive} {sorted(call)}"
                    with np.errstate(all="ignore"):
                        want, want_total = cpu_backend.scan(x, op, types, exclusive=exclusive, want_total=True,
                                                            aux=aux, reverse=reverse, **call)
                    got, total = gpu.scan(cp.asarray(x), op, types, exclusive=exclusive, want_total=True,
                                          aux=tuple(cp.asarray(a) for a in aux), reverse=reverse, **call)
                    assert got.shape == (n, w) and got.dtype == types.result, what
                    _same(cp.asnumpy(got), want, what)
                    _same(total, want_total, what + " total")
                    # a part's carry between ranks: the reduction of the same rows
                    carry = gpu.reduce(cp.asarray(x), op, types, aux=tuple(cp.asarray(a) for a in aux),
                                       reverse=reverse)
                    _same(carry, cpu_backend.reduce(x, op, types, aux=aux, reverse=reverse), what + " reduce")
        first = False


def _close(got, ref, bound_scale):
    """test_operators.py's bound: 64 eps log2(n) times the running magnitude; NaN where NaN."""
    got, ref = np.asarray(got), np.asarray(ref)
    eps = np.finfo(got.dtype).eps
    tol = 64 * eps * np.maximum(1.0, bound_scale) * np.log2(max(2, len(ref)))
    err = np.abs(got.astype(np.complex128) - ref.astype(np.complex128))
    ok = (err <= tol) | (np.isnan(got) & np.isnan(ref)) | (got == ref)
    assert ok.all(), (np.argwhere(~ok)[:5], got[~ok][:5], ref[~ok][:5])


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64"])
@pytest.mark.parametrize("w", [2, 5, 64, 300])
def test_float_recurrence_columns_are_within_the_bound_of_a_float64_loop(dtype, w, rng):
    """``distscan.linear_recurrence(a, b)`` of (n, w) rows, with and without segments and an
    initial, both directions, against the CPU's loop in double precision."""
    n = {2: 300_001, 5: 100_003, 64: 20_011, 300: 2_003}[w]
    wide = np.complex128 if dtype.startswith("complex") else np.float64
    b = rng.standard_normal((n, w)).astype(wide)
    a = rng.uniform(-1, 1, (n, w)).astype(wide)
    if dtype.startswith("complex"):
        b = b + 1j * rng.standard_normal((n, w))
        a = a * np.exp(1j * rng.uniform(0, 2 * np.pi, (n, w)))
    b, a = b.astype(dtype), a.astype(dtype)
    for segments in (None, rng.random(n) < 0.001):
        for reverse in (False, True):
            initial = 0 if segments is None else 2
            ref = distscan.linear_recurrence(a.astype(wide), b.astype(wide), reverse=reverse, segments=segments,
                                             initial=initial, comm=SELF)
            got = distscan.linear_recurrence(cp.asarray(a), cp.asarray(b), reverse=reverse, initial=initial,
                                             segments=None if segments is None else cp.asarray(segments), comm=SELF)
            assert got.shape == (n, w) and got.dtype == np.dtype(dtype)
            _close(cp.asnumpy(got), ref, np.abs(ref).max(axis=0, initial=1))
    # a constant decay (a scalar) over every column, the exponential moving average
    ref = distscan.linear_recurrence(0.75, b.astype(wide), comm=SELF)
    _close(cp.asnumpy(distscan.linear_recurrence(0.75, cp.asarray(b), comm=SELF)), ref,
           np.abs(ref).max(axis=0, initial=1))


@pytest.mark.parametrize("w", [129, 300])
def test_segmented_complex128_recurrence_columns_past_the_carry_tiles(w, rng):
    """The largest state (the segmented complex128 map, 48 bytes) over more than 128 columns (a
    tile is one run a column) and past CARRY_TILES tiles (the tile folds scanned as rows again):
    its runs were 1 row, so its tile folds were as many rows as the input, level after level
    without end.  Against the CPU's loop, both directions."""
    op = affine(True)
    size = extended.kernel_state(op, scan_types(op, np.dtype("complex128"))).itemsize
    assert size == 48
    n = columns.tile_rows(w, size) * (columns.CARRY_TILES + 3) + 7
    b = rng.standard_normal((n, w)) + 1j * rng.standard_normal((n, w))
    a = rng.uniform(-1, 1, (n, w)) * np.exp(1j * rng.uniform(0, 2 * np.pi, (n, w)))
    segments = rng.random(n) < 0.01
    for reverse in (False, True):
        ref = distscan.linear_recurrence(a, b, segments=segments, reverse=reverse, initial=1j, comm=SELF)
        got = distscan.linear_recurrence(cp.asarray(a), cp.asarray(b), segments=cp.asarray(segments),
                                         reverse=reverse, initial=1j, comm=SELF)
        assert got.shape == (n, w) and got.dtype == np.complex128
        _close(cp.asnumpy(got), ref, np.abs(ref).max(axis=0, initial=1))


@pytest.mark.parametrize("reverse", [False, True])
def test_infinite_and_nan_coefficients_in_columns_keep_the_zero_rule(reverse, rng):
    """tests/support/data.zero_rule_case's coefficients (0, 1, inf, NaN) and values (0, 1, 2) in each
    column, infinities at the tiles' edges too: the sequential loop's results bit for bit (NaN where
    it gives NaN), with and without segments and an initial."""
    n, w = 5003, 6
    cases = [zero_rule_case(rng, n) for _ in range(w)]
    a, b = np.stack([c[0] for c in cases], axis=1), np.stack([c[1] for c in cases], axis=1)
    rows = columns.tile_rows(w, 8)
    edges = np.array([0, 1, rows - 1, rows, 2 * rows, n - 1])
    a[edges, 0] = np.inf
    for segments in (None, rng.random(n) < 0.05):
        for initial in (0, 2):
            want = recurrence_reference(a, b, initial=initial, reverse=reverse, segments=segments)
            for dtype in ("float32", "float64"):
                got = distscan.linear_recurrence(cp.asarray(a.astype(dtype)), cp.asarray(b.astype(dtype)),
                                                 reverse=reverse, initial=initial, comm=SELF,
                                                 segments=None if segments is None else cp.asarray(segments))
                np.testing.assert_array_equal(cp.asnumpy(got), want.astype(dtype),
                                              err_msg=f"{dtype} initial={initial} segments={segments is not None}")


@pytest.mark.parametrize("reverse", [False, True])
def test_compensated_float32_columns_are_within_the_compensated_bound(reverse, rng):
    n, w = 200_003, 3
    cases = [compensated_case(rng, n) for _ in range(w)]
    x = np.stack([c[0] for c in cases], axis=1)
    got = cp.asnumpy(distscan.cumsum(cp.asarray(x), compensated=True, reverse=reverse, comm=SELF))
    assert got.shape == (n, w) and got.dtype == np.float32
    for c in range(w):
        assert_compensated(got[:, c], x[:, c], cases[c][1], reverse=reverse)


def test_column_states_beside_views_out_and_many_columns(rng):
    """A strided view in, ``out=`` in Fortran order; 600 columns (three slabs) of a reverse
    segmented sum and of a recurrence whose coefficients broadcast from one row."""
    base = rng.integers(-50, 50, (9001, 40)).astype(np.int64)
    flags = rng.random(3001) < 0.05
    x = base[::3, 1::2]
    want = distscan.cumsum(x, segments=flags, reverse=True, exclusive=True, comm=SELF)
    out = cp.empty((20, 3001), np.int64).T
    got = distscan.cumsum(cp.asarray(base)[::3, 1::2], segments=cp.asarray(flags), reverse=True, exclusive=True,
                          out=out, comm=SELF)
    assert got is out
    np.testing.assert_array_equal(cp.asnumpy(out), want)
    wide = rng.integers(-9, 9, (2049, 600)).astype(np.int64)
    f = rng.random(2049) < 0.01
    np.testing.assert_array_equal(cp.asnumpy(distscan.cumsum(cp.asarray(wide), segments=cp.asarray(f), reverse=True,
                                                             comm=SELF)),
                                  distscan.cumsum(wide, segments=f, reverse=True, comm=SELF))
    a_row = rng.integers(-2, 3, 600).astype(np.int64)
    np.testing.assert_array_equal(
        cp.asnumpy(distscan.linear_recurrence(cp.asarray(a_row), cp.asarray(wide), initial=3, comm=SELF)),
        distscan.linear_recurrence(a_row, wide, initial=3, comm=SELF))

