"""CPU backend: NumPy ufuncs, with carries folded in while a chunk is still in cache.

``ufunc.accumulate`` is NumPy's sequential scan: an unseeded scan whose input is
already in the accumulator dtype is one call, identical to ``numpy.cumsum``.
Every other scan (a seed from the ranks before, a cast from a narrower input, an
accumulator wider than the output) runs chunk by chunk: scan the chunk, then
fold the running carry into it while it is in cache.  Memory traffic stays at
one read of the input and one write of the output, and the cast happens inside
the cache instead of as a separate pass over the whole array.
"""

from __future__ import annotations

import contextlib

import numpy as np

from .._arrays import ndarrays_may_share_memory
from .._dtypes import ScanTypes
from ..ops import Op
from .. import algorithms
from .._carry import lifted, zero_absorbs
from .absorb import absorb_zeros

name = "cpu"

# Rows per chunk: ~1 MiB of accumulator stays in L2 and keeps the Python loop short (measured: 256 KiB-4 MiB within noise for int64, 1 MiB best for int32 -> int64).
_CHUNK_BYTES = 1 << 20


def is_native(x) -> bool:
    return isinstance(x, np.ndarray)


def lean_arrays(x, out, types: ScanTypes) -> bool:
    """Whether :func:`scan_lean` takes these arrays as they are: a contiguous 1-D NumPy ``x`` of the
    input dtype, and ``out`` None or a contiguous, writable NumPy array of its shape and the result
    dtype that does not overlap it (the lean call writes it after the exchange, where a read-only
    one would fail on this rank alone)."""
    if type(x) is not np.ndarray or x.ndim != 1 or x.dtype != types.input or not x.flags.c_contiguous:
        return False
    if out is None:
        return True
    if type(out) is not np.ndarray or out.dtype != types.result or out.shape != x.shape:
        return False
    flags = out.flags
    return flags.c_contiguous and flags.writeable and not ndarrays_may_share_memory(x, out)


def scan_lean(x, op: Op, types: ScanTypes, exclusive: bool, out=None, seed=None):
    """``scan(x, ..., seed=seed, out=out)[0]`` for arrays :func:`lean_arrays` took: an inclusive scan
    in the result dtype is one sequential pass of NumPy (the seed folded into the first element)."""
    if exclusive or types.acc != types.result or x.size == 0 or op.nan_lift or op.state is not None:
        result = scan(x, op, types, exclusive=exclusive, seed=seed, out=out)[0]
        return result if out is None else out
    if seed is None:
        return op.ufunc.accumulate(x, dtype=types.acc, out=out)
    if out is None:
        out = np.empty(x.shape, types.result)
    np.copyto(out, x, casting="unsafe")  # NumPy's conversion to the accumulator, as accumulate's
    op.ufunc(np.asarray(seed, types.acc).reshape(-1)[:1], out[:1], out=out[:1])
    return op.ufunc.accumulate(out, out=out)


def lean_scanner(op: Op, types: ScanTypes, exclusive: bool):
    """:func:`scan_lean` without a seed as a function of ``(x, out)``, made once per plan
    (``ScanPlan.one_rank``): for an inclusive scan in the result dtype, NumPy's accumulate
    itself, with nothing between the call and it; ``out`` (when given) is what it returns."""
    if exclusive or types.acc != types.result or op.nan_lift or op.state is not None:
        return lambda x, out: scan_lean(x, op, types, exclusive, out)
    accumulate, acc = op.ufunc.accumulate, types.acc

    def run(x, out):
        return accumulate(x, dtype=acc, out=out) if x.size else scan_lean(x, op, types, exclusive, out)
    return run


def _identity_row(op: Op, types: ScanTypes, w: int) -> np.ndarray:
    """What an empty prefix gives (an exclusive scan's first row, an empty part's total)."""
    return np.full(w, op.identity(types.acc), dtype=types.acc)


