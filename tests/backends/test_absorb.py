"""Zero absorption (distscan.backends.absorb) for float products computed tile by tile, as the GPU kernel
does, checked on the CPU with NumPy: random products with zeros, signed zeros, overflow, infinities
and NaN against NumPy's sequential product, for any tile size and seed."""

import numpy as np
import pytest

from tests.support.reference import reference_scan
from tests.support.seeds import shared_rng


# --- the GPU's zero fix-up, on the CPU: the same array code with NumPy ----------------------

def _tiled_cumprod(x, seed, tile):
    """What a tile-parallel kernel computes: each tile in order from the product of the tile
    aggregates before it (so a tile's own overflow can meet an earlier zero)."""
    out, prefix = np.empty_like(x), seed
    with np.errstate(all="ignore"):
        for s in range(0, x.size, tile):
            c = np.multiply.accumulate(x[s:s + tile])
            out[s:s + tile] = prefix * c
            prefix = prefix * c[-1]
    return out


@pytest.mark.parametrize("gpu_way", [False, True])
def test_gpu_zero_fix_up_logic_on_the_cpu(comm, gpu_way):
    """``gpu_way``: with an array module that is not NumPy (``_CuPyLike``), as on the GPU, where
    a few columns' reductions go column by column as 1-D arrays (``absorb._down``)."""
    from distscan.backends.absorb import absorb_zeros
    xp = _CuPyLike() if gpu_way else np
    rng = shared_rng(comm)
    big = 1e300
    values = np.array([0.0, -0.0, big, -big, 2.0, -3.0, 0.5, np.inf, -np.inf, np.nan])
    p = np.array([0.05, 0.02, 0.3, 0.1, 0.2, 0.1, 0.19, 0.02, 0.01, 0.01])
    for trial in range(3000):
        n, w = int(rng.integers(1, 60)), (1, 3, 20)[trial % 3]  # (past absorb._FEW_COLUMNS too)
        x = rng.choice(values, (n, w), p=p / p.sum())
        seeds = rng.choice([1.0, 0.0, -0.0, big, -2.0, np.inf], w)
        out = np.stack([_tiled_cumprod(x[:, c], seeds[c], tile=int(rng.integers(1, 9))) for c in range(w)], axis=1)
        absorb_zeros(xp, x, out, seeds, False)
        for c in range(w):
            got, ref = out[:, c], reference_scan(x[:, c], "prod", initial=seeds[c])
            assert ((np.isnan(got) & np.isnan(ref)) | ((got == ref) & (np.signbit(got) == np.signbit(ref)))
                    | (np.isfinite(ref) & (ref != 0) & np.isclose(got, ref, rtol=1e-12))).all(), \
                (seeds[c], x[:, c], got, ref)


# --- segmented products: the GPU's repairs of its results and totals, on the CPU ----------------
#
# absorb_segmented and segmented_tail (distscan.backends.absorb) run on the host after the GPU's
# kernels (backends/cuda/extended.py); here with NumPy on what a tile-parallel segmented kernel
# computes, against the sequential product (results) and the CPU loops' state (totals).  Every
# magnitude but the zeros' is 1, 2 or 2^600 (2^60 for float32): products are exact, and overflow
# in any grouping exactly where they do in sequence, so the results must be NumPy's bit for bit.

def _powers(rng, shape, dtype):
    big = 2.0 ** (600 if np.dtype(dtype) == np.float64 else 60)
    values = np.array([0.0, -0.0, 1.0, -1.0, 2.0, -2.0, big, -big, np.inf, -np.inf, np.nan])
    p = np.array([8, 5, 20, 14, 8, 6, 20, 10, 2, 1, 2], float)
    return rng.choice(values, shape, p=p / p.sum()).astype(dtype)


def _starts(flags, ends, fresh_first):
    """The rows that start a segment afresh in scan order (forwards flagged rows; in reverse the rows
    after flagged ones), row 0 too where no seed continues into it."""
    if ends:
        starts = np.concatenate([[fresh_first], flags[:-1]]).astype(bool)
    else:
        starts = flags.copy()
        starts[0] |= fresh_first
    return starts


