"""Zero absorption for float products computed in another order than sequential.

A product scan that combines partial products (tiles of the GPU kernel, the blocks and
trees of the algorithms in :mod:`distscan.algorithms`) can meet a zero with a partial
product that overflowed on its own, ``0 * inf = NaN``, where ``numpy.cumprod``'s running
product stays 0.  :func:`absorb_zeros` repairs a finished scan to the sequential answer;
:func:`absorb_segmented` does so within each segment of a segmented product, and
:func:`segmented_tail` gives a segmented product's total the fields of its state
(:class:`distscan.ops.state.Segmented`) that the GPU's kernels do not compute.
"""

from __future__ import annotations

import numpy as np

from ..ops.absorbing import absorbed, absorbing_join, initial_first


class ArraySearch:
    """What the repair asks of the arrays before it writes anything, as array operations of ``xp``
    (NumPy or CuPy); ``backends/cuda/zero_search.py`` answers the same in one kernel a question."""

    def __init__(self, xp):
        self.xp = xp

    def any_zero(self, a, b) -> bool:
        """Whether ``a`` or ``b`` holds a zero (one synchronisation each at most)."""
        return bool(_host((a == 0).any())) or bool(_host((b == 0).any()))

    def first_zero(self, a, b) -> int:
        """The first row where 1-D ``a`` or ``b`` is 0 (a product that underflowed is a zero
        too), or their length."""
        return _first_true(self.xp, (a == 0) | (b == 0))

    def tail_marks(self, x, y) -> tuple[int, int, int]:
        """Over rows ``x`` and their results ``y`` (1-D): the first row whose item is inf or NaN
        (or their length), the first whose result is not 0 (NaN is not) (or their length), and
        the last whose result is not NaN (or -1)."""
        xp, m = self.xp, x.shape[0]
        bad = _first_true(xp, ~xp.isfinite(x)) if x.dtype.kind in "fc" else m
        keep = ~xp.isnan(y)
        last = m - 1 - _first_true(xp, keep[::-1])
        return bad, _first_true(xp, y != 0), last


def _first_true(xp, v) -> int:
    """The first index where 1-D bool ``v`` is true, or its length (one host read)."""
    if v.shape[0] == 0:
        return 0
    k = v.argmax()
    return int(_host(xp.where(v[k], k, v.shape[0])))


def absorb_zeros(xp, x, out, seed, exclusive, search: ArraySearch = None):
    """Repair ``out`` (the scan of ``x`` from ``seed``, ``(n, w)``) in place; returns the
    columns it changed (host bool ``(w,)``).  ``xp`` is the array module (NumPy or CuPy);
    ``search`` answers the repair's questions (default: ``ArraySearch(xp)``).

    In sequential order, from the first result that is 0 on, every result is a signed zero
    until an inf or NaN input turns it into NaN for good.  Results before the first zero are
    the scan's own: with no zero in the prefix no such NaN can arise.  Costs a few passes,
    and only for float products.
    """
    search = ArraySearch(xp) if search is None else search
    x, out = _results_of_rows(x, out, exclusive)
    n, w = x.shape
    if n == 0:
        return np.zeros(w, bool)
    few = xp is not np and w <= _FEW_COLUMNS  # (the GPU's few columns: one at a time)
    if (w > 1 or not few) and not search.any_zero(x, out):  # (one pass over all columns; one GPU column: its search is it)
        return np.zeros(w, bool)
    if few:
        seeds = [None] * w if seed is None else list(np.asarray(seed, out.dtype).reshape(w))
        return np.array([_absorb_column(search, x[:, c], out[:, c], seeds[c]) for c in range(w)])
    zero = (x == 0) | (out == 0)  # a product that underflowed is a zero too
    hit = _down(xp, zero, "any")
    hit_host = _host(hit)  # some column: any_zero found a zero
    rows = xp.arange(n)[:, None]
    first = xp.where(hit, _down(xp, zero, "argmax"), n)
    started = rows >= first
    if x.dtype.kind in "fc":
        bad = ~xp.isfinite(x) & started
        first_bad = xp.where(_down(xp, bad, "any"), _down(xp, bad, "argmax"), n)
    else:
        first_bad = xp.full(w, n)
    # What the first zero met: the result before it (or the seed).  inf * 0 is NaN for good.
    cols = xp.arange(w)
    before = out[xp.maximum(first - 1, 0), cols]
    if seed is not None:
        before = xp.where(first == 0, xp.asarray(np.asarray(seed, out.dtype)), before)
    else:
        before = xp.where(first == 0, xp.ones((), out.dtype), before)
    poisoned = (rows >= first_bad) | ~xp.isfinite(before) | xp.isnan(out[xp.minimum(first, n - 1), cols])
    if out.dtype.kind == "c":
        zeros = xp.zeros((), out.dtype)
    else:
        # The sign of a product is the product of the signs, the seed's included.
        signs = xp.signbit(x) if x.dtype.kind == "f" else x < 0
        negative = (_cumsum_down(xp, signs, xp.uint8) & 1).astype(bool)
        if seed is not None:
            negative ^= xp.asarray(np.signbit(np.asarray(seed).real))
        zeros = xp.where(negative, -0.0, 0.0).astype(out.dtype)
    fixed = xp.where(poisoned, xp.asarray(np.nan, out.dtype), zeros)
    xp.copyto(out, fixed, where=started)
    return hit_host


