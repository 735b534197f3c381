"""The CPU's state loops (distscan.backends.cpu_states.Loops) and the states' folds
(distscan.ops.state.State.fold_for): compiled once, when they are made, for the arguments the
plans pass; no later call compiles again, whatever the layout of the arrays (contiguous,
reversed, strided, read-only, unaligned), and every layout gives the same bits.  This is what lets
a plan skip the agreement after a CPU state scan's finish: nothing there can compile (and fail) on
one rank only (distscan.dist.plan).

Serial.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distscan.ops.options import call_op
from distscan._dtypes import scan_types
from distscan.backends import cpu, cpu_fused, cpu_states

OPS = [("segments", "sum", "int64", False), ("segments", "max", "float64", True),
       ("segments", "nansum", "float32", False), ("affine", "sum", "float64", False),
       ("affine segments", "sum", "complex128", True), ("compensated", "sum", "float64", False),
       ("segments", "prod", "float64", False), ("segments", "nanprod", "float32", True)]  # zero absorption's fields


def _case(kind, base, dtype, reverse):
    op = call_op(base, segments=True if "segments" in kind else None, compensated=kind == "compensated",
                 coefficients=1 if kind.startswith("affine") else None, reverse=reverse)
    types = scan_types(op, np.dtype(dtype), np.dtype(dtype) if kind.startswith("affine") else None)
    return op, types


def _layouts(a):
    """``a`` as the same values in other layouts: reversed, strided, read-only, unaligned."""
    rev = np.ascontiguousarray(a[::-1])[::-1]
    strided = np.zeros((2 * a.shape[0],) + a.shape[1:], a.dtype)
    strided[::2] = a
    ro = a.copy()
    ro.setflags(write=False)
    raw = np.zeros(a.nbytes + 1, np.uint8)[1:]
    unaligned = raw.view(a.dtype).reshape(a.shape) if a.dtype.itemsize > 1 else a.copy()
    unaligned[...] = a
    return {"contiguous": a, "reversed": rev, "strided": strided[::2], "read-only": ro, "unaligned": unaligned}


@pytest.mark.parametrize("kind,base,dtype,reverse", OPS)
def test_loops_compile_once_and_take_any_layout(kind, base, dtype, reverse):
    op, types = _case(kind, base, dtype, reverse)
    w = 2
    loops = cpu.prepare(op, types, False, w)
    assert isinstance(loops, cpu_states.Loops)
    compiled = [len(loops._carry.dispatcher.signatures), len(loops._scan.dispatcher.signatures)]
    assert compiled == [1, 1]
    rng = np.random.default_rng(5)
    n = 37
    x = rng.standard_normal((n, w)).astype(types.acc) if types.acc.kind != "i" else rng.integers(-9, 9, (n, w))
    flags = rng.random(n) < 0.2
    coef = rng.uniform(0.5, 1, (n, w)).astype(types.acc)
    aux = {"segments": (flags,), "affine": (coef,), "affine segments": (coef, flags), "compensated": ()}[kind]
    seed = loops.carry(x[:5], aux=tuple(a[:5] for a in aux), reverse=reverse)
    want_out = np.empty((n, w), types.acc)
    want_total = loops.scan(x, aux, seed=seed, out=want_out, reverse=reverse, want_total=True)
    want_carry = loops.carry(x, aux, reverse)
    for name, xl in _layouts(x).items():
        for aux_name in ("contiguous", "reversed", "read-only", "unaligned"):
            al = tuple(_layouts(a)[aux_name] for a in aux)
            outs = _layouts(np.zeros((n, w), types.acc))
            for out_name in ("contiguous", "reversed", "strided", "unaligned"):
                out = outs[out_name]
                total = loops.scan(xl, al, seed=seed, out=out, reverse=reverse, want_total=True)
                where = f"x {name}, aux {aux_name}, out {out_name}"
                np.testing.assert_array_equal(out, want_out, err_msg=where)
                np.testing.assert_array_equal(total, want_total, err_msg=where)
            np.testing.assert_array_equal(loops.carry(xl, al, reverse), want_carry)
    # a one-row part (NumPy calls a reversed view of it contiguous) and a 1-D one (one column)
    loops1 = cpu.prepare(op, types, False, 1)
    x1 = x[:1, :1]
    loops1.scan(x1[::-1], tuple(a[:1] if a.ndim == 1 else a[:1, :1] for a in aux), out=np.empty((1, 1), types.acc),
                reverse=True)
    loops1.carry(x[:, 0].copy(), tuple(a if a.ndim == 1 else a[:, 0].copy() for a in aux))
    assert [len(loops._carry.dispatcher.signatures), len(loops._scan.dispatcher.signatures)] == compiled
    assert [len(loops1._carry.dispatcher.signatures), len(loops1._scan.dispatcher.signatures)] == [1, 1]
    if loops.absorbs:  # a segmented float product's pass for its zero-absorption fields (SEGMENTED_TAIL)
        assert len(loops._tail.dispatcher.signatures) == len(loops1._tail.dispatcher.signatures) == 1


@pytest.mark.parametrize("kind,base,dtype,reverse", OPS)
def test_folds_compile_once_and_take_any_layout(kind, base, dtype, reverse):
    op, types = _case(kind, base, dtype, reverse)
    fold = op.state.fold_for(types.state)
    assert len(fold.dispatcher.signatures) == 1
    rng = np.random.default_rng(6)
    stack = np.zeros((4, 3), types.state)
    for name in types.state.names:
        field = stack[name]
        field[...] = rng.integers(0, 2, field.shape) if field.dtype.kind == "b" else rng.uniform(0.5, 2, field.shape)
    want = np.empty(3, types.state)
    op.state.fold(stack, want)
    # the exchange's carries are views into a byte buffer (unaligned, strided): the same fold
    recs = np.zeros((4, 3 * types.state.itemsize + 24), np.uint8)
    view = recs[:, 24:].view(types.state)
    view[...] = stack
    got = np.empty(3, types.state)
    op.state.fold(view, got)
    for name in types.state.names:  # (not the padding bytes, which nothing writes)
        assert got[name].tobytes() == want[name].tobytes(), name
    # np.stack of padded states packs their dtype: the fold converts it back, compiles nothing
    packed = np.stack([stack[0], stack[1], stack[2], stack[3]])
    assert packed.dtype != types.state or types.state.itemsize == sum(f[0].itemsize for f in
                                                                      types.state.fields.values())
    op.state.fold(packed, got)
    for name in types.state.names:
        assert got[name].tobytes() == want[name].tobytes(), name
    assert len(fold.dispatcher.signatures) == 1


def test_declared_operators_have_no_prepared_loops():
    import distscan
    absmax = distscan.Operator("absmax_test", lambda a, b: np.maximum(np.abs(a), np.abs(b)), identity=0.0)
    types = scan_types(absmax, np.dtype(np.float64))
    assert cpu.prepare(absmax, types, False, 1) is None
    assert cpu.prepare(call_op("sum"), scan_types(call_op("sum"), np.dtype(np.int64)), False, 1) is None


# The one-column loops (cpu_state_loops.*_ONE: scalars in, scalars out) share their bodies with the
# w-column ones; each column of a w-column scan must be the one-column scan of that column, bit for
# bit, whatever the seed, initial, direction and values (the affine flush of subnormal products,
# infinite and NaN coefficients, overflowing compensated sums).
ONE_COLUMN_CASES = OPS + [("segments", "prod", "int64", True), ("segments", "nanmax", "float64", False),
                          ("segments", "prod", "complex128", True), ("segments", "nanprod", "float64", False),
                          ("affine segments", "sum", "float64", False), ("affine", "sum", "float32", True),
                          ("compensated", "sum", "complex128", True), ("compensated", "nansum", "float32", False)]


def _values(rng, acc, shape, regime):
    if acc.kind in "iub":
        return rng.integers(-9, 9, shape).astype(acc)
    x = rng.standard_normal(shape)
    if acc.kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    if regime == "extremes":  # overflow, infinities, NaN and zeros of both signs among ordinary values
        pick = rng.random(shape)
        x = np.where(pick < 0.1, np.inf, np.where(pick < 0.15, np.nan, np.where(pick < 0.3, 1e308, x)))
        x = np.where((pick >= 0.3) & (pick < 0.36), np.where(pick < 0.33, 0.0, -0.0), x)
    return x.astype(acc)


def _coefficients(rng, acc, shape, regime):
    if regime == "tiny":  # products that turn subnormal (the flush), and zeros
        c = rng.uniform(1e-30, 1e-20, shape) * (rng.random(shape) < 0.9)
    elif regime == "extremes":  # infinite and NaN coefficients beside zero maps (the zero rule)
        pick = rng.random(shape)
        c = np.where(pick < 0.1, np.inf, np.where(pick < 0.15, np.nan, np.where(pick < 0.3, 0.0,
                                                                                rng.uniform(0.5, 1, shape))))
    else:
        c = rng.uniform(0.5, 1.0, shape)
    return c.astype(acc)


def _bits(a):
    """``a``'s bytes, every NaN as one NaN: a NaN's sign and payload are not part of a result
    (x86 makes an invalid operation's NaN negative; which NaN a product keeps is the compiler's)."""
    a = np.array(a)
    if a.dtype.kind in "fc":
        a[np.isnan(a)] = np.nan
    return a.tobytes()


@settings(max_examples=200, deadline=None, derandomize=True)
@given(case=st.sampled_from(ONE_COLUMN_CASES), exclusive=st.booleans(), seeded=st.booleans(),
       with_initial=st.booleans(), regime=st.sampled_from(["plain", "tiny", "extremes"]),
       n=st.integers(1, 40), seed=st.integers(0, 2**31))
def test_one_column_loops_are_the_w_column_loops_bit_for_bit(case, exclusive, seeded, with_initial, regime, n, seed):
    kind, base, dtype, reverse = case
    op, types = _case(kind, base, dtype, reverse)
    exclusive = exclusive and not kind.startswith("affine")  # affine scans are inclusive only
    acc, w = np.dtype(types.acc), 3
    wide, one = cpu.prepare(op, types, exclusive, w), cpu.prepare(op, types, exclusive, 1)
    assert one.one and not wide.one
    rng = np.random.default_rng(seed)
    with np.errstate(all="ignore"):
        x = _values(rng, acc, (n + 5, w), regime)
        flags = rng.random(n + 5) < 0.2
        coef = _coefficients(rng, acc, (n + 5, w), regime)
        aux = {"segments": (flags,), "affine": (coef,), "affine segments": (coef, flags), "compensated": ()}[kind]
        initial = _values(rng, acc, (w,), "plain") if with_initial else None
        # the seed: the carry of 5 rows before (in scan order), as the exchange would give it
        head, body = (slice(n, n + 5), slice(0, n)) if reverse else (slice(0, 5), slice(5, n + 5))
        seed_row = wide.carry(x[head], tuple(a[head] for a in aux), reverse) if seeded else None
        out = np.empty((n, w), acc)
        total = wide.scan(x[body], tuple(a[body] for a in aux), seed=seed_row, out=out, initial=initial,
                          reverse=reverse, want_total=True)
        carry = wide.carry(x[body], tuple(a[body] for a in aux), reverse)
        for j in range(w):
            col = (lambda a: a[body] if a.ndim == 1 else a[body, j:j + 1])
            out1 = np.empty((n, 1), acc)
            total1 = one.scan(col(x), tuple(col(a) for a in aux), seed=None if seed_row is None else seed_row[j:j + 1],
                              out=out1, initial=None if initial is None else initial[j:j + 1], reverse=reverse,
                              want_total=True)
            carry1 = one.carry(col(x), tuple(col(a) for a in aux), reverse)
            assert _bits(out1[:, 0]) == _bits(out[:, j]), (j, out1[:, 0], out[:, j])
            for name in types.state.names:
                assert _bits(total1[name]) == _bits(total[name][j:j + 1]), (name, j)
                assert _bits(carry1[name]) == _bits(carry[name][j:j + 1]), (name, j)
    assert [len(one._carry.dispatcher.signatures), len(one._scan.dispatcher.signatures)] == [1, 1]  # scalars of the exact dtypes


@pytest.mark.parametrize("kind", ["segments", "affine segments"])
@pytest.mark.parametrize("reverse", [False, True])
def test_the_fused_calls_find_the_first_start_in_scan_order(kind, reverse):
    """The fused calls' search (cpu_fused._first_set: ``Loops._first`` through its entry point over
    the first COMPILED_ROWS rows, then NumPy's first_flagged over the rest; cpu_fused._marks): the
    first set row of flags forwards, of a reversed view (a reverse scan's scan order) and of
    strided and read-only ones, the count where none is, compiled once for them all; and the
    segment fields ``mark`` writes into a record are those segment_fields writes from no seed
    (forwards ``flag``; in reverse ``inner`` and ``end``).  Sizes about COMPILED_ROWS, and a flag
    just before, at and after it, take each side of the split."""
    op, types = _case(kind, "sum", "float64", reverse)
    loops = cpu_states.loops(op, types, False, 1)
    rng = np.random.default_rng(3)
    split = cpu_fused.COMPILED_ROWS
    for n in (1, 2, 5, split - 1, split, split + 1, 2 * split + 3, 4097, 20000):
        for at in (split - 1, split, split + 1):  # one flag alone, about the split
            if at < n:
                one = np.zeros(n, bool)
                one[at] = True
                for view in (one, one[::-1]):
                    set_rows = np.flatnonzero(view)
                    assert cpu_fused._first_set(loops)(view) == int(set_rows[0]), (n, at)
        for density in (0.0, 1e-5, 1 / 64, 0.5):
            flags = rng.random(2 * n) < density
            if rng.integers(2):
                flags[rng.integers(2 * n)] = bool(rng.integers(2))
            ro = flags[:n].copy()
            ro.flags.writeable = False
            for view in (flags[:n], flags[:n][::-1], flags[::2], flags[::-2], ro, flags[n - 1:n], flags[-1:]):
                record, expected = np.zeros(1, loops.dtype), np.zeros(1, loops.dtype)
                find, mark = cpu_fused._marks(loops, record, loops.state.segments == "ends")
                set_rows = np.flatnonzero(view)
                assert find(view) == (int(set_rows[0]) if set_rows.size else len(view))
                mark(view)
                cpu_fused.segment_fields(expected, None, view, loops.state.segments == "ends")
                assert record.tobytes() == expected.tobytes(), (n, density, view.strides)
    assert len(loops._first.dispatcher.signatures) == 1  # every layout without a compile at a call
