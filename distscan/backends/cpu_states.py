"""Scans and reductions of state operators on the CPU: one sequential pass, compiled by numba.

NumPy has no vectorised form of a scan that restarts (segments), composes affine maps (linear
recurrences) or carries an error term (compensated sums), so each is a loop over the rows
(:mod:`distscan.ops.jit`), visiting the columns of a row together as they lie in memory.  The
loops compute what the formulas of :mod:`distscan.ops.state` define, sequentially, so integer
results are those of a sequential reference bit for bit.

Arguments, in scan order (a reverse scan passes reversed views: numba takes any strides):
``x`` ``(n, w)`` in the accumulator dtype; ``flags`` ``(n,)`` bool; ``coef`` ``(n, w)``;
``seed`` a state row ``(w,)`` or None (the ranks, chunks or tiles before); ``initial`` a value
row ``(w,)`` or None, which segmented and affine scans project (``initial op v``,
``b + a*initial``); ``out`` ``(n, w)`` of the result dtype.  Each returns the state after the
last row (the part's carry).
"""

from __future__ import annotations

import numpy as np

from ..ops.jit import base_combine, compile_loop

# A NaN-aware base reads NaN as its identity (nancumsum's zero, nancumprod's one).
_NAN_LIFT = {"nansum": "b = 0 if b != b else b", "nanprod": "b = 1 if b != b else b"}

# Each loop walks blocks of ROWS rows, and in a block each column with its state in scalars
# (numba keeps them in registers: a 1-D recurrence runs at half the time of np.cumsum; states
# kept in arrays across the columns of each row took 2.7 times as long), so a block's columns
# share the cache lines they lie on.
_SEGMENTED = '''
def scan(x, f, out, seed_v, seed_flag, has_seed, init, has_init, first):
    n, w = x.shape
    accs = seed_v.copy()
    # forwards nothing before the first row is "fresh"; in reverse, also a seed that ends a segment
    freshes = np.empty(w, np.bool_)
    for j in range(w):
        freshes[j] = (not has_seed) or (ENDS and seed_flag[j])
    rows = max(1, 65536 // w)
    for r0 in range(0, n, rows):
        r1 = min(n, r0 + rows)
        for j in range(w):
            acc = accs[j]
            fresh = freshes[j]
            ini = init[j]
            for i in range(r0, r1):
                start = f[i]
                b = x[i, j]
                LIFT
                begin = (not ENDS and start) or fresh
                if EXCLUSIVE and WRITE:
                    if begin:
                        out[i, j] = first[j]
                    elif has_init:
                        out[i, j] = base(ini, acc)
                    else:
                        out[i, j] = acc
                if begin:
                    acc = b
                else:
                    acc = base(acc, b)
                fresh = ENDS and start
                if not EXCLUSIVE and WRITE:
                    out[i, j] = base(ini, acc) if has_init else acc
            accs[j] = acc
            freshes[j] = fresh
    return accs
'''

_AFFINE = '''
def scan(x, a, f, out, seed_a, seed_b, seed_flag, has_seed, init, has_init):
    n, w = x.shape
    As = seed_a.copy()
    Bs = seed_b.copy()
    freshes = np.empty(w, np.bool_)
    for j in range(w):
        freshes[j] = (not has_seed) or (ENDS and seed_flag[j])
    rows = max(1, 65536 // w)
    for r0 in range(0, n, rows):
        r1 = min(n, r0 + rows)
        for j in range(w):
            A = As[j]
            B = Bs[j]
            fresh = freshes[j]
            ini = init[j]
            for i in range(r0, r1):
                start = f[i] if FLAGS else False
                c = a[i, j]
                if (STARTS and start) or fresh:
                    A = c
                    B = x[i, j]
                else:
                    B = c * B + x[i, j]
                    A = c * A
                fresh = ENDS and start
                if WRITE:
                    out[i, j] = B + A * ini if has_init else B
            As[j] = A
            Bs[j] = B
            freshes[j] = fresh
    return As, Bs
'''