def _results_of_rows(x, out, exclusive: bool):
    """``(x, out)`` row by row: each row of ``x`` beside the result that ends with it; an exclusive
    scan's ``out[i]`` combines ``x[:i]``, so ``out[1:]`` aligns with ``x[:-1]``."""
    return (x[:-1], out[1:]) if exclusive else (x, out)


def _host(a) -> np.ndarray:
    return a.get() if hasattr(a, "get") else np.asarray(a)


# Up to this many columns the GPU reduces each as a 1-D array (a launch or two a column), past it
# CuPy's reduction over axis 0 (a block a column at least)
_FEW_COLUMNS = 16


def _column_by_column(xp, v, whole, one, axis: int):
    """``whole(v)`` of ``(m, w)`` rows; on the GPU for a few columns ``one`` of each column as a 1-D
    array, the results stacked along ``axis`` (0 for reductions, 1 for cumulative sums).  CuPy 14
    reduces axis 0 of an ``(m, 1)`` array in one thread block (2^27 items on an H200: argmax 150
    ms, any 51 ms, cumsum 3.3; 1-D 0.9, 0.4 and 1.4 ms), which made a float32 cumprod that reached
    a zero take 386 ms (2026-11-28).  NumPy's own order is kept (the CPU loops' products are
    compared bit for bit)."""
    m, w = v.shape
    if xp is np or w > _FEW_COLUMNS:
        return whole(v)
    if w == 1:
        return xp.expand_dims(one(v.reshape(m)), axis)
    columns = xp.ascontiguousarray(v.T)  # (a few columns: 4 of 2^25 reached 0 in 420 ms, H200)
    return xp.stack([one(columns[c]) for c in range(w)], axis=axis)


def _down(xp, v, name: str):
    """``v.<name>(axis=0)`` of ``(m, w)`` rows (any, argmax, prod, sum), a ``(w,)`` array."""
    return _column_by_column(xp, v, lambda a: getattr(a, name)(axis=0), lambda c: getattr(c, name)(), 0)


