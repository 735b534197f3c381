"""Scans and reductions of state operators on the CPU: one sequential pass, compiled by numba.

NumPy has no vectorised form of a scan that restarts (segments), composes affine maps (linear
recurrences) or carries an error term (compensated sums), so each is a loop over the rows,
compiled once per operator and dtypes (:mod:`numba`; a few hundred milliseconds, then memory
speed).  Rows are visited in order and the columns of a row together, as they lie in memory.
The loops compute exactly what the NumPy formulas of :mod:`distscan.ops.state` define,
sequentially, so integer results are those of a sequential reference bit for bit.

``x`` is ``(n, w)`` in the accumulator's value dtype; flags ``(n,)``; coefficients ``(n, w)``;
``seed`` a state row ``(w,)`` (structured) or None; ``out`` ``(n, w)``.  Reverse scans pass
reversed views (numba takes any strides).
"""

from __future__ import annotations

import numpy as np

_COMPILED: dict = {}

# The base operators' combine in a loop: NumPy's scalar semantics (NaN propagation of maximum,
# wrapping integers), which numba follows for these ufuncs.
_BASE = {
    "sum": "a + b", "nansum": "a + b", "prod": "a * b", "nanprod": "a * b",
    "max": "np.maximum(a, b)", "min": "np.minimum(a, b)", "nanmax": "np.fmax(a, b)", "nanmin": "np.fmin(a, b)",
    "logical_and": "a and b", "logical_or": "a or b", "logical_xor": "a != b",
    "bitwise_and": "a & b", "bitwise_or": "a | b", "bitwise_xor": "a ^ b",
    "logaddexp": "np.logaddexp(a, b)", "logaddexp2": "np.logaddexp2(a, b)", "gcd": "np.gcd(a, b)",
    "lcm": "np.lcm(a, b)",
}

_SEGMENTED = '''
def scan(x, f, out, seed_v, has_seed, fresh0, ident):
    n, w = x.shape
    acc = np.empty(w, x.dtype)
    fresh = np.empty(w, np.bool_)
    for j in range(w):
        acc[j] = seed_v[j]
        fresh[j] = not has_seed or fresh0[j]
    for i in range(n):
        start = f[i]
        for j in range(w):
            b = x[i, j]
            begin = (not ENDS and start) or fresh[j]
            if EXCLUSIVE:
                out[i, j] = ident if begin else acc[j]
            if begin:
                acc[j] = b
            else:
                a = acc[j]
                acc[j] = COMBINE
            fresh[j] = ENDS and start
            if not EXCLUSIVE:
                out[i, j] = acc[j]
    return acc, fresh
'''

_AFFINE = '''
def scan(x, a, f, out, seed_b, has_seed, zero0):
    n, w = x.shape
    y = np.empty(w, x.dtype)
    zero = np.empty(w, np.bool_)
    for j in range(w):
        y[j] = seed_b[j]
        zero[j] = has_seed and zero0[j]
    for i in range(n):
        start = f[i] if HAS_FLAGS else False
        for j in range(w):
            if EXCLUSIVE:
                out[i, j] = y[j]
            coef = a[i, j]
            if (STARTS and start) or zero[j]:
                y[j] = x[i, j]
            else:
                y[j] = coef * y[j] + x[i, j]
            zero[j] = ENDS and start
            if not EXCLUSIVE:
                out[i, j] = y[j]
    return y, zero
'''

_AFFINE_REDUCE = '''
def reduce(x, a, f, seed_a, zeros):
    n, w = x.shape
    A = np.empty(w, x.dtype)
    B = np.empty(w, x.dtype)
    zero = np.zeros(w, np.bool_)
    for j in range(w):
        A[j] = seed_a[j]
        B[j] = zeros[j]
    for i in range(n):
        start = f[i] if HAS_FLAGS else False
        for j in range(w):
            if (STARTS and start) or zero[j]:
                A[j] = zeros[j]  # the map to zero, then this element's: y -> b
                B[j] = x[i, j]
            else:
                A[j] = a[i, j] * A[j]
                B[j] = a[i, j] * B[j] + x[i, j]
            zero[j] = ENDS and start
    return A, B, zero
'''

_COMPENSATED = '''
def scan(x, out, seed_s, seed_e, has_seed, ident):
    n, w = x.shape
    s = np.empty(w, x.dtype)
    e = np.empty(w, x.dtype)
    for j in range(w):
        s[j] = seed_s[j]
        e[j] = seed_e[j]
    for i in range(n):
        for j in range(w):
            if EXCLUSIVE:
                out[i, j] = s[j] if has_seed or i > 0 else ident
            b = x[i, j]
            hi = s[j] + b
            bb = hi - s[j]
            lo = (s[j] - (hi - bb)) + (b - bb)
            lo = lo + e[j]
            total = hi + lo
            e[j] = lo - (total - hi)
            s[j] = total
            if not EXCLUSIVE:
                out[i, j] = s[j]
    return s, e
'''