def _tiled_segmented(x, starts, seed_value, tile, exclusive):
    """What a tile-parallel kernel computes for a segmented product in scan order: each tile scans
    its rows in sequence, and its rows before its first start take the product of the tile
    aggregates before them times their own (so a tile's own overflow meets an earlier zero)."""
    n, w = x.shape
    incl = np.empty_like(x)
    prefix = np.ones(w, x.dtype) if seed_value is None else np.asarray(seed_value, x.dtype)
    with np.errstate(all="ignore"):
        for s in range(0, n, tile):
            acc, started = None, False
            for i in range(s, min(n, s + tile)):
                if starts[i] or acc is None:
                    acc, started = x[i].copy(), started or bool(starts[i])
                else:
                    acc = acc * x[i]
                incl[i] = acc if started else prefix * acc
            prefix = acc if started else prefix * acc
    if not exclusive:
        return incl
    out = np.empty_like(incl)
    out[1:] = incl[:-1]
    out[0] = prefix if n == 0 else (1 if seed_value is None else seed_value)
    out[starts] = 1
    return out


def _sequential(x, starts, seed_value, exclusive):
    """NumPy's sequential segmented product in scan order, the first segment from the seed's value."""
    out = np.empty_like(x)
    prev = np.ones(x.shape[1], x.dtype) if seed_value is None else np.asarray(seed_value, x.dtype)
    with np.errstate(all="ignore"):
        for i in range(x.shape[0]):
            before = np.ones_like(prev) if starts[i] else prev
            prev = before * x[i]
            out[i] = before if exclusive else prev
    return out


def _check_tail(op, types, rows, flags, seed, value, want, what):
    """``segmented_tail`` completes a GPU-like total (the kernels' fields of ``want`` and the tiled
    ``value``, the rest zeros) to ``want``, the CPU's state, field for field, bit for bit."""
    from distscan.backends.absorb import segmented_tail
    kernel = np.zeros(rows.shape[1], types.state)
    for field in op.state.kernel_dtype(types.acc).names:
        kernel[field] = want[field]
    kernel["value"] = value
    got = segmented_tail(np, op.state, rows, flags, kernel, seed)
    for field in types.state.names:
        # (the sign of a zero has no meaning once the value is NaN: the parity of a NaN's sign bit)
        g, h = (np.where(np.isnan(want["value"]), False, a[field]) if field == "sign" else a[field]
                for a in (got, want))
        assert _same_bits(g, h), (*what, field, got, want)


def _same_bits(got, want):
    """Equal bit for bit, NaN as NaN (a NaN's sign and payload are no part of a result)."""
    got, want = np.array(got), np.array(want)
    for a in (got, want):
        if a.dtype.kind in "fc":
            a[np.isnan(a)] = np.nan
    return got.tobytes() == want.tobytes()


def _seed_state(op, rng, w, dtype):
    """A seed as the exchange gives it: the fold of a few lifted rows' states (or None)."""
    k = int(rng.integers(0, 4))
    if k == 0:
        return None
    head = _powers(rng, (k, w), dtype)
    states = op.state.lift(head, (rng.random(k) < 0.3,), np.dtype(dtype))
    seed = np.empty(w, states.dtype)
    op.state.fold(states, seed)
    return seed