def _absorb_column(search: ArraySearch, x, y, seed) -> bool:
    """:func:`absorb_zeros` of one column (``x`` and its results ``y``, 1-D; ``seed`` a host scalar
    or None), with passes over the rows from its first zero on only: the GPU's way for a few
    columns (the whole-array form took 16.4 ms at 2^27 float32 on an H200, 2026-11-28, a dozen CuPy
    passes).  Returns whether the column had a zero.

    Where the results from the zero on are already the sequential ones (zeros up to the first inf
    or NaN input, NaN from it on: a product that only underflowed or met a zero, as a product of
    probabilities does; real items), nothing is written: ``search.tail_marks`` finds it.  A zero's
    sign needs no check: IEEE's product of any grouping has the sign of the product of the signs.
    Else the rows are rewritten: zeros whose sign is that of the result before the zero (the
    product of the seed and the rows before it, exact in any order; a NaN there poisons the rest)
    times the signs counted from the zero on.  The seed's sign and finiteness are read on the
    host (CuPy's ``asarray(-0.0)`` has no sign bit)."""
    xp, n = search.xp, x.shape[0]
    first = search.first_zero(x, y)
    if first == n:
        return False
    before = _host(y[first - 1]) if first > 0 else np.asarray(1 if seed is None else seed, y.dtype)
    x, tail = x[first:], y[first:]
    m = n - first
    first_bad, first_nonzero, last_not_nan = search.tail_marks(x, tail)
    poisoned_from = 0 if not np.isfinite(before) else first_bad  # inf * 0: NaN for good
    if y.dtype.kind != "c" and first_nonzero >= poisoned_from and last_not_nan < poisoned_from:
        return True  # zeros, then NaN: (tail[0] == 0 where poisoned_from > 0; complex zeros are written +0)
    if y.dtype.kind == "c":
        zeros = xp.zeros((), y.dtype)
    else:
        signs = xp.signbit(x) if x.dtype.kind == "f" else x < 0
        negative = ((xp.cumsum(signs, dtype=xp.uint8) & 1).astype(bool)) ^ bool(np.signbit(before.real))
        zeros = _signed_zeros(xp, negative, y.dtype)
    poisoned = xp.isnan(tail[0]) | (xp.arange(m) >= poisoned_from)
    tail[...] = xp.where(poisoned, xp.asarray(np.nan, y.dtype), zeros)
    return True


def _cumsum_down(xp, v, dtype):
    """``xp.cumsum(v, axis=0, dtype=dtype)`` (counts: exact in any order)."""
    return _column_by_column(xp, v, lambda a: xp.cumsum(a, axis=0, dtype=dtype),
                             lambda c: xp.cumsum(c, dtype=dtype), 1)


# ---- segmented products (distscan.ops.state.Segmented over a float or complex product) ----------
#
# The GPU kernels scan a segmented product as (value, flag) states whose values multiply tile by
# tile (kernels/util/states.cuh), so a zero meets a tile's own overflowed product (0 * inf = NaN)
# as a plain product's does, within each segment; and their totals are (value, flag) structs,
# without the state's zero-absorption fields.  The two functions below repair both on the host side
# (extended.scan and extended.reduce), in scan order, with the arrays' module ``xp``; their NumPy
# form is tested against the CPU loops (tests/backends/test_absorb.py).


def _segment_starts(xp, flags, ends: bool, fresh_first):
    """The rows (in scan order) that start a segment afresh: forwards the flagged rows; in reverse,
    where a flag marks a run's last row, the rows after flagged ones.  Row 0 also where
    ``fresh_first`` (no seed before it, or a seed whose last row ends a segment)."""
    if ends:
        starts = xp.empty(flags.shape, bool)
        starts[1:] = flags[:-1]
        starts[:1] = fresh_first
        return starts
    starts = flags.astype(bool, copy=True)
    if fresh_first:
        starts[:1] = True
    return starts


