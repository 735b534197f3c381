"""Small results handed out again once their caller has let go of them.

A loop of single-rank calls without ``out=`` (``y = cumsum(x)`` at 2^16 items) is bound by
the host, and taking a new result from CuPy's pool and wrapping it in an array is about a
quarter of its work (23-27 %, benchmarks/RESULTS.md, "Issue 10, eleventh pass").  A :class:`ResultRing`
remembers the last few results it handed out; one that nothing else references any more (its
reference count is the ring's own) is handed out again, memory and array object alike.

Each stream has its own ring, so a result is only reused on the stream that wrote it: work the
caller queued there on the old result is done before the next kernel overwrites it.  That is
the rule of CuPy's pool for freed memory, so a dropped result is no more at risk than with
``cupy.empty``.  Any holder (a variable, a view's ``base``, a DLPack capsule, a list) adds a
reference, so a result that can still be reached is never taken.
"""

from __future__ import annotations

import sys

_refcount = sys.getrefcount


class ResultRing:
    """The last ``size`` results handed out (arrays with ``shape`` and ``dtype``)."""

    __slots__ = ("arrays", "size")

    def __init__(self, size: int = 2):
        # 2: a loop that keeps only its last result frees the one before it
        self.arrays: list = []
        self.size = size

    def take(self, shape, dtype):
        """A kept array of this shape and dtype (compared by identity) that only the ring
        references, or None (always None where counts cannot be trusted)."""
        for arr in self.arrays:
            if _refcount(arr) == _RING_ONLY and arr.shape == shape and arr.dtype is dtype:
                return arr
        return None

    def keep(self, arr) -> None:
        """Remember a new result, forgetting the oldest past ``size``."""
        arrays = self.arrays
        if len(arrays) >= self.size:
            del arrays[0]
        arrays.append(arr)


class _Probe:
    shape = ()
    dtype = None


def _ring_only_count():
    """The count :meth:`ResultRing.take` sees for an object only the ring holds.

    Measured through ``take`` itself: what CPython counts of its own temporaries differs by
    version (3.14 skips some).  None, so that nothing is ever reused, when one more holder
    does not change what ``take`` sees, or in a free-threaded build (counts are not exact)."""
    global _RING_ONLY
    if not getattr(sys, "_is_gil_enabled", lambda: True)():
        return None
    ring = ResultRing()
    ring.keep(_Probe())
    try:
        for count in range(1, 16):
            _RING_ONLY = count
            if ring.take((), None) is not None:
                holders = [ring.arrays[0]]
                other = ring.take((), None)
                holders.clear()
                return count if other is None and ring.take((), None) is not None else None
        return None
    finally:
        _RING_ONLY = None


_RING_ONLY = None
_RING_ONLY = _ring_only_count()
