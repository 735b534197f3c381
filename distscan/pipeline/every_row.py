"""The exact check of every row of a rank's output against the row before it (integers, booleans,
float max and min): one vectorized ufunc call per piece, no ``accumulate``, so that a single
wrong element anywhere is found (:mod:`distscan.pipeline.verify`)."""

from __future__ import annotations

import numpy as np

from .. import io as _io

# Rows read back and checked at a time.
PIECE_ROWS = 1 << 20


def check_every_row(hdr, x2, start, op, types, carry, exclusive, raw_first=False, lift=None):
    """For exact operators: every row of this rank's output against its predecessor.

    Inclusive: ``out[i] == out[i-1] op x[i]``, with ``out[start-1]`` the carry;
    exclusive: ``out[start] == carry`` and ``out[i] == out[i-1] op x[i-1]``.  ``raw_first``: this
    part starts the array, whose first prefix is its first row as it is (NumPy's accumulate copies
    it; the identity combined with it is not always it: ``gcd(0, -4)`` is 4, ``fmax(-inf, nan)`` -inf).
    One vectorized ufunc call per chunk, no ``accumulate``: a single wrong
    element anywhere is found.  ``lift``: the NaN-aware operators' reading of the inputs (NaN as
    the identity, in the file's dtype, before the cast to an integer accumulator).  Returns a
    message for the first mismatch, or None.
    """
    n, w = x2.shape
    prev = carry.astype(types.result)  # the output row before the chunk (or the carry)
    prev_x = None                      # exclusive: the input row before the chunk
    for lo in range(0, n, PIECE_ROWS):
        hi = min(n, lo + PIECE_ROWS)
        got = _io.read_rows(hdr, start + lo, start + hi).reshape(hi - lo, w)
        xs = x2[lo:hi] if lift is None else lift(x2[lo:hi], x2.dtype)
        xs = xs.astype(types.acc)
        before = np.concatenate([prev.reshape(1, w), got[:-1]])
        if exclusive:
            xin = np.concatenate([xs[:0] if prev_x is None else prev_x.reshape(1, w), xs[:-1]])
            want = np.empty_like(got)
            if prev_x is None:
                want[0] = carry.astype(types.result)
                want[1:] = op.ufunc(before[1:], xin).astype(types.result)
                if raw_first and hi - lo > 1:  # the global second row: the first as it is
                    want[1] = xs[0]
            else:
                want[:] = op.ufunc(before, xin).astype(types.result)
            prev_x = xs[-1].copy()
        else:
            want = op.ufunc(before, xs).astype(types.result)
            if raw_first and lo == 0:  # the global first row, as NumPy's accumulate copies it
                want[0] = xs[0]
        bad = ~((got == want) | (isnan(got) & isnan(want)))
        if bad.any():
            i, j = np.unravel_index(int(np.argmax(bad)), bad.shape)
            where = f"row {start + lo + int(i)}" + (f", column {int(j)}" if w > 1 else "")
            return f"{where}: expected {want[i, j]!r} from the row before it, file has {got[i, j]!r}"
        prev = got[-1].copy()
    return None


def isnan(a) -> np.ndarray:
    a = np.asarray(a)
    return np.isnan(a) if a.dtype.kind in "fc" else np.zeros(a.shape, bool)