@pytest.mark.parametrize("gpu_way", [False, True])
def test_gpu_segmented_zero_fix_up_logic_on_the_cpu(comm, gpu_way):
    """``gpu_way``: as in the test above; 1, 3 and 20 columns (past absorb._FEW_COLUMNS)."""
    from distscan.backends.absorb import absorb_segmented
    from distscan.ops import get_op, segmented
    xp = _CuPyLike() if gpu_way else np
    rng = shared_rng(comm)
    for trial in range(1500):
        dtype = ("float64", "float32")[trial % 2]
        ends, exclusive = bool(rng.integers(2)), bool(rng.integers(2))
        op = segmented(get_op("prod"), ends)
        n, w = int(rng.integers(1, 40)), int(rng.choice([1, 3, 20]))
        x = _powers(rng, (n, w), dtype)
        flags = rng.random(n) < rng.choice([0.0, 0.1, 0.4])
        seed = _seed_state(op, rng, w, dtype)
        fresh_first = seed is None or (ends and bool(seed["end"][0]))
        starts = _starts(flags, ends, fresh_first)
        seed_value = None if fresh_first else seed["value"]
        out = _tiled_segmented(x, starts, seed_value, int(rng.integers(1, 9)), exclusive)
        want = _sequential(x, starts, seed_value, exclusive)
        with np.errstate(all="ignore"):
            absorb_segmented(xp, x, out, flags, seed, exclusive, ends)
        assert _same_bits(out, want), (trial, ends, exclusive, x[:, 0], flags, seed, out[:, 0], want[:, 0])
        zeros = want == 0
        assert (np.signbit(out[zeros]) == np.signbit(want[zeros])).all()


def test_gpu_segmented_totals_get_the_cpu_loops_state(comm):
    """segmented_tail completes a total whose value is the tiles' (as the GPU's struct holds it) into
    the state the CPU loops give, field for field."""
    from distscan._dtypes import scan_types
    from distscan.backends import cpu
    from distscan.ops import get_op, segmented
    rng = shared_rng(comm)
    for trial in range(800):
        dtype = ("float64", "float32")[trial % 2]
        ends, name = bool(rng.integers(2)), ("prod", "nanprod")[trial % 3 == 0]
        op = segmented(get_op(name), ends)
        types = scan_types(op, np.dtype(dtype))
        n, w = int(rng.integers(1, 40)), int(rng.choice([1, 3]))
        x = _powers(rng, (n, w), dtype)
        flags = rng.random(n) < rng.choice([0.0, 0.1, 0.4])
        seed = _seed_state(op, rng, w, dtype)
        loops = cpu.prepare(op, types, False, w)
        want = loops.scan(x, (flags,), seed=seed, out=np.empty((n, w), types.acc), want_total=True)
        rows = np.where(np.isnan(x), np.ones((), x.dtype), x) if name == "nanprod" else x
        fresh_first = seed is None or (ends and bool(seed["end"][0]))
        tiled = _tiled_segmented(rows, _starts(flags, ends, fresh_first), None if fresh_first else seed["value"],
                                 int(rng.integers(1, 9)), False)
        _check_tail(op, types, rows, flags, seed, tiled[-1], want, (trial, x[:, 0], flags, seed))


class _CuPyLike:
    """NumPy as the host steps meet CuPy 14.2: ``asarray`` of a zero makes a 0-d array of +0.0
    (``cp.asarray(-0.0, cp.float32)`` has no sign bit: found on an H200, 2026-11-26, where every
    zero the segmented repair wrote came out +0.0).  The rest is NumPy's."""

    def __getattr__(self, name):
        return getattr(np, name)

    @staticmethod
    def asarray(a, dtype=None):
        r = np.asarray(a, dtype)
        if r.ndim == 0 and r.dtype.kind == "f" and r == 0:
            r = np.zeros((), r.dtype)
        return r


def test_the_cupy_stand_in_loses_the_sign_as_cupy_does():
    assert not np.signbit(_CuPyLike().asarray(-0.0, np.float32))
    assert np.signbit(_CuPyLike().where(True, np.float32(-0.0), np.float32(0.0)))


def test_kernel_totals_take_the_host_states_shared_fields():
    """``ext_states.restate``: the kernels' (value, flag) struct of a segmented float product into the
    host state (which adds the zero-absorption fields: ``segmented_tail`` fills them) and back, the
    fields both have copied, the others zero (it read every host field from the struct before,
    'no field of name pre', on the GPU 2026-11-26)."""
    from distscan._dtypes import scan_types
    from distscan.backends.cuda import ext_states, extended
    from distscan.ops import get_op, segmented
    for reverse in (False, True):
        op = segmented(get_op("prod"), reverse)
        types = scan_types(op, np.dtype("float32"))
        kstate, host = extended.kernel_state(op, types), np.dtype(types.state)
        assert set(kstate.names) < set(host.names)
        kernel_rows = np.zeros(3, kstate)
        kernel_rows["value"] = [-0.0, 2.0, np.inf]
        for name in set(kstate.names) - {"value"}:
            kernel_rows[name] = [True, False, True]
        rows = ext_states.restate(kernel_rows, host)
        assert rows.dtype == host
        for name in host.names:
            want = kernel_rows[name] if name in kstate.names else np.zeros(3, host[name])
            assert rows[name].tobytes() == np.asarray(want, host[name]).tobytes(), name
        back = ext_states.restate(rows, kstate)
        assert back.tobytes() == kernel_rows.tobytes()


