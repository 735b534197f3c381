"""The reference scans, NumPy's ``accumulate`` on the whole (global) array, and the comparisons with them.

Every reference of a plain scan here is one step, :func:`accumulate0` (a sequential scan along axis
0 in a given dtype, with an initial value or an identity for exclusive scans); what differs is the
dtype asked:

``reference_scan``  NumPy's scan the way distscan defines it: the dtypes of ``distscan._dtypes``
                    (``dtype=`` casts the input first; float16 sums accumulate in float32), or an
                    accumulator dtype the caller names (float64 for a float32 scan, the kernels'
                    own accumulator);
``Ref``             NumPy's own result dtype (``numpy_result_dtype``, independent of distscan), float
                    and complex sums and products kept wide (float64/complex128) with the magnitude
                    of each element's rounding error, for ``assert_matches`` (the NumPy and peer cases).

Comparisons: ``assert_scan_equal`` (integers and bool exactly, floats relative to the running
magnitude), ``assert_matches`` (against ``Ref``: NaN and infinities where NumPy has them, values
within ``TOL[dtype]`` times the magnitude), ``assert_same_floats`` (a few ulps where finite; NaN,
infinities and signed zeros exactly), ``assert_within_sum_bound`` (floats within ``8 n eps``
times the sum of magnitudes: the worst case of a sum of n terms in any association).

The state operators of issue 30 have references of their own, sequential and on the whole array:
``segmented_reference`` (each run scanned alone by ``accumulate``) and ``recurrence_reference``
(the loop ``y[i] = a[i] y[i-1] + b[i]`` in float64 or complex128).
"""

from __future__ import annotations

import numpy as np

from distscan._dtypes import scan_types
from distscan.ops import get_op
from distscan.ops.absorbing import absorbs_zeros

UFUNCS = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum,
          "logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor,
          "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor}
LOGICAL = ("logical_and", "logical_or", "logical_xor")

# |error| <= TOL * magnitude (see assert_matches), by result dtype (complex: its float part).
TOL = {np.dtype(np.float16): 1e-3, np.dtype(np.float32): 1e-4, np.dtype(np.float64): 1e-12}


def identity(opname, dtype):
    """What an empty prefix gives: NumPy's identity of the operator in ``dtype`` (independent of distscan's
    table, and equal to it: +0.0 for float sums, as ``np.add.identity``)."""
    dtype = np.dtype(dtype)
    if opname == "sum":
        return np.zeros((), dtype)[()]
    if opname == "prod":
        return np.ones((), dtype)[()]
    if opname in ("max", "min"):
        low = opname == "max"
        if dtype.kind == "f":
            return dtype.type(-np.inf if low else np.inf)
        if dtype.kind == "b":
            return np.bool_(not low)
        info = np.iinfo(dtype)
        return dtype.type(info.min if low else info.max)
    if opname == "logical_and":
        return np.True_
    if opname in ("logical_or", "logical_xor"):
        return np.False_
    if opname == "bitwise_and":
        return np.array(-1).astype(dtype)[()] if dtype.kind != "b" else np.True_
    return np.zeros((), dtype)[()]


def numpy_result_dtype(opname, in_dtype, dtype=None):
    """The dtype NumPy gives (byte order is native in a result)."""
    in_dtype = np.dtype(in_dtype).newbyteorder("=")
    if opname in LOGICAL:
        return np.dtype(bool)
    if dtype is not None:
        return np.dtype(dtype)
    if opname == "sum":
        return np.cumsum(np.zeros(1, in_dtype)).dtype
    if opname == "prod":
        return np.cumprod(np.ones(1, in_dtype)).dtype
    return UFUNCS[opname].accumulate(np.zeros(1, in_dtype)).dtype


