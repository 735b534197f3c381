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

from .._dtypes import ScanTypes
from ..ops import Op

name = "cpu"

# Rows per chunk: ~1 MiB of accumulator stays in L2 and keeps the Python loop short (measured: 256 KiB-4 MiB within noise for int64, 1 MiB best for int32 -> int64).
_CHUNK_BYTES = 1 << 20


def is_native(x) -> bool:
    return isinstance(x, np.ndarray)


def lean_arrays(x, out, types: ScanTypes) -> bool:
    """Whether ``ScanPlan.call_1d`` takes this call: a contiguous 1-D NumPy ``x``, no ``out``."""
    return type(x) is np.ndarray and x.ndim == 1 and x.flags.c_contiguous and out is None


def _identity_row(op: Op, types: ScanTypes, w: int) -> np.ndarray:
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
    if seed is None and x.dtype == types.acc and out.dtype == types.acc:
        op.ufunc.accumulate(x, axis=0, dtype=types.acc, out=out)
        return out[-1].copy()
    rows = _chunk_rows(types, w)
    # The accumulator lives in out itself unless the output is narrower (float16 sums).
    scratch = None if out.dtype == types.acc else np.empty((min(rows, n), w), types.acc)
    carry = seed
    for start in range(0, n, rows):
        stop = min(start + rows, n)
        block = out[start:stop] if scratch is None else scratch[: stop - start]
        if carry is None:
            op.ufunc.accumulate(x[start:stop], axis=0, dtype=types.acc, out=block)
        else:
            block[...] = x[start:stop]  # NumPy's cast (dtype=, or a narrow input)
            op.ufunc(carry, block[0], out=block[0])
            op.ufunc.accumulate(block, axis=0, dtype=types.acc, out=block)
        carry = block[-1].copy()
        if scratch is not None:
            out[start:stop] = block
    return carry


def scan(x, op: Op, types: ScanTypes, *, exclusive=False, seed=None, out=None, want_total=False, algorithm="auto"):
    if x.ndim == 1:  # 1-D is one column
        rows, total = scan(x.reshape(-1, 1), op, types, exclusive=exclusive, seed=seed,
                           out=None if out is None else out.reshape(-1, 1), want_total=want_total,
                           algorithm=algorithm)
        return rows.reshape(-1), total
    n, w = x.shape
    if out is None:
        out = np.empty((n, w), types.result)
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
            prev = last if last is not None else _identity_row(op, types, w)
            total = op.ufunc(prev, x[-1].astype(types.acc, copy=False)).astype(types.acc, copy=False)
    if want_total and total is None:
        total = seed.copy() if seed is not None else _identity_row(op, types, w)
    return out, (np.asarray(total, types.acc).reshape(w) if want_total else None)


def _scan_by(algorithm, x, op: Op, types: ScanTypes, exclusive, seed, out, want_total):
    """A named algorithm's data flow in NumPy (:mod:`distscan.algorithms`): the teaching path."""
    from .. import algorithms
    from .._carry import zero_absorbs
    from ._absorb import absorb_zeros

    n, w = x.shape
    identity = op.identity(types.acc)
    acc = x.astype(types.acc)  # NumPy's cast (logical operators: x != 0)
    if seed is not None and n:
        acc[0] = op.ufunc(seed, acc[0])
    absorbs = zero_absorbs(op, types.acc)
    # Partial products in the algorithm's order may overflow where the sequential one does not;
    # absorb_zeros repairs what that does to zeros, so those warnings say nothing.
    with np.errstate(over="ignore", invalid="ignore") if absorbs else contextlib.nullcontext():
        inclusive = algorithms.get_algorithm(algorithm)(acc, op.ufunc, identity)
    if absorbs:
        absorb_zeros(np, x, inclusive, seed, False)
    first = seed if seed is not None else _identity_row(op, types, w)
    if exclusive:
        if n:
            out[0] = first
            out[1:] = inclusive[:-1]
    else:
        out[...] = inclusive
    total = inclusive[-1].copy() if n else first.copy()
    return out, (np.asarray(total, types.acc).reshape(w) if want_total else None)


def reduce(x, op: Op, types: ScanTypes) -> np.ndarray:
    n, w = x.shape
    if n == 0:
        return _identity_row(op, types, w)
    return np.asarray(op.ufunc.reduce(x, axis=0, dtype=types.acc), types.acc).reshape(w)


def array_module():
    """The array module of this backend's arrays."""
    return np


def combine(y, op: Op, types: ScanTypes, offset) -> None:
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