def test_the_gpu_scans_host_steps_on_the_cpu(comm, monkeypatch):
    """extended.scan's steps after the kernels for a segmented float product, with NumPy for CuPy
    (NumPy that loses the sign of a 0-d zero as CuPy 14.2 does: ``_CuPyLike``):
    the tiles' results in array order (mirrored in reverse), without ``initial`` (the kernels leave
    it out for these), repaired and projected by ``cuda.absorbing.absorbed_results``; the total completed by
    ``segmented_tail`` from what it returns.  Against NumPy's sequential segmented product and the
    CPU backend's total, for 1 and 3 columns, seeds, ``initial`` (``absorb.project_initial``: drawn as the
    rows are, a zero and an overflowing power among them), both directions."""
    from distscan._dtypes import scan_types
    from distscan.backends import cpu
    from distscan.backends.cuda import absorbing
    from distscan.ops import get_op, segmented
    from tests.support.reference import segmented_reference
    monkeypatch.setattr(absorbing, "cp", _CuPyLike())
    rng = shared_rng(comm)
    for trial in range(1200):
        dtype = ("float64", "float32")[trial % 2]
        reverse, exclusive = bool(rng.integers(2)), bool(rng.integers(2))
        name = ("prod", "nanprod")[trial % 3 == 0]
        op = segmented(get_op(name), reverse)
        types = scan_types(op, np.dtype(dtype))
        n, w = int(rng.integers(1, 30)), int(rng.choice([1, 3]))
        x = _powers(rng, (n, w), dtype)
        flags = rng.random(n) < rng.choice([0.0, 0.1, 0.4])
        seed = _seed_state(op, rng, w, dtype) if rng.random() < 0.5 else None
        # initial: also a zero (folded in first, it absorbs an overflowed product), a large power whose product
        # with the rows before a zero overflows (NaN from the zero on), inf and NaN; per column
        initial = _powers(rng, (w,), dtype).astype(types.acc) if rng.random() < 0.4 else None
        with np.errstate(all="ignore"):
            want, want_total = cpu.scan(x, op, types, exclusive=exclusive, seed=seed, want_total=True, aux=(flags,),
                                        reverse=reverse, initial=initial)
            rows = np.where(np.isnan(x), np.ones((), x.dtype), x) if name == "nanprod" else x
            order = (rows[::-1], flags[::-1]) if reverse else (rows, flags)
            fresh_first = seed is None or (reverse and bool(seed["end"][0]))
            tiled = _tiled_segmented(order[0], _starts(order[1], reverse, fresh_first),
                                     None if fresh_first else seed["value"], int(rng.integers(1, 9)), exclusive)
            out = np.ascontiguousarray(tiled[::-1] if reverse else tiled)
            got_rows, got_flags, host_seed = absorbing.absorbed_results(x, flags, out, op, types, seed, exclusive,
                                                                         reverse, initial, types.state)
        assert _same_bits(out, want), (trial, reverse, exclusive, x[:, 0], flags, seed, initial, out[:, 0], want[:, 0])
        zeros = want == 0
        assert (np.signbit(out[zeros]) == np.signbit(want[zeros])).all(), (trial, out[:, 0], want[:, 0])
        full = _tiled_segmented(order[0], _starts(order[1], reverse, fresh_first),
                                None if fresh_first else seed["value"], 4, False)
        _check_tail(op, types, got_rows, got_flags, host_seed, full[-1], want_total, (trial,))