def absorb_segmented(xp, x, out, flags, seed, exclusive: bool, ends: bool, search: ArraySearch = None) -> None:
    """Repair ``out`` in place: the segmented product of ``x`` (``(n, w)``, lifted: NaN read as 1
    for nanprod) with segment ``flags`` (``(n,)``) from ``seed`` (host state rows ``(w,)`` or
    None), all in scan order, computed in another order than sequential (the GPU's tiles).  In
    each segment, :func:`absorb_zeros`'s rule: from the first result that is 0 on (an input zero,
    or a product that underflowed), every result is a signed zero (the product of the signs since
    the segment's start, the seed's too where the segment continues it) until an inf or NaN input
    turns it into NaN for good, and NaN from the zero on where the product before it is not
    finite.  Vectorised (cumulative counts within segments); two host syncs at most where no zero is."""
    w = x.shape[1]
    search = ArraySearch(xp) if search is None else search
    if not search.any_zero(*_results_of_rows(x, out, exclusive)):
        return  # (before the arrays below: most products meet no zero)
    fresh_first = seed is None or (ends and bool(np.asarray(seed["end"]).reshape(-1)[0]))
    starts = _segment_starts(xp, flags, ends, fresh_first)
    x, y, prev, writable, starts = _aligned(xp, x, out, starts, None if fresh_first else seed["value"], exclusive)
    zero = (x == 0) | (y == 0)
    seg, in_segment = _within_segments(xp, starts)
    seen = in_segment(zero)
    started = seen > 0
    first = zero & (seen == 1)
    poison = first & (~xp.isfinite(prev) | xp.isnan(y))  # inf * 0: NaN for good
    poisoned = in_segment((~xp.isfinite(x) & started) | poison) > 0
    if out.dtype.kind == "c":
        zeros = xp.zeros((), out.dtype)
    else:
        negative = (in_segment(xp.signbit(x)) & 1).astype(bool)
        if not fresh_first:  # the first segment continues the seed: its sign counts
            seed_sign = xp.asarray(np.signbit(np.asarray(seed["value"]).real).reshape(1, w))
            negative ^= (seg == 0)[:, None] & seed_sign
        zeros = _signed_zeros(xp, negative, out.dtype)
    fixed = xp.where(poisoned, xp.asarray(np.nan, out.dtype), zeros)
    where = started if writable is None else started & writable[:, None]
    xp.copyto(y, fixed, where=where)


def _aligned(xp, x, out, starts, seed_value, exclusive: bool):
    """``(x, y, prev, writable, starts)``: the rows ``x``, their results ``y`` and the product of the
    segment's rows before each (``prev``: 1 at a start, ``seed_value`` (host, ``(w,)``) before row 0
    where the first segment continues a seed, else None) aligned row by row, with the rows of ``y``
    that hold a product of ``x``'s rows (``writable``; None: all) and the segment ``starts``.  An
    exclusive scan's ``out[i]`` holds the product before row i: ``out[1:]`` aligns with ``x[:-1]``,
    the product before row k is ``out[k]`` itself, and a segment's first row is no product."""
    if exclusive:
        rows, results = _results_of_rows(x, out, exclusive)
        return rows, results, out[:-1], ~starts[1:], starts[:-1]
    prev = xp.empty_like(out)
    prev[1:] = out[:-1]
    prev[:1] = 1 if seed_value is None else xp.asarray(np.asarray(seed_value, out.dtype)).reshape(1, -1)
    prev[starts] = 1
    return x, out, prev, None, starts


def _within_segments(xp, starts):
    """``(seg, in_segment)`` of the rows' segments (a segment starts at each true row of ``starts``;
    the rows before the first start are segment 0): each row's segment, and ``in_segment(v)``, how
    many of ``v``'s rows are set from its segment's first row to each row (cumulative counts)."""
    index = xp.int64
    seg = xp.cumsum(starts, dtype=index)
    first_rows = xp.concatenate([xp.zeros(1, index), xp.flatnonzero(starts).astype(index)])
    seg_lo = first_rows[seg]  # each row's segment's first row

    def in_segment(v):
        c = _cumsum_down(xp, v, index)
        before = xp.zeros_like(c)
        before[1:] = c[:-1]
        return c - before[seg_lo]
    return seg, in_segment


def _signed_zeros(xp, negative, dtype):
    """Zeros of ``dtype`` (real), -0.0 where ``negative``."""
    # NumPy scalars, not 0-d arrays: CuPy 14.2's cp.asarray(-0.0, float32) is +0.0 (found on an
    # H200, 2026-11-26: every repaired zero came out +0.0); cp.where keeps a scalar's sign
    return xp.where(negative, dtype.type(-0.0), dtype.type(0.0))


