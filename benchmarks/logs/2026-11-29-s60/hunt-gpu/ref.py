"""Sequential references."""
import numpy as np

UF = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum,
      "logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor,
      "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
      "nansum": np.add, "nanprod": np.multiply, "nanmax": np.fmax, "nanmin": np.fmin,
      "logaddexp": np.logaddexp, "logaddexp2": np.logaddexp2, "gcd": np.gcd, "lcm": np.lcm}

def result_dtype(op, xdt, dtype):
    xdt = np.dtype(xdt)
    if op in ("logical_and", "logical_or", "logical_xor"):
        return np.dtype(bool)
    if dtype is not None:
        return np.dtype(dtype)
    if op in ("sum", "prod", "nansum", "nanprod"):
        return np.cumsum(np.zeros(1, xdt)).dtype
    return xdt

def identity(op, dt):
    dt = np.dtype(dt)
    if op in ("sum", "nansum", "bitwise_or", "bitwise_xor", "gcd"): return np.zeros((), dt)[()]
    if op in ("prod", "nanprod", "lcm"): return np.ones((), dt)[()]
    if op in ("max", "nanmax"):
        return dt.type(-np.inf) if dt.kind == "f" else (np.False_ if dt.kind == "b" else dt.type(np.iinfo(dt).min))
    if op in ("min", "nanmin"):
        return dt.type(np.inf) if dt.kind == "f" else (np.True_ if dt.kind == "b" else dt.type(np.iinfo(dt).max))
    if op == "logical_and": return np.True_
    if op in ("logical_or", "logical_xor"): return np.False_
    if op == "bitwise_and": return np.True_ if dt.kind == "b" else dt.type(~np.zeros((), dt))
    if op in ("logaddexp", "logaddexp2"): return dt.type(-np.inf)
    raise KeyError(op)

def acc_dtype(op, rdt):
    rdt = np.dtype(rdt)
    if rdt == np.float16 and op in ("sum", "prod", "nansum", "nanprod"):
        return np.dtype(np.float32)
    if rdt == np.complex64 and False:
        return rdt
    return rdt

def lift(op, x, acc):
    x = np.asarray(x)
    if op in ("logical_and", "logical_or", "logical_xor"):
        return x != 0
    if op in ("nansum", "nanprod") and x.dtype.kind in "fc":
        x = np.where(np.isnan(x), identity(op, x.dtype), x)
    with np.errstate(all="ignore"):
        return x.astype(acc)

def seq_scan(x, op, exclusive=False, initial=None, reverse=False, segments=None, dtype=None,
             include_initial=False):
    """x: global array along axis 0 (rows).  Returns reference."""
    x = np.asarray(x)
    rdt = result_dtype(op, x.dtype, dtype)
    acc = acc_dtype(op, rdt)
    uf = UF[op]
    n = x.shape[0]
    rows = lift(op, x, acc)
    flags = np.zeros(n, bool) if segments is None else np.asarray(segments, bool).copy()
    if n: flags[0] = True
    # runs in array order
    starts = list(np.flatnonzero(flags)) + [n]
    out = np.empty(x.shape, acc)
    ident = np.full(x.shape[1:], identity(op, acc), acc)
    init = None if initial is None else np.broadcast_to(np.asarray(initial).astype(acc), x.shape[1:])
    with np.errstate(all="ignore"):
        for s, e in zip(starts[:-1], starts[1:]):
            idx = list(range(s, e))
            if reverse: idx = idx[::-1]
            state = None if init is None else init.copy()
            for i in idx:
                if exclusive:
                    out[i] = ident if state is None else state
                state = rows[i].copy() if state is None else uf(state, rows[i]).astype(acc)
                if not exclusive:
                    out[i] = state
    res = out.astype(rdt) if True else out
    if include_initial:
        lead = (ident if init is None else init).astype(rdt)[None]
        res = np.concatenate([res, lead]) if reverse else np.concatenate([lead, res])
    return res

def seq_recurrence(a, b, initial=0, reverse=False, segments=None, dtype=None):
    a = np.asarray(a); b = np.asarray(b)
    a = np.broadcast_to(a, b.shape) if a.ndim <= b.ndim else a
    rdt = np.dtype(dtype) if dtype is not None else (a.ravel()[:1] * b.ravel()[:1] + b.ravel()[:1]).dtype
    acc = np.dtype(np.float32) if rdt == np.float16 else rdt
    n = b.shape[0]
    flags = np.zeros(n, bool) if segments is None else np.asarray(segments, bool).copy()
    if n: flags[0] = True
    starts = list(np.flatnonzero(flags)) + [n]
    y = np.empty(b.shape, acc)
    init = np.broadcast_to(np.asarray(initial).astype(acc), b.shape[1:])
    with np.errstate(all="ignore"):
        for s, e in zip(starts[:-1], starts[1:]):
            idx = list(range(s, e))
            if reverse: idx = idx[::-1]
            prev = init.copy()
            first = True
            for i in idx:
                ai = a[i].astype(acc); bi = b[i].astype(acc)
                prod = ai * prev
                # doc: inf/nan a times y == 0 is 0
                prod = np.where(prev == 0, np.zeros_like(prod), prod) if acc.kind in "fc" else prod
                prev = (prod + bi).astype(acc)
                y[i] = prev
    return y.astype(rdt)

def close(got, ref, rdt, n=1, scale=None):
    got = np.asarray(got); ref = np.asarray(ref)
    if got.shape != ref.shape:
        return False, f"shape {got.shape} != {ref.shape}"
    if got.dtype != ref.dtype:
        return False, f"dtype {got.dtype} != {ref.dtype}"
    if rdt.kind in "biu":
        ok = np.array_equal(got, ref)
        return ok, "" if ok else f"mismatch at {np.argwhere(got != ref)[:5].tolist()}"
    if rdt.kind == "c":
        sc = None if scale is None else abs(scale)
        o1, w1 = close(got.real.copy(), ref.real.copy(), got.real.dtype, n, sc)
        o2, w2 = close(got.imag.copy(), ref.imag.copy(), got.imag.dtype, n, sc)
        return o1 and o2, ("real: " + w1 if not o1 else "") + (" imag: " + w2 if not o2 else "")
    g = got.astype(np.float64)
    r = ref.astype(np.float64)
    eps = {2: 1e-3, 4: 1e-6, 8: 1e-15, 16: 1e-15}.get(np.dtype(rdt).itemsize if rdt.kind == 'f' else np.dtype(rdt).itemsize // 2, 1e-6)
    ng, nr = np.isnan(g), np.isnan(r)
    if not np.array_equal(ng, nr):
        return False, f"nan mismatch at {np.argwhere(ng != nr)[:5].tolist()}"
    fin = np.isfinite(g) & np.isfinite(r)
    inf_ok = np.array_equal(g[~np.isfinite(g) & ~ng], r[~np.isfinite(g) & ~ng]) and np.array_equal(np.isfinite(g) | ng, np.isfinite(r) | nr)
    if not inf_ok:
        return False, f"inf mismatch at {np.argwhere((np.isfinite(g)|ng) != (np.isfinite(r)|nr))[:5].tolist()}"
    tol = 50 * eps * max(n, 1) * (np.abs(r[fin]) + (0 if scale is None else scale))
    if np.all(np.abs(g[fin] - r[fin]) <= tol + 1e-300):
        return True, ""
    bad = np.argwhere(~(np.abs(g - r) <= 50 * eps * max(n, 1) * (np.abs(r) + (0 if scale is None else scale))) & fin)
    return False, f"value mismatch at {bad[:5].tolist()}"