def _chunk_rows(types: ScanTypes, w: int) -> int:
    return max(1, _CHUNK_BYTES // (types.acc.itemsize * max(w, 1)))


def _inclusive(x: np.ndarray, op: Op, types: ScanTypes, seed, out: np.ndarray):
    """Inclusive scan of ``x`` into ``out`` with an optional seed; returns the last accumulator row.

    Strictly sequential, as ``numpy.cumsum`` is: the seed (and each chunk's carry) is folded
    into the first row of the chunk before the chunk is scanned, so every result is
    ``(((seed op x0) op x1) op ...)``.  Scanning a chunk and combining the carry afterwards
    would associate differently, and a zero carry would meet a chunk's overflowed product as
    ``0 * inf = NaN`` where NumPy's running product stays 0.
    """
    n, w = x.shape
    if n == 0:
        return seed
    lift = op.nan_lift and types.acc.kind in "fc"
    if seed is None and x.dtype == types.acc and out.dtype == types.acc and not lift:
        op.ufunc.accumulate(x, axis=0, dtype=types.acc, out=out)
        return out[-1].copy()
    rows = _chunk_rows(types, w)
    # The accumulator lives in out itself unless the output is narrower (float16 sums).
    scratch = None if out.dtype == types.acc else np.empty((min(rows, n), w), types.acc)
    carry = seed
    for start in range(0, n, rows):
        stop = min(start + rows, n)
        block = out[start:stop] if scratch is None else scratch[: stop - start]
        if carry is None and not lift:
            op.ufunc.accumulate(x[start:stop], axis=0, dtype=types.acc, out=block)
        else:
            block[...] = x[start:stop]  # NumPy's cast (dtype=, or a narrow input)
            if lift:  # NaN counts as the identity, in cache (nancumsum's zeros)
                np.copyto(block, op.identity(types.acc), where=np.isnan(block))
            if carry is not None:
                op.ufunc(carry, block[0], out=block[0])
            op.ufunc.accumulate(block, axis=0, dtype=types.acc, out=block)
        carry = block[-1].copy()
        if scratch is not None:
            out[start:stop] = block
    return carry


def scan(x, op: Op, types: ScanTypes, *, exclusive=False, seed=None, out=None, want_total=False, algorithm="auto",
         aux=(), reverse=False, initial=None):
    if op.state is not None:
        return _state_scan(x, aux, op, types, exclusive, seed, out, want_total, reverse, initial)
    if x.ndim == 1:  # 1-D is one column
        rows, total = scan(x.reshape(-1, 1), op, types, exclusive=exclusive, seed=seed,
                           out=None if out is None else out.reshape(-1, 1), want_total=want_total,
                           algorithm=algorithm, reverse=reverse, initial=initial)
        return rows.reshape(-1), total
    n, w = x.shape
    if out is None:
        out = np.empty((n, w), types.result)
    if reverse:  # the same scan of the mirrored rows (views: nothing is copied)
        _, total = scan(x[::-1], op, types, exclusive=exclusive, seed=seed, out=out[::-1], want_total=want_total,
                        algorithm=algorithm, aux=tuple(a[::-1] for a in aux), initial=initial)
        return out, total
    if seed is not None:
        seed = np.asarray(seed, types.acc).reshape(w)
    if algorithm != "auto":
        return _scan_by(algorithm, x, op, types, exclusive, seed, out, want_total)
    if not exclusive:
        last = _inclusive(x, op, types, seed, out)
        total = last
    else:
        if n:
            out[0] = seed if seed is not None else _identity_row(op, types, w)
        last = _inclusive(x[:-1], op, types, seed, out[1:])
        total = None
        if want_total and n:
            if last is None:  # one row, no seed: NumPy's accumulate copies it (gcd(0, -6) is 6, fmax(-inf, nan) -inf)
                total = op.lift(x[-1], types.acc)
            else:
                total = op.ufunc(last, op.lift(x[-1], types.acc)).astype(types.acc, copy=False)
    if want_total and total is None:
        total = seed.copy() if seed is not None else _identity_row(op, types, w)
    # A copy: a one-row part's total is its row (lift views it), and callers keep the total as the
    # next chunk's seed while the row's buffer is freed and refilled by a read of a later chunk
    # (the file pipeline's free lists: an exclusive bitwise_and of one-row chunks took another row).
    return out, (np.array(total, types.acc).reshape(w) if want_total else None)


def _state_scan(x, aux, op: Op, types: ScanTypes, exclusive, seed, out, want_total, reverse, initial):
    """:func:`scan` of a state operator (``x`` ``(n,)`` or ``(n, w)``): its compiled loops
    (:mod:`distscan.backends.cpu_states`), into ``out`` or through a buffer of the accumulator
    dtype when ``out`` is narrower."""
    if out is None:
        out = np.empty(x.shape, types.result)
    state_out = out if out.dtype == types.acc else np.empty(x.shape, types.acc)
    rows = x if x.ndim == 2 else x.reshape(x.shape[0], 1)
    from . import cpu_states  # deferred: the state operators' loops load only where one is scanned
    total = cpu_states.scan(rows, aux, op, types, exclusive=exclusive, seed=seed, out=state_out.reshape(rows.shape),
                            initial=initial, reverse=reverse, want_total=want_total)
    if state_out is not out:
        out[...] = state_out
    return out, (None if total is None else np.array(total))  # a copy, as scan's (see there)


def _scan_by(algorithm, x, op: Op, types: ScanTypes, exclusive, seed, out, want_total):
    """A named algorithm's data flow in NumPy (:mod:`distscan.algorithms`): the teaching path."""

    n, w = x.shape
    identity = op.neutral(types.acc)  # pads tiles: must leave every value as it is, -0.0 included
    acc = np.array(op.lift(x, types.acc), types.acc)  # NumPy's cast (logical operators: x != 0; NaN-aware: NaN as identity)
    if seed is not None and n:
        acc[0] = op.ufunc(seed, acc[0])
    absorbs = zero_absorbs(op, types.acc)
    # Partial products in the algorithm's order may overflow where the sequential one does not;
    # absorb_zeros repairs what that does to zeros, so those warnings say nothing.
    with np.errstate(over="ignore", invalid="ignore") if absorbs else contextlib.nullcontext():
        inclusive = algorithms.get_algorithm(algorithm)(acc, op.ufunc, identity)
    if absorbs:
        absorb_zeros(np, lifted(np, x, op), inclusive, seed, False)
    if op.core.raw_first and seed is None and n:
        # The flows start from identity op x[0]; NumPy's accumulate copies x[0] (gcd(0, -6) is 6),
        # as _scan's own path and the GPU's general._raw_first do.
        inclusive[0] = acc[0]
    first = seed if seed is not None else _identity_row(op, types, w)
    if exclusive:
        if n:
            out[0] = first
            out[1:] = inclusive[:-1]
    else:
        out[...] = inclusive
    total = inclusive[-1].copy() if n else first.copy()
    return out, (np.asarray(total, types.acc).reshape(w) if want_total else None)


_NEUTRALS: dict = {}


def _neutral(op: Op, acc: np.dtype):
    """``op.neutral(acc)``, kept (reductions start from it on every call)."""
    value = _NEUTRALS.get((op.name, acc))
    if value is None:
        value = _NEUTRALS[(op.name, acc)] = op.neutral(acc)
    return value


def reduce(x, op: Op, types: ScanTypes, aux=(), reverse=False) -> np.ndarray:
    """The part's carry: its total in the accumulator dtype (a state operator's state), in scan
    order (``reverse``: last row first; a plain operator is commutative, so only states care)."""
    # From the neutral element: NumPy's own start (+0.0 for sums) would turn a part of negative
    # zeros into a +0.0 carry, where the sequential sum of the whole array keeps -0.0.
    acc = types.acc
    if op.state is not None:
        from . import cpu_states  # as in _state_scan
        return cpu_states.reduce(x, aux, op, types, reverse)
    # NaN-aware: NaN left out (where=), then read as the identity (_nan_read)
    where = ~np.isnan(x) if op.nan_lift and x.dtype.kind in "fc" else True
    if x.shape[0] == 1:  # one row is its own total, as NumPy's accumulate copies it: neutral op x is
        # not x for every operator (gcd(0, -6) is 6; complex (1+0j)*(0-0j) is 0+0j)
        return op.lift(x.reshape(-1), acc).reshape(-1).copy()
    if x.ndim == 1:  # 1-D is one column
        if not x.size:
            return _identity_row(op, types, 1)
        total = np.array([op.ufunc.reduce(x, dtype=acc, initial=_neutral(op, acc), where=where)], acc)
        return _nan_read(total, op, acc, where, None)
    n, w = x.shape
    if n == 0:
        return _identity_row(op, types, w)
    total = op.ufunc.reduce(x, axis=0, dtype=acc, initial=_neutral(op, acc), where=where)
    return _nan_read(np.asarray(total, acc).reshape(w), op, acc, where, 0)


def _nan_read(total, op: Op, acc, where, axis):
    """``total`` (NaN left out by ``where``) with the NaN read as the identity, as NumPy's
    nancumsum reads it: once per column that holds one, which changes only a sum's -0.0 (a +0.0
    among the items: ``[-0.0, nan]`` sums to +0.0 in sequence, to -0.0 with the NaN left out)."""
    if where is True:
        return total
    nan = ~where.all(axis=axis)
    if np.any(nan):
        np.copyto(total, op.ufunc(total, np.asarray(op.identity(acc), acc)), where=np.reshape(nan, total.shape))
    return total


def prepare(op: Op, types: ScanTypes, exclusive: bool, w: int):
    """A state operator's compiled loops for a plan's scans of ``w`` columns, made now
    (:class:`distscan.backends.cpu_states.Loops`); None for the operators that have none."""
    if op.state is None:
        return None  # without loading the state loops (cpu_states.loops says the same)
    from . import cpu_states  # as in _state_scan
    return cpu_states.loops(op, types, exclusive, w)


def lean_state_scanner(op: Op, types: ScanTypes, exclusive: bool, reverse: bool, algorithm: str, general):
    """A reverse or state scan of one rank's part, as a function of ``(x, out, aux)`` made once per
    plan (``ScanPlan.one_rank_state``): a plain inclusive reverse scan as NumPy's accumulate over
    the mirrored views (what :func:`scan` does for it), a state scan by its compiled loops
    (:func:`distscan.backends.cpu_fused.one_rank`); None where every call takes ``general`` (the
    plan's own route): other plain scans, a result narrower than the accumulator, a named
    algorithm, a declared operator."""
    if algorithm != "auto" or types.result != types.acc:
        return None
    if op.state is None:
        if not reverse or exclusive or op.nan_lift or types.input != types.acc:
            return None
        accumulate, acc = op.ufunc.accumulate, types.acc

        def mirrored(x, out, aux):  # (_inclusive's one accumulate, over the mirrored views)
            if out is None:
                out = np.empty(x.shape, acc)
            accumulate(x[::-1], dtype=acc, out=out[::-1])
            return out
        return mirrored
    loops = prepare(op, types, exclusive, 1)
    if loops is None:
        return None
    from .cpu_fused import one_rank  # as in _state_scan
    return one_rank(loops, reverse, types.result, general)


def array_module():
    """The array module of this backend's arrays."""
    return np


def astype(a, dtype):
    """``a`` as a C-contiguous array of ``dtype`` with NumPy's values (``a`` itself where it is one
    already): the backends' one cast of a caller's values (the GPU's keeps float32 subnormals,
    which CuPy's own cast flushes: ``backends/cuda/casts.py``)."""
    return np.asarray(a, dtype=dtype, order="C")


def combine(y, op: Op, types: ScanTypes, offset) -> None:
    if y.ndim == 1:  # 1-D is one column
        y = y.reshape(-1, 1)
    if y.shape[0] == 0:
        return
    offset = np.asarray(offset, types.acc).reshape(1, -1)
    if y.dtype == types.acc:
        op.ufunc(offset, y, out=y)
        return
    # Narrow output (float16): combine in the accumulator dtype, chunk by chunk.
    rows = _chunk_rows(types, y.shape[1])
    for start in range(0, y.shape[0], rows):
        block = y[start:start + rows]
        block[...] = op.ufunc(offset, block.astype(types.acc))