def project_initial(xp, x, out, flags, seed, initial, exclusive: bool, ends: bool) -> None:
    """Fold ``initial`` (a host row ``(w,)``) into ``out`` in place, as :meth:`distscan.ops.state.
    Segmented.project` does (:func:`distscan.ops.absorbing.initial_first`): ``out`` holds the
    segmented product of ``x`` (``(n, w)``, lifted) with ``flags`` (``(n,)``) from ``seed`` (host
    state rows ``(w,)`` with the zero-absorption fields, or None), all in scan order, its zeros
    absorbed (:func:`absorb_segmented`), without ``initial``.  Each row becomes ``initial * out``,
    but where a zero absorbs:

    - a zero ``initial`` gives NaN where an inf or NaN input lies in the row's segment so far (the
      seed's rows too, where the segment continues it), else a zero with the sign of the product
      of all signs (``initial``'s and those rows'); ``initial * out`` is NaN where ``out``
      overflowed;
    - a finite ``initial`` gives NaN where it times the product before the segment's first zero
      (``pre``) is not finite: ``out`` is a zero there as ``pre`` alone was finite;
    - an infinite or NaN ``initial`` gives ``initial * out``.

    An exclusive scan's first row of a segment gets ``initial`` itself.  A few vectorised passes
    (cumulative counts within segments), for float and complex products with ``initial`` only."""
    n, w = out.shape
    if n == 0:
        return
    init_host = np.ascontiguousarray(np.broadcast_to(np.asarray(initial, out.dtype).reshape(-1), (w,)))
    init = xp.asarray(init_host).reshape(1, w)
    fresh_first = seed is None or (ends and bool(np.asarray(seed["end"]).reshape(-1)[0]))
    starts = _segment_starts(xp, flags, ends, fresh_first)
    seed = None if fresh_first else np.asarray(seed).reshape(w)
    first_starts = bool(_host(starts[0]))
    x, y, prev, writable, starts = _aligned(xp, x, out, starts, None if seed is None else seed["value"], exclusive)
    with np.errstate(all="ignore"):
        fixed = init * y
    if x.shape[0]:
        seg, in_segment = _within_segments(xp, starts)
        continues = xp.zeros((x.shape[0], 1), bool) if seed is None else (seg == 0)[:, None]
        field = (lambda name: xp.asarray(seed[name]).reshape(1, w)) if seed is not None else None
        nan = xp.asarray(np.nan, out.dtype)
        # a zero initial: NaN after an inf or NaN input, else a signed zero
        nonfinite = in_segment(~xp.isfinite(x)) > 0
        if seed is not None:
            nonfinite |= continues & field("nonfinite")
        if out.dtype.kind == "c":
            zeros = xp.zeros((), out.dtype)
        else:
            negative = (in_segment(xp.signbit(x)) & 1).astype(bool) ^ xp.signbit(init)
            if seed is not None:  # the seed's signs: its product's before its zero, and its sign from there
                negative ^= continues & (xp.signbit(field("pre")) ^ field("sign"))
            zeros = _signed_zeros(xp, negative, out.dtype)
        from_zero = xp.where(nonfinite, nan, zeros)
        # a finite initial: NaN where initial times the product before the segment's first zero overflows
        zero = x == 0
        first = zero & (in_segment(zero) == 1)
        with np.errstate(all="ignore"):
            overflows = first & ~xp.isfinite(init * prev)
            if seed is not None:  # where the seed holds the segment's first zero, it holds the product before it
                seed_zero = continues & field("zero")
                overflows &= ~seed_zero
                poisoned = (in_segment(overflows) > 0) | (seed_zero & ~xp.isfinite(init * field("pre")))
            else:
                poisoned = in_segment(overflows) > 0
        finite = xp.isfinite(init)
        fixed = xp.where(init == 0, from_zero, xp.where(finite & poisoned, nan, fixed))
    if writable is not None:
        fixed = xp.where(writable[:, None], fixed, init)
    y[...] = fixed
    if exclusive:  # the first row: initial where it starts a segment, else the seed's state with initial first
        out[:1] = init if first_starts else xp.asarray(np.asarray(initial_first(init_host, seed), out.dtype)).reshape(1, w)


