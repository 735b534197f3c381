"""Random data, and the parts of a global array that the ranks hold."""

from __future__ import annotations

import numpy as np


def random_array(rng, n, dtype, trailing=()):
    """Fresh random data of ``dtype`` (never zeros only), small enough values for float checks."""
    dtype = np.dtype(dtype)
    shape = (n,) + tuple(trailing)
    if dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -100), min(info.max, 100), shape, endpoint=True).astype(dtype)
    if dtype.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


FLAG_PATTERNS = ("none", "first row", "second row", "last row", "every row", "random")


def segment_flags(pattern, n, rng, density):
    """Segment flags of ``n`` rows by one of :data:`FLAG_PATTERNS` (``random``: each row flagged
    with probability ``density``): where a part's carry looks (distscan.ops.restarts.carry_rows)."""
    flags = np.zeros(n, bool)
    if n == 0:
        return flags
    if pattern == "first row":
        flags[0] = True
    elif pattern == "second row":
        flags[min(1, n - 1)] = True
    elif pattern == "last row":
        flags[-1] = True
    elif pattern == "every row":
        flags[:] = True
    elif pattern == "random":
        flags = rng.random(n) < density
    return flags


def zero_rule_case(rng, n, dtype="float64"):
    """Coefficients and values for the zero rule (distscan.ops.state.affine_coef: tests/ops/test_recurrences.py, tests/pipeline/test_state_scans.py, tests/gpu/test_operators.py): ``a`` of 0, 1,
    inf and NaN, ``b`` of 0, 1 and 2, so that ``y`` is an integer (exact in any association),
    never negative (no cancellation to zero) and often exactly 0 just before an infinite or NaN
    ``a`` (once infinite, ``y`` stays so, or NaN, to the next segment start)."""
    a = rng.choice(np.array([0, 1, np.inf, np.nan]), n, p=[0.2, 0.76, 0.02, 0.02]).astype(dtype)
    b = rng.choice(np.array([0, 0, 0, 1, 2]), n).astype(dtype)
    return a, b


# coefficients with an infinite or NaN part: real, imaginary or both
COMPLEX_NONFINITE = np.array([complex(np.inf, 0), complex(0, np.inf), complex(-np.inf, 1), complex(np.nan, 0),
                              complex(1, np.nan), complex(np.inf, np.nan)])


def complex_zero_rule_case(rng, n, dtype="complex128"):
    """Finite coefficients and values for the complex zero rule: ``a`` of 0 and 1, ``b`` of
    Gaussian integers with parts 0, 1 and 2 (mostly 0), so that ``y`` is exact in any association
    and often exactly 0; a test puts :data:`COMPLEX_NONFINITE` coefficients where it is (once
    infinite, a complex ``y``'s NaN parts would depend on the association: IEEE's complex
    product of an infinity)."""
    a = np.where(rng.random(n) < 0.2, 0, 1).astype(dtype)
    b = (rng.choice([0, 0, 0, 1, 2], n) + 1j * rng.choice([0, 0, 0, 1, 2], n)).astype(dtype)
    return a, b


def random_counts(rng, size, max_rows=30, empty=0.25):
    """Random row counts of ``size`` ranks, up to ``max_rows`` each, a share ``empty`` of them (about)
    set to zero: uneven parts, empty ones among them, so that runs cross rank boundaries anywhere."""
    counts = rng.integers(0, max_rows + 1, size)
    counts[rng.random(size) < empty] = 0
    return counts


def block_counts(n, size):
    """Balanced split of n rows over size ranks (parts differ by at most one)."""
    base, extra = divmod(n, size)
    return [base + (1 if r < extra else 0) for r in range(size)]


def local_part(g, counts, rank):
    """Rank ``rank``'s rows of the global array ``g`` split into ``counts`` rows per rank."""
    starts = np.concatenate([[0], np.cumsum(counts)]).astype(int)
    return g[starts[rank]:starts[rank + 1]]


def rank_part(g, counts, comm):
    """This rank's rows of ``g`` (split into ``counts`` rows per rank of ``comm``), contiguous."""
    return np.ascontiguousarray(local_part(g, counts, comm.rank))


def strided_view(a):
    """``a`` (NumPy or CuPy) as a view with a step of two rows into a buffer of its own: not
    C-contiguous where it has two rows or more, so that a call kind's lean route does not take it."""
    return a.repeat(2, axis=0)[::2]  # (each row twice: the even rows are a's own)
