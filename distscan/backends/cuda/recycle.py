"""Small results handed out again once nothing can reach them any more.

A loop of single-rank calls without ``out=`` (``y = cumsum(x)`` at 2^16 items) is bound by
the host, and taking a new result from CuPy's pool and wrapping it in an array is about a
quarter of its work (23-27 %, benchmarks/RESULTS.md, "Issue 10, eleventh pass").  A
:class:`ResultRing` remembers the last few results it handed out; one that nothing else can
reach any more is handed out again, memory and array object alike.

**The assumption, and how it is checked.**  A result may be reached through the array, a view
(it holds the array as its ``base`` and the memory through a pointer of its own), its
``MemoryPointer`` (``y.data``) or ``Memory`` (``y.data.mem``), an alias built on either
(``cupy.ndarray(shape, dtype, memptr=y.data)``), a DLPack capsule or a ``__cuda_array_interface__``
consumer (both hold the array), or a weak reference.  So a kept result is taken only when

* the ring holds the only reference to the array (its reference count),
* the array holds the only reference to its pointer, and the pointer the only one to its memory
  (the ``holders`` check the owner of the ring gives: counts calibrated on a real array), and
* no weak reference to the array exists (a ``weakref.ref(y)`` would resolve to a later result).

A raw integer address kept by the caller is not a reference: CuPy's own pool would hand that
memory out again too, so such a result is no more at risk than with ``cupy.empty``.

Each stream has its own ring, so a result is only reused on the stream that wrote it: work the
caller queued there on the old result is done before the next kernel overwrites it (the rule
of CuPy's pool for freed memory).  Counts are exact only with the GIL; in a free-threaded build
nothing is reused.
"""

from __future__ import annotations

import sys
import weakref

_refcount = sys.getrefcount
_weakrefs = weakref.getweakrefcount


class ResultRing:
    """The last ``size`` results handed out (arrays with ``shape`` and ``dtype``).

    ``holders(arr) -> bool``, if given, says whether nothing but the array holds the memory
    behind it (see the module docstring); without it only the array's own count is checked.
    """

    __slots__ = ("arrays", "size", "holders")

    def __init__(self, size: int = 2, holders=None):
        # 2: a loop that keeps only its last result frees the one before it
        self.arrays: list = []
        self.size = size
        self.holders = holders

    def take(self, shape, dtype):
        """A kept array of this shape and dtype (compared by identity) that nothing else can reach,
        or None (always None where counts cannot be trusted)."""
        for arr in self.arrays:
            if (_refcount(arr) == _RING_ONLY and arr.shape == shape and arr.dtype is dtype
                    and not _weakrefs(arr) and (self.holders is None or self.holders(arr))):
                return arr
        return None

    def keep(self, arr) -> None:
        """Remember a new result, forgetting the oldest past ``size``."""
        arrays = self.arrays
        if len(arrays) >= self.size:
            del arrays[0]
        arrays.append(arr)

    def clear(self) -> None:
        self.arrays.clear()


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


def memory_holders_check(make_array):
    """A ``holders`` check for arrays whose memory hangs off ``arr.data`` (a pointer) and
    ``arr.data.mem`` (the allocation), as CuPy's do, or None when counts cannot be trusted.

    ``make_array()`` returns a fresh array that nothing else references; the counts that mean
    "only the array holds its pointer, only the pointer its memory" are measured on it, with
    the same expressions the check uses, and confirmed to rise by one per extra holder."""
    if _RING_ONLY is None:
        return None
    arr = make_array()
    ptr_alone, mem_alone = _refcount(arr.data), _refcount(arr.data.mem)
    extra = arr.data
    ptr_seen = _refcount(arr.data) == ptr_alone + 1
    del extra
    extra = arr.data.mem
    mem_seen = _refcount(arr.data.mem) == mem_alone + 1
    del extra
    if not (ptr_seen and mem_seen):
        return None

    def holders(a) -> bool:
        return _refcount(a.data) == ptr_alone and _refcount(a.data.mem) == mem_alone and not _weakrefs(a.data)

    return holders