def _tail_summary(xp, tail, dtype: np.dtype) -> np.ndarray:
    """The zero-absorbing state rows ``(w,)`` (host, ``dtype``) of the rows ``tail`` ``(m, w)`` (scan
    order, lifted) with no segment start among them, as ``state.lift`` and its combine give them."""
    m, w = tail.shape
    s = np.zeros(w, dtype)
    s["value"] = s["pre"] = 1
    if m == 0:
        return s
    zero = tail == 0
    has_zero = _down(xp, zero, "any")
    first = xp.where(has_zero, _down(xp, zero, "argmax"), m)
    before = xp.arange(m)[:, None] < first
    nonfinite = ~xp.isfinite(tail)
    with np.errstate(all="ignore"):  # quiet, as the CPU loops (NumPy's product of the host arrays warns)
        pre = _host(_down(xp, xp.where(before, tail, xp.ones((), tail.dtype)), "prod"))
    s["pre"], s["zero"] = pre, _host(has_zero)
    s["nonfinite"], s["after"] = _host(_down(xp, nonfinite, "any")), _host(_down(xp, nonfinite & ~before, "any"))
    if tail.dtype.kind == "f":
        s["sign"] = _host(_down(xp, xp.signbit(tail) & ~before, "sum") & 1).astype(bool)
    s["value"] = np.where(s["zero"], absorbed(np, s["pre"], s["after"], s["sign"]), s["pre"])
    return s


def segmented_tail(xp, state, x, flags, total, seed) -> np.ndarray:
    """``total`` (host state rows ``(w,)`` of a zero-absorbing segmented product, :class:`distscan.ops.
    state.Segmented`; its value and segment fields computed otherwise, by the GPU's kernels) with
    its zero-absorption fields, from the part's rows ``x`` (``(n, w)``, lifted) and ``flags``
    (``(n,)``), in scan order, after ``seed`` (host state rows, or None): what the CPU loops' pass
    ``cpu_state_loops.SEGMENTED_TAIL`` gives.  Where the value is finite and not zero the tail held
    no zero, inf or NaN: the fields say so (pre is the value).  Elsewhere the fields of the rows
    since the last segment start (a vectorised summary), after the seed's where it continues into
    them (``ops.absorbing.absorbing_join``), and the value where a zero absorbs (the GPU's may be NaN
    where the sequential product is 0)."""
    total = np.array(total, copy=True)
    value = total["value"]
    with np.errstate(invalid="ignore"):
        need = ~((value != 0) & np.isfinite(value))
    total["pre"] = value
    for name in ("zero", "after", "nonfinite", "sign"):
        total[name] = False
    if not need.any():
        return total
    ends = state.ends
    inner = flags[:-1] if ends else flags
    lo, fresh = 0, False
    if inner.shape[0]:
        k = int(_host(inner[::-1].argmax()))  # the last flagged row, from the end
        if bool(_host(inner[inner.shape[0] - 1 - k])):
            lo, fresh = (inner.shape[0] - k if ends else inner.shape[0] - 1 - k), True
    c = _tail_summary(xp, x[lo:], total.dtype)
    if not fresh and seed is not None:
        seed = np.asarray(seed, total.dtype).reshape(-1)
        joined = absorbing_join(seed, c)
        continues = ~seed["end"] if ends else np.ones(len(c), bool)  # a seed that ends a segment does not
        c = np.where(continues, joined, c)
    zero = need & c["zero"]
    for name in ("zero", "after", "nonfinite", "sign"):
        total[name] = np.where(need, c[name], total[name])
    total["pre"] = np.where(zero, c["pre"], value)
    total["value"] = np.where(zero, c["value"], value)
    return total