def _compile(template: str, name: str, **flags):
    """A numba-compiled function from a template, its flags (Python constants) substituted."""
    import numba  # heavy: only state operators pay for its import

    key = (template, tuple(sorted(flags.items())))
    fn = _COMPILED.get(key)
    if fn is None:
        src = template
        for k, v in flags.items():
            src = src.replace(k, str(v))
        scope = {"np": np}
        exec(compile(src, f"<distscan {name}>", "exec"), scope)  # noqa: S102 - our own templates
        fn = _COMPILED[key] = numba.njit(scope[name])
    return fn


def _flags(aux, n):
    return np.ascontiguousarray(np.asarray(aux, bool).reshape(n)) if aux is not None else np.zeros(n, bool)


def scan(x, aux, op, types, *, exclusive: bool, seed, out):
    """``out`` (n, w) from ``x`` (n, w) and the auxiliary inputs; returns the final state row (w,)."""
    st, acc = op.state, types.acc
    n, w = x.shape
    state = np.zeros(w, types.state)
    has = seed is not None
    if st.kind in ("segmented", "segmented_ends"):
        fn = _compile(_SEGMENTED, "scan", ENDS=st.ends, EXCLUSIVE=exclusive, COMBINE=_BASE[st.base.name])
        seed_v = seed["value"] if has else np.zeros(w, acc)
        fresh0 = seed["end"] if has and st.ends else np.zeros(w, bool)
        ident = acc.type(st.base.identity(acc))
        v, fresh = fn(x, _flags(aux[0], n), out, np.ascontiguousarray(seed_v), has, np.ascontiguousarray(fresh0), ident)
        state["value"] = v
        if st.ends:
            state["end"] = fresh
        return state
    if st.kind in ("affine", "affine_ends"):
        flags = st.segments != ""
        fn = _compile(_AFFINE, "scan", EXCLUSIVE=exclusive, STARTS=st.segments == "starts",
                      ENDS=st.segments == "ends", HAS_FLAGS=flags)
        a = np.ascontiguousarray(np.broadcast_to(aux[0], x.shape), acc)
        f = _flags(aux[1] if flags else None, n)
        seed_b = seed["b"] if has else np.zeros(w, acc)
        zero0 = seed["end"] if has and st.segments == "ends" else np.zeros(w, bool)
        y, zero = fn(x, a, f, out, np.ascontiguousarray(seed_b), has, np.ascontiguousarray(zero0))
        state["b"] = y
        if st.segments == "ends":
            state["end"] = zero
        return state
    if st.kind == "compensated":
        fn = _compile(_COMPENSATED, "scan", EXCLUSIVE=exclusive)
        seed_s = seed["s"] if has else np.full(w, -np.zeros((), acc))  # -0.0: the neutral of IEEE sums
        seed_e = seed["e"] if has else np.zeros(w, acc)
        s, e = fn(x, out, np.ascontiguousarray(seed_s), np.ascontiguousarray(seed_e), has,
                  acc.type(op.identity(acc)))
        state["s"], state["e"] = s, e
        return state
    raise TypeError(f"no CPU loop for the state operator {op.name!r}")


def reduce(x, aux, op, types):
    """The state of a whole part ``x`` (n >= 1 rows): what the parts after it combine with."""
    st, acc = op.state, types.acc
    n, w = x.shape
    if st.kind in ("affine", "affine_ends"):
        flags = st.segments != ""
        fn = _compile(_AFFINE_REDUCE, "reduce", STARTS=st.segments == "starts", ENDS=st.segments == "ends",
                      HAS_FLAGS=flags)
        a = np.ascontiguousarray(np.broadcast_to(aux[0], x.shape), acc)
        A, B, zero = fn(x, a, _flags(aux[1] if flags else None, n), np.ones(w, acc), np.zeros(w, acc))
        state = np.zeros(w, types.state)
        state["a"], state["b"] = A, B
        if st.segments == "ends":
            state["end"] = zero
        return state
    out = np.empty_like(x)
    state = scan(x, aux, op, types, exclusive=False, seed=None, out=out)
    if st.kind == "segmented":
        state["flag"] = np.asarray(aux[0], bool).reshape(n).any()
    elif st.kind == "segmented_ends":
        f = np.asarray(aux[0], bool).reshape(n)
        state["inner"] = f[:-1].any()
        state["end"] = f[-1]
        state["value"] = out[-1]
    return state
