"""The classic parallel-scan algorithms, one readable NumPy function each (the CPU teaching path).

Every algorithm here computes the same thing as ``ufunc.accumulate(x, axis=0)``, with the data
flow of its GPU counterpart written as whole-array NumPy steps: one ``ufunc`` call is one
parallel step (every "thread" of the step applies the operator once), and ``sync()`` marks
where a block would need a ``__syncthreads()``.  It is not the production path: the CPU
backend's sequential ``ufunc.accumulate`` is faster on a CPU.  It lets CI run every algorithm
without a GPU, and shows each data flow in code.

Names (``ALGORITHMS``; ``docs/algorithms.md`` explains each one with a diagram):

================================  ======  =========================================================
name                              level   data flow
================================  ======  =========================================================
``auto``                          --      the backend's own default (here: ``ufunc.accumulate``)
``kogge_stone``                   block   log2 B steps, element i adds element i - 2^k (in place)
``kogge_stone_double_buffer``     block   the same, reading one buffer and writing the other
``brent_kung``                    block   reduction tree up, distribution tree down
``blelloch``                      block   up-sweep, clear the root, down-sweep (exclusive)
``coarsened``                     block   runs scanned sequentially, run totals scanned, offsets
``hierarchical``                  device  scan tiles, scan the tile totals recursively, add back
``domino``                        device  tile i waits for tile i-1's inclusive prefix
``lookback``                      device  decoupled look-back over aligned windows
``lookahead``                     device  the same combination, scheduled by persistent blocks
                                          that keep each tile in shared memory from its
                                          reduction to its scan, DEPTH of their tiles later
================================  ======  =========================================================

On the GPU both give bitwise the same results for the same tile shape; ``auto`` uses
``lookback`` under 2^26 bytes moved (read plus written: 2^23 4-byte items), or 2^25 where input
or output items have 8 bytes or more (2^21 8-byte items), and ``lookahead`` from there, where it
measured faster (benchmarks/RESULTS.md, "Issue 10, thirteenth pass").

A block-level name selects the scan inside a tile of ``block`` rows; the tiles are then
combined by the device-level default, ``lookback``.  A device-level name selects how tiles
are combined; the scan inside each tile is then the default tile scan, ``coarsened`` (the
data flow of ``kernels/block/block_scan.cuh``: a thread's items sequentially, then the thread
totals).  Device-level functions take ``tile_scan=`` to combine any tile scan with them.

The functions
-------------
Every algorithm is a function ``f(x, ufunc, identity, *, block=1024) -> ndarray``:

* ``x``: 2-D array ``(n, w)``, scanned along axis 0 (``w`` independent columns), already in
  the accumulator dtype (``distscan._dtypes.ScanTypes.acc``: bool for the logical operators);
* ``ufunc``: the operator's binary NumPy ufunc (``distscan.ops.Op.ufunc``);
* ``identity``: the operator's identity, a scalar of the accumulator dtype;
* ``block``: rows per tile, a power of two >= 2 (a tile shrinks to the next power of two
  >= n when n is smaller); non-powers of two are padded with the identity.

It returns the *inclusive* scan, a new ``(n, w)`` array of ``x``'s dtype; ``x`` is not
modified.  :func:`blelloch_exclusive` returns the exclusive scan (Blelloch's is exclusive by
nature; :func:`blelloch` derives the inclusive one as ``exclusive[i] op x[i]``).  For every
other algorithm the exclusive scan is the inclusive one shifted by a row (:func:`scan` does
that, and picks ``blelloch_exclusive`` for ``blelloch``).

Results
-------
Integers and bool are exact (overflow wraps as in NumPy), and so are ``max``/``min`` on any
dtype (NaN propagates as ``np.maximum``/``np.minimum`` propagate it: any NaN at or before i
makes out[i] NaN).  Float and complex sums and products are grouped differently from the
sequential scan, so results differ from ``numpy.cumsum``/``cumprod`` by rounding only: with unit
roundoff ``u`` of the dtype and ``gamma(k) = k*u / (1 - k*u)``, every ``out[i]`` is a tree of
``x[0..i]`` in which no input passes through more than ``i`` operations, so

    sums:      |out[i] - cumsum[i]|   <= 2 * gamma(i)  * sum_{j<=i} |x[j]|
    products:  |out[i] - cumprod[i]|  <= 2 * gamma(i)  * prod_{j<=i} |x[j]|   (real)
                                      <= 2 * gamma(2i) * sqrt(2) * prod |x[j]| (complex)

(each term against the exact result, then the triangle inequality; the tree algorithms are
much better in practice: a depth of O(log n) per tile plus the tile chain).  Both bounds
assume no overflow or underflow along the way; a partial product that overflows where the
sequential one does not (or ``0 * inf``) can give inf or NaN where NumPy does not.
Unlike the CPU backend, nothing here special-cases zeros in float products.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .._lazy import lazy_names
from .names import (ALGORITHMS, BLOCK_LEVEL, DEFAULT_DEVICE, DEFAULT_TILE, DEVICE_LEVEL, ITEMS,  # noqa: F401
                    SUB_WINDOW, WINDOW, levels, resolve_algorithm)

# The data flows (flows.py) and their counts (counts.py) load on first use: distscan's own scans
# need only the names, so the command's start-up does not compile or run them.
__getattr__, __dir__ = lazy_names(__name__, {
    **dict.fromkeys(("OpCount", "count_device", "count_ops"), ".counts"),
    **dict.fromkeys(("TILE_SCANS", "blelloch", "blelloch_exclusive", "brent_kung", "coarsened", "domino",
                     "hierarchical", "kogge_stone", "kogge_stone_double_buffer", "lookahead", "lookback"), ".flows")})


__all__ = [
    "ALGORITHMS", "BLOCK_LEVEL", "DEVICE_LEVEL", "DEFAULT_DEVICE", "DEFAULT_TILE",
    "resolve_algorithm", "levels", "scan", "get_algorithm", "TILE_SCANS",
    "kogge_stone", "kogge_stone_double_buffer", "brent_kung", "blelloch", "blelloch_exclusive",
    "coarsened", "hierarchical", "domino", "lookback", "lookahead",
    "OpCount", "count_ops", "count_device",
]


def _auto(x, ufunc, identity, *, block=1024) -> np.ndarray:
    return ufunc.accumulate(x, axis=0, dtype=x.dtype) if x.shape[0] else x.copy()


def get_algorithm(name) -> Callable:
    """The inclusive-scan function of an algorithm name (``auto``: ``ufunc.accumulate``)."""
    name = resolve_algorithm(name)
    if name == "auto":
        return _auto
    from . import flows  # loaded on first use (above); every other name is a function there
    return getattr(flows, name)


def scan(name, x, ufunc, identity, *, exclusive=False, block=1024) -> np.ndarray:
    """Inclusive or exclusive scan of ``x`` (n, w) with algorithm ``name``.

    Exclusive: ``out[0] = identity``, ``out[i] = inclusive[i-1]`` (the inclusive scan shifted by a
    row), except Blelloch, whose scan is exclusive by nature (:func:`blelloch_exclusive`).
    """
    name = resolve_algorithm(name)
    inclusive = get_algorithm(name)
    if not exclusive:
        return inclusive(x, ufunc, identity, block=block)
    if name == "blelloch":
        from .flows import blelloch_exclusive  # as in get_algorithm
        return blelloch_exclusive(x, ufunc, identity, block=block)
    out = np.empty_like(x)
    if x.shape[0]:
        out[0] = identity
        out[1:] = inclusive(x[:-1], ufunc, identity, block=block)
    return out