_COMPENSATED = '''
def scan(x, out, seed_s, seed_e, has_seed, first):
    n, w = x.shape
    ss = seed_s.copy()
    es = seed_e.copy()
    rows = max(1, 65536 // w)
    for r0 in range(0, n, rows):
        r1 = min(n, r0 + rows)
        for j in range(w):
            s = ss[j]
            e = es[j]
            for i in range(r0, r1):
                if EXCLUSIVE and WRITE:
                    out[i, j] = s if has_seed or i > 0 else first[j]
                b = x[i, j]
                LIFT
                hi = s + b
                bb = hi - s
                lo = (s - (hi - bb)) + (b - bb)
                lo = lo + e
                total = hi + lo
                e = lo - (total - hi)
                s = total
                if not EXCLUSIVE and WRITE:
                    out[i, j] = s
            ss[j] = s
            es[j] = e
    return ss, es
'''


_DECLARED = '''
def scan(x, out, seed, has_seed, first):
    n, w = x.shape
    accs = seed.copy()
    rows = max(1, 65536 // w)
    for r0 in range(0, n, rows):
        r1 = min(n, r0 + rows)
        for j in range(w):
            acc = accs[j]
            fresh = (not has_seed) and r0 == 0
            for i in range(r0, r1):
                b = x[i, j]
                if EXCLUSIVE and WRITE:
                    out[i, j] = first[j] if fresh else acc
                if fresh:
                    acc = b
                else:
                    acc = base(acc, b)
                fresh = False
                if not EXCLUSIVE and WRITE:
                    out[i, j] = acc
            accs[j] = acc
    return accs
'''


def _doubling(states, combine):
    """The inclusive scan of ``states`` ``(n, w)`` along axis 0 by log2(n) vectorised steps of
    ``combine`` (Hillis and Steele): a declared operator numba cannot compile."""
    y = states.copy()
    k = 1
    while k < len(y):
        y[k:] = combine(y[:-k], y[k:])
        k *= 2
    return y


def _declared(x, op, types, exclusive, seed, out, write):
    """A declared operator's scan: numba's loop over its scalar combine, or the log-depth NumPy
    scan of its array combine (declared states, or a combine numba does not compile)."""
    st = op.state
    n, w = x.shape
    has_seed = seed is not None
    first = np.full(w, op.identity(types.acc), types.state) if st.fields is None else None
    if st.fields is None and op.scalar is not None and not isinstance(op.scalar, np.ufunc):
        try:
            fn = compile_loop(_DECLARED, "scan", op.scalar, EXCLUSIVE=exclusive, WRITE=write)
            seed_row = np.ascontiguousarray(seed if has_seed else first, types.state).reshape(w)
            return fn(np.ascontiguousarray(x, types.state), out if write else np.empty((0, w), types.state),
                      seed_row, has_seed, first)
        except Exception:  # noqa: BLE001 - numba could not compile the user's function: NumPy below
            pass
    states = st.lift(x, (), types.acc)
    if has_seed:
        states = np.concatenate([np.asarray(seed, states.dtype).reshape(1, w), states])
    if st.fields is None and isinstance(st.user_combine, np.ufunc):  # sequential, as NumPy's accumulate
        scanned = st.user_combine.accumulate(states, axis=0, dtype=states.dtype)
    else:
        scanned = _doubling(states, st.combine)
    if has_seed:
        scanned, before = scanned[1:], scanned[:-1]
    else:
        before = np.concatenate([np.full((1, w), st.neutral(types.acc), states.dtype), scanned[:-1]])
    if write:
        values = st.project(before if exclusive else scanned)
        if exclusive and not has_seed and st.fields is None:
            values[0] = first
        out[...] = values
    return np.array(scanned[-1])


_ROWS: dict = {}  # constant rows (zeros, identities) by (value, w, dtype): small calls reuse them


def _row(values, w, dtype) -> np.ndarray:
    """``values`` (a scalar or a row of w) as a contiguous row of ``dtype`` (cheap: a call of 1000
    items spends most of its time in such conversions)."""
    if isinstance(values, np.ndarray) and values.shape == (w,):
        return values if values.dtype == dtype and values.flags.c_contiguous else np.ascontiguousarray(values, dtype)
    if np.ndim(values) == 0:
        key = (values.item() if hasattr(values, "item") else values, w, dtype)
        row = _ROWS.get(key) if key[0] == key[0] else None  # NaN keys would never be found again
        if row is None:
            row = np.full(w, values, dtype)
            row.flags.writeable = False
            if key[0] == key[0] and len(_ROWS) < 4096:
                _ROWS[key] = row
        return row
    return np.ascontiguousarray(np.broadcast_to(np.asarray(values, dtype).reshape(-1), (w,)))