def accumulate0(x, ufunc, dtype, *, exclusive=False, initial=None, first=None):
    """NumPy's sequential scan of ``x`` along axis 0 in ``dtype`` (``ufunc.accumulate``).

    ``initial`` is combined before the first element (and is not part of the result); an exclusive
    scan is the inclusive one shifted by one element, starting at ``initial`` or else at ``first``
    (the identity; after the shift, so that NumPy's own first element keeps its bits: -0.0 stays
    -0.0).  Floating-point warnings are silenced: overflow and NaN are what some tests check.
    """
    x = np.asarray(x)
    if initial is not None:
        start = np.broadcast_to(np.asarray(initial).astype(dtype), (1,) + x.shape[1:])
        x = np.concatenate([start, x.astype(dtype, copy=False)])
    with np.errstate(all="ignore"):
        r = ufunc.accumulate(x, axis=0, dtype=dtype) if x.shape[0] else x.astype(dtype)
    if initial is not None:
        return r[:-1] if exclusive else r[1:]
    if exclusive and r.shape[0]:
        start = np.broadcast_to(np.asarray(first).astype(dtype), (1,) + x.shape[1:])
        r = np.concatenate([start, r[:-1]])
    return r


def reference_scan(g, op, *, axis=0, exclusive=False, initial=None, dtype=None, types=None, acc=None):
    """NumPy's scan of the whole (global) array ``g`` along ``axis`` (None: flattened), the way distscan
    defines it: in the accumulator dtype of ``scan_types(op, g.dtype, dtype)`` (or of ``types``, a
    ``ScanTypes``), starting at ``initial``, exclusive or not, cast to the result dtype.

    ``acc``: accumulate in this dtype and return that dtype instead (a float64 reference of a float32
    scan, free of the rounding under test; the accumulator dtype that the CPU algorithms return).
    """
    op = get_op(op)
    g = np.asarray(g)
    t = types if types is not None else scan_types(op, g.dtype.newbyteorder("="), dtype)
    acc, result = (t.acc, t.result) if acc is None else (np.dtype(acc), np.dtype(acc))
    if axis is None:
        g, axis = g.reshape(-1), 0
    with np.errstate(all="ignore"):  # casts that overflow, as the scan's own
        x = np.moveaxis(g, axis, 0)
        x = (x != 0) if op.logical else x.astype(acc)
        r = accumulate0(x, op.ufunc, acc, exclusive=exclusive, initial=initial, first=identity(op.name, acc))
        return np.moveaxis(r, 0, axis).astype(result)


def _scan0(x, opname, dt, exclusive, initial):
    return accumulate0(x, UFUNCS[opname], dt, exclusive=exclusive, initial=initial, first=identity(opname, dt))


class Ref:
    """NumPy's scan of the whole array: NumPy's result ``dtype``; ``exact`` values (integers, bool,
    max and min), or ``wide`` values and their magnitude ``mag`` (float and complex sums and
    products); ``part(counts, rank, row_size)`` is one rank's slice of it."""

    def __init__(self, g, opname, axis=0, dtype=None, exclusive=False, initial=None):
        g = np.asarray(g)
        self.dtype = numpy_result_dtype(opname, g.dtype, dtype)
        flat = axis is None
        if flat:
            g = g.reshape(-1)
        ax = 0 if flat else axis % g.ndim
        x = np.moveaxis(g, ax, 0)
        self.exact = self.wide = self.mag = None
        if self.dtype.kind in "fc" and opname in ("sum", "prod"):
            wide = np.dtype(np.complex128 if self.dtype.kind == "c" else np.float64)
            with np.errstate(all="ignore"):
                xw = x.astype(self.dtype).astype(wide)  # NumPy casts the input to dtype= first
            init = None if initial is None else np.asarray(initial).astype(self.dtype).astype(wide)
            w = _scan0(xw, opname, wide, exclusive, init)
            if opname == "sum" and wide.kind == "c":   # rounding errors per component
                m = (_scan0(np.abs(xw.real), "sum", np.float64, exclusive, None if init is None else np.abs(init.real))
                     + 1j * _scan0(np.abs(xw.imag), "sum", np.float64, exclusive,
                                   None if init is None else np.abs(init.imag)))
            elif opname == "sum":
                m = _scan0(np.abs(xw), "sum", np.float64, exclusive, None if init is None else np.abs(init))
            else:
                m = np.abs(w)
            self.wide = np.moveaxis(w, 0, ax)
            self.mag = np.moveaxis(m, 0, ax)
        else:
            with np.errstate(all="ignore"):
                xe = (x != 0) if opname in LOGICAL else x.astype(self.dtype)
            self.exact = np.moveaxis(_scan0(xe, opname, self.dtype, exclusive, initial), 0, ax)
        self.flat = flat
        self.row_size = int(np.prod(g.shape[1:])) if not flat else 1

    def part(self, counts, rank, row_size):
        """This rank's part: rows along axis 0, or a flat slice when axis=None."""
        def cut(a):
            if a is None:
                return None
            lo = int(np.sum(counts[:rank])) * (row_size if self.flat else 1)
            n = int(counts[rank]) * (row_size if self.flat else 1)
            return a[lo:lo + n]
        p = Ref.__new__(Ref)
        p.__dict__.update(self.__dict__)
        p.exact, p.wide, p.mag = cut(self.exact), cut(self.wide), cut(self.mag)
        return p

    @property
    def shape(self):
        return (self.exact if self.exact is not None else self.wide).shape

    def expected_rounded(self):
        if self.exact is not None:
            return self.exact
        with np.errstate(all="ignore"):
            return self.wide.astype(self.dtype)


# -- comparisons ----------------------------------------------------------------------------------------


def assert_scan_equal(result, expected, *, float_rtol=None):
    """Integers and bool exactly; floats within a bound relative to the running magnitude."""
    result = np.asarray(result)
    assert result.dtype == expected.dtype, (result.dtype, expected.dtype)
    assert result.shape == expected.shape, (result.shape, expected.shape)
    if expected.dtype.kind in "biu":
        np.testing.assert_array_equal(result, expected)
        return
    if float_rtol is None:
        float_rtol = {2: 2e-2, 4: 1e-4, 8: 1e-10, 16: 1e-10}[expected.dtype.itemsize if expected.dtype.kind == "f"
                                                           else expected.dtype.itemsize // 2]
    np.testing.assert_allclose(result.astype(np.complex128), expected.astype(np.complex128),
                               rtol=float_rtol, atol=float_rtol * max(1.0, float(np.sqrt(expected.shape[0] if expected.ndim else 1))),
                               equal_nan=True)


def assert_matches(got, ref: Ref, *, tol=None, nonfinite_equiv=False, what=""):
    """``got`` (an ndarray) against ``ref``: its dtype and shape; integer and bool results exactly
    (wrap-around included); float and complex results against the wide reference (computed from the
    input cast to the result dtype, as NumPy casts to ``dtype=`` first) with
    ``|got - ref| <= tol * M`` (``tol``: ``TOL[dtype]``), where M is the running sum of ``|x|`` for sums
    and ``|ref|`` for products; NaN and +-inf exactly where the reference, rounded to the result
    dtype, has them (``nonfinite_equiv``: only where a value is not finite, for complex products whose
    overflow may end as inf or NaN depending on the order)."""
    assert isinstance(got, np.ndarray), f"{what}: result is {type(got).__name__}, not ndarray"
    assert got.dtype == ref.dtype, f"{what}: dtype {got.dtype}, NumPy gives {ref.dtype}"
    assert got.shape == ref.shape, f"{what}: shape {got.shape}, expected {ref.shape}"
    if ref.exact is not None:
        np.testing.assert_array_equal(got, ref.exact, err_msg=what, strict=True)
        return
    fdt = np.dtype(got.dtype.char.lower()) if got.dtype.kind == "c" else got.dtype
    tol = TOL[fdt] if tol is None else tol
    rounded = ref.expected_rounded()
    if got.dtype.kind == "c":
        # A complex value is NaN if a component is NaN, else inf if a component is inf (np.isnan,
        # np.isinf); which component carries the NaN is not compared (nan+0j and nan+nanj are both
        # complex NaN, and the association of the products decides between them).
        def classify(z):
            return np.where(np.isnan(z), 1, np.where(np.isinf(z), 2, 0))
        gc, ec = classify(got), classify(rounded)
        if nonfinite_equiv:
            # CuPy's _mitigate_cumprod: complex overflow may end as inf or nan depending on order.
            gc, ec = gc != 0, ec != 0
        if not np.array_equal(gc, ec):
            idx = np.argwhere(gc != ec)[:5]
            sel = tuple(idx.T)
            raise AssertionError(f"{what}: NaN/inf positions differ from NumPy's at {idx.tolist()}: "
                                 f"got {got[sel]}, expected {rounded[sel]}")
        finite = (gc == 0) & (ec == 0)
        parts = [np.real, np.imag]
    else:
        finite = None
        parts = [lambda a: a]
    for part in parts:
        g = part(got).astype(np.float64)
        e = part(rounded).astype(np.float64)
        w = part(ref.wide).astype(np.float64)
        if finite is None:
            if nonfinite_equiv:
                np.testing.assert_array_equal(~np.isfinite(g), ~np.isfinite(e), err_msg=f"{what}: non-finite positions")
            for name, test in (("NaN", np.isnan), ("+inf", np.isposinf), ("-inf", np.isneginf)):
                gm, em = test(g), test(e)
                if not nonfinite_equiv and not np.array_equal(gm, em):
                    idx = np.argwhere(gm != em)[:5].tolist()
                    raise AssertionError(f"{what}: {name} positions differ from NumPy's at {idx}: "
                                         f"got {g[tuple(np.array(idx).T)] if idx else ''}, "
                                         f"expected {e[tuple(np.array(idx).T)] if idx else ''}")
        fin = np.isfinite(e) & np.isfinite(g) & (True if finite is None else finite)
        with np.errstate(invalid="ignore"):
            err = np.abs(g - w)
        mag = part(ref.mag) if np.iscomplexobj(ref.mag) else ref.mag
        mag = np.where(np.isfinite(mag), mag, np.inf).astype(np.float64)
        allowed = tol * mag + np.finfo(fdt).tiny
        bad = fin & ~(err <= allowed)
        if bad.any():
            idx = np.argwhere(bad)[:5]
            sel = tuple(idx.T)
            raise AssertionError(f"{what}: {int(bad.sum())} values off by more than {tol} x magnitude; "
                                 f"at {idx.tolist()}: got {g[sel]}, expected {w[sel]}")


def assert_same_floats(got, expected):
    """Equal where finite (a few ulps: products associate differently across ranks), and the
    same NaN, infinities and signed zeros exactly."""
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    for g, e in ((got.real, expected.real), (got.imag, expected.imag)) if got.dtype.kind == "c" else ((got, expected),):
        nan_g, nan_e = np.isnan(g), np.isnan(e)
        assert (nan_g == nan_e).all(), f"NaN at {np.flatnonzero(nan_g != nan_e)[:5]}: got {g[nan_g != nan_e][:5]}, " \
                                       f"NumPy {e[nan_g != nan_e][:5]}"
        fin = np.isfinite(e)
        assert (np.isinf(g) == np.isinf(e)).all() and (g[np.isinf(e)] == e[np.isinf(e)]).all()
        zero = e == 0
        assert (g[zero] == 0).all()
        if got.dtype.kind == "f":
            assert (np.signbit(g[zero]) == np.signbit(e[zero])).all(), "signed zeros differ"
        np.testing.assert_allclose(g[fin], e[fin], rtol=1e-12 if e.dtype.itemsize >= 8 else 1e-5)


def assert_within_sum_bound(result, expected, x_abs_sums, dtype, n=None):
    """Floats within ``8 n eps`` times the sum of magnitudes ``x_abs_sums`` (n the global length,
    else ``len(expected)``); NaN where both have it; integers and bool exactly."""
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


# -- the state operators' references ----------------------------------------------------------------------


def segmented_reference(g, flags, op, *, exclusive=False, initial=None, reverse=False, dtype=None):
    """Each run (a flag starts one; the array's first element always does) scanned on its own with
    NumPy, right to left with ``reverse``: ``initial op prefix`` (a float product: NumPy's running
    product from ``initial``), the identity (or ``initial``) first for an exclusive scan."""
    op = get_op(op)
    result_dtype = scan_types(op, g.dtype, dtype)
    acc, res = result_dtype.acc, result_dtype.result
    out = np.empty(g.shape, res)
    starts = np.flatnonzero(np.asarray(flags, bool) | (np.arange(len(g)) == 0))
    # a float product's running product from initial absorbs a zero: initial first, as numpy.cumprod
    fold_first = initial is not None and absorbs_zeros(op, acc)
    for s, e in zip(starts, list(starts[1:]) + [len(g)]):
        seg = op.lift(g[s:e], acc)
        seg = seg[::-1] if reverse else seg
        if fold_first:
            head = np.broadcast_to(np.asarray(initial, acc), (1,) + seg.shape[1:])
            scanned = op.ufunc.accumulate(np.concatenate([head, seg]), axis=0, dtype=acc)[1:]
        else:
            scanned = op.ufunc.accumulate(seg, axis=0, dtype=acc)
        if initial is not None and not fold_first:
            scanned = op.ufunc(np.asarray(initial, acc), scanned)
        if exclusive:
            first = np.full((1,) + g.shape[1:], initial if initial is not None else op.identity(acc), acc)
            scanned = np.concatenate([first, scanned[:-1]])
        out[s:e] = (scanned[::-1] if reverse else scanned).astype(res)
    return out


def recurrence_reference(a, b, *, initial=0, reverse=False, segments=None):
    """``y[i] = a[i] y[i-1] + b[i]`` by a sequential loop in float64 (complex128; exact for
    integers, which wrap as NumPy's arithmetic does); an infinite or NaN ``a[i]`` times
    ``y[i-1] == 0`` is 0."""
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
    with np.errstate(over="ignore", invalid="ignore"):
        for i in order:
            restart = prev is None or (not reverse and starts[i])
            p = np.asarray(initial, wide) if restart else prev
            # a zero contributes nothing, even times an infinite or NaN a (ops.state.affine_coef)
            coef = np.where((p == 0) & ~np.isfinite(a[i]), 0, a[i])
            y[i] = coef * p + b[i] if (restart and np.any(initial)) or not restart else b[i]
            prev = y[i]
            if ends[i]:
                prev = None
    return y


def plain_scan_reference(g, op, types, *, exclusive=False, initial=None, reverse=False, include_initial=False):
    """NumPy's scan of ``op`` (a distscan op with a ufunc) over axis 0 of ``g`` with the API's
    options: reversed, exclusive, ``initial`` folded in, and with ``include_initial`` the start
    (``initial`` or the identity) first; in ``types.result``."""
    h = g[::-1] if reverse else g
    res = accumulate0(h, op.ufunc, types.acc, exclusive=exclusive, initial=initial,
                      first=op.identity(types.acc)).astype(types.result)
    if include_initial:
        start = op.identity(types.acc) if initial is None else initial
        res = np.concatenate([np.full((1,) + h.shape[1:], start, types.result), res])
    return res[::-1] if reverse else res


def nonfinite_at_zero_states(rng, a, b, nonfinite, *, initial=0, reverse=False, segments=None, edges=(), least=1):
    """Coefficients ``a`` with values of ``nonfinite`` put where the sequential loop's state
    before the item is exactly 0 (about a third of those places, each of ``edges`` that is one,
    and at least ``least`` of them where there are as many), and the loop's result, which the zero
    rule leaves as ``a``'s: ``(x, y)``."""
    n = len(b)
    y = recurrence_reference(a, b, initial=initial, reverse=reverse, segments=segments)
    starts = np.zeros(n, bool) if segments is None else np.asarray(segments, bool)
    before = np.empty(n, y.dtype)  # the state before each item in scan order: `initial` where a run starts
    if reverse:  # a run restarts after its first item (recurrence_reference's `ends`)
        before[:-1] = np.where(starts[1:], initial, y[1:])
        before[-1:] = initial
    else:
        before[1:] = np.where(starts[1:], initial, y[:-1])
        before[:1] = initial
    at_zero = before == 0
    wild = at_zero & ((rng.random(n) < 0.3) | np.isin(np.arange(n), edges))
    if np.count_nonzero(wild) < least and at_zero.any():  # (257 items drew none in the suite of 2026-11-28 13:50 UTC)
        zero = np.flatnonzero(at_zero)
        wild[rng.choice(zero, min(least, len(zero)), replace=False)] = True
    x = np.array(a, copy=True)
    x[wild] = rng.choice(nonfinite, int(wild.sum()))
    return x, y


# Compensated float32 sums (compensated=True: (sum, error) carries, distscan.ops.state.Compensated).
# Items are multiples of 2^-12, so their exact prefix sums are integers in that unit (int64).
COMPENSATED_UNIT_LOG2 = -12


def compensated_case(rng, n, *, wide=False):
    """``(x, units)``: float32 items of wildly different sizes and both signs, and ``x`` in units of
    2^-12 (exact).

    Not ``wide``: items from 2^-12 up to 2^22 whose every prefix sum, from either end, stays
    below 2^38 units (every sum of consecutive items below 2^39), inside docs/operators.md's
    2^40 where the result is correctly rounded; a plain float32 sum loses the small items.
    ``wide``: items up to 2^31 (2^43 units), whose prefix sums pass 2^48 units: past a double
    word, into :func:`assert_compensated`'s general bound."""
    mantissa = rng.integers(-2**20, 2**20, n) if wide else rng.integers(-2**10, 2**10, n)
    shift = rng.integers(0, 24 if wide else 25, n)
    if not wide:
        # scale the largest items down until every prefix fits (a random walk of n items of up
        # to 2^34 units passes 2^38 for n in the thousands)
        peak = max(_largest_prefix(mantissa << shift), 1)
        shift = np.maximum(shift - max(int(np.ceil(np.log2(peak))) - 37, 0), 0)
    units = mantissa << shift
    x = (units * 2.0**COMPENSATED_UNIT_LOG2).astype(np.float32)
    return x, (x.astype(np.float64) * 2.0**-COMPENSATED_UNIT_LOG2).astype(np.int64)


def _largest_prefix(units):
    forward = np.abs(np.cumsum(units)).max(initial=0)
    return int(max(forward, np.abs(np.cumsum(units[::-1])).max(initial=0)))


def assert_compensated(got, x, units, *, reverse=False, exclusive=False, exact=False, rows=slice(None)):
    """A compensated float32 prefix sum against the exact one, ``S`` (an int64 sum of ``units``).

    Every result is within 2 ulp of ``S`` rounded to float32, plus ``(3 m + R^2) u^2 sum|x|``
    over the ``m`` items of the prefix (``u = 2^-24``, ``R = 32`` items a GPU thread sums alone
    at most): each combine of two double words errs by at most about ``3 u^2`` times the
    magnitudes it adds, an item takes part in at most ``m`` combines on its way into a prefix of
    ``m`` items, in any association, and a thread's run (Neumaier's sum) adds ``R^2 u^2``
    times its magnitudes at most (docs/operators.md).
    With ``exact`` (every sum of consecutive items below 2^40 units: :func:`compensated_case`),
    each result is ``S`` correctly rounded, bit for bit.  ``got`` holds the ``rows`` of the whole
    array (a rank's part), ``x`` and ``units`` the whole array."""
    order = slice(None, None, -1) if reverse else slice(None)
    prefix = np.cumsum(units[order])[order]
    magnitude = np.cumsum(np.abs(x[order].astype(np.float64)))[order]
    items = np.arange(1, len(units) + 1)[order]
    if exclusive:  # each element gets the prefix before it: the inclusive one less the element
        prefix, magnitude, items = prefix - units, magnitude - np.abs(x.astype(np.float64)), items - 1
    prefix, magnitude, items = prefix[rows], magnitude[rows], items[rows]
    rounded = (prefix.astype(np.float64) * 2.0**COMPENSATED_UNIT_LOG2).astype(np.float32)
    got = np.asarray(got)
    assert got.dtype == np.float32 and got.shape == rounded.shape
    if exact:
        bad = np.flatnonzero(got.view(np.int32) != rounded.view(np.int32))
        assert bad.size == 0, (f"{bad.size} results not correctly rounded, first at {bad[0]}: "
                               f"{got[bad[0]]!r} != {rounded[bad[0]]!r}")
        return
    u = 2.0**-24
    error = np.abs(got.astype(np.float64) - prefix.astype(np.float64) * 2.0**COMPENSATED_UNIT_LOG2)
    bound = 2 * np.spacing(np.abs(rounded)).astype(np.float64) + (3 * items + 32**2) * u * u * magnitude
    over = np.flatnonzero(error > bound)
    assert over.size == 0, (f"{over.size} results past the bound, first at {over[0]}: error "
                            f"{error[over[0]]!r} > {bound[over[0]]!r}")