def _flags(aux, n) -> np.ndarray:
    flags = np.asarray(aux, bool).reshape(-1)
    if flags.shape[0] != n:
        raise ValueError(f"segments has {flags.shape[0]} flags for a part of {n} rows")
    return flags


def scan(x, aux, op, types, *, exclusive: bool, seed, out, initial=None, write: bool = True) -> np.ndarray:
    """Scan ``x`` ``(n, w)`` into ``out`` (``write`` False: only the state after the last row);
    returns that state ``(w,)`` (what follows this part starts from it)."""
    st, acc = op.state, types.acc
    n, w = x.shape
    state = np.zeros(w, types.state)
    has_seed = seed is not None
    seed = np.zeros(w, types.state) if seed is None else np.asarray(seed, types.state).reshape(w)
    has_init = initial is not None and st.initial_mode == "project"
    init = _row(initial if has_init else 0, w, acc)
    if n == 0:
        return seed.copy() if has_seed else np.full(w, st.neutral(acc), types.state)
    if out is None:
        out = np.empty((0, w), acc)
    kind = st.kind
    if kind.startswith("segmented"):
        ends = st.ends
        base = st.base
        fn = compile_loop(_SEGMENTED, "scan", base_combine(base), ENDS=ends, EXCLUSIVE=exclusive, WRITE=write,
                          LIFT=_NAN_LIFT.get(base.name, "pass"))
        first = init if has_init else _row(base.identity(acc), w, acc)
        flag_field = "end" if ends else "flag"
        f = _flags(aux[0], n)
        v = fn(x, f, out, _row(seed["value"], w, acc), _row(seed[flag_field], w, bool),
                      has_seed, init, has_init, first)
        state["value"] = v
        if ends:
            # inner: a segment ends before the last row (or the seed's does, inside the part's
            # prefix); end: the last row ends one
            state["inner"] = (seed["inner"] | seed["end"]) & has_seed | f[:-1].any()
            state["end"] = f[-1]
        else:
            state["flag"] = (seed["flag"] & has_seed) | f.any()
        return state
    if kind.startswith("affine"):
        flags = st.segments != ""
        f = _flags(aux[1], n) if flags else np.zeros(n, bool)
        coef = np.broadcast_to(np.asarray(aux[0]), x.shape).astype(acc, copy=False)
        fn = compile_loop(_AFFINE, "scan", None, STARTS=st.segments == "starts", ENDS=st.segments == "ends",
                          FLAGS=flags, WRITE=write)
        flag_seed = seed["end"] if st.segments == "ends" else np.zeros(w, bool)
        A, B = fn(x, coef, f, out, _row(seed["a"], w, acc), _row(seed["b"], w, acc), _row(flag_seed, w, bool),
                     has_seed, init, has_init)
        state["a"], state["b"] = A, B
        if st.segments == "starts":
            state["flag"] = (seed["flag"] & has_seed) | f.any()
        elif st.segments == "ends":
            state["inner"] = (seed["inner"] | seed["end"]) & has_seed | f[:-1].any()
            state["end"] = f[-1]
        return state
    if kind == "declared":
        return _declared(x, op, types, exclusive, None if not has_seed else seed, out if write else None, write)
    if kind == "compensated":
        fn = compile_loop(_COMPENSATED, "scan", None, EXCLUSIVE=exclusive, WRITE=write,
                          LIFT=_NAN_LIFT.get(st.base.name, "pass"))
        neutral = st.neutral(acc)
        seed_s = seed["s"] if has_seed else _row(neutral["s"], w, acc)
        seed_e = seed["e"] if has_seed else _row(neutral["e"], w, acc)
        first = _row(st.base.identity(acc), w, acc)
        s, e = fn(x, out, _row(seed_s, w, acc), _row(seed_e, w, acc), has_seed, first)
        state["s"], state["e"] = s, e
        return state
    raise TypeError(f"no CPU loop for the state operator {op.name!r}")


def reduce(x, aux, op, types) -> np.ndarray:
    """The state of the whole part ``x`` ``(n, w)`` in scan order: its carry (n >= 1)."""
    return scan(x, aux, op, types, exclusive=False, seed=None, out=None, write=False)
