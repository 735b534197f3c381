"""The ring of results handed out again once dropped (distscan.backends.cuda.recycle), on NumPy
arrays: what counts as dropped must be exact, since a result taken while something still
references it would be overwritten under its holder."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

from distscan.backends.cuda import recycle as _recycle
from distscan.backends.cuda.recycle import ResultRing

pytestmark = pytest.mark.skipif(_recycle._RING_ONLY is None, reason="reference counts not exact here")


def test_a_dropped_result_is_taken_again_and_a_held_one_never():
    ring = ResultRing()
    a = np.zeros(5)
    ring.keep(a)
    assert ring.take((5,), a.dtype) is None  # held by `a`
    ident = id(a)
    del a
    got = ring.take((5,), np.dtype(np.float64))
    assert got is not None and id(got) == ident
    assert ring.take((5,), np.dtype(np.float64)) is None  # now held by `got`


_HOLDERS = {
    "view": lambda arr: arr[1:],  # holds it as its base
    "list": lambda arr: [arr],
    "dict": lambda arr: {"k": arr},
    "function default": lambda arr: (lambda v=arr: v),
    "attribute": lambda arr: type("Box", (), {"v": arr})(),
    "memoryview": memoryview,
    "generator": lambda arr: _suspended(arr),
}


@pytest.mark.parametrize("holder", sorted(_HOLDERS))
def test_every_kind_of_holder_keeps_a_result(holder):
    ring = ResultRing()
    a = np.arange(6.0)
    ring.keep(a)
    kept = _HOLDERS[holder](a)
    del a
    assert ring.take((6,), np.dtype(np.float64)) is None
    del kept
    gc.collect()
    assert ring.take((6,), np.dtype(np.float64)) is not None


def _suspended(arr):
    """A generator suspended with ``arr`` in its frame."""
    def gen(v):
        yield v
        yield v
    g = gen(arr)
    next(g)
    return g


def test_shape_and_dtype_must_match():
    ring = ResultRing()
    ring.keep(np.zeros(4, np.int32))
    assert ring.take((4,), np.dtype(np.int64)) is None
    assert ring.take((5,), np.dtype(np.int32)) is None
    got = ring.take((4,), np.dtype(np.int32))
    assert got is not None
    got.shape = (2, 2)  # reshaped in place by its user, then dropped
    del got
    assert ring.take((4,), np.dtype(np.int32)) is None
    assert ring.take((2, 2), np.dtype(np.int32)) is not None


def test_the_ring_forgets_the_oldest():
    ring = ResultRing(size=2)
    arrays = [np.zeros(i + 1) for i in range(3)]
    first = id(arrays[0])
    for a in arrays:
        ring.keep(a)
    del a, arrays
    assert [len(a) for a in ring.arrays] == [2, 3] and first not in map(id, ring.arrays)
    assert ring.take((1,), np.dtype(np.float64)) is None
    assert ring.take((2,), np.dtype(np.float64)) is not None
    assert ring.take((3,), np.dtype(np.float64)) is not None


def test_a_weak_reference_keeps_a_result():
    """A weakref.ref(y) of a dropped result would resolve to the next result of its kind."""
    ring = ResultRing()
    a = np.zeros(3)
    ring.keep(a)
    ref = weakref.ref(a)
    del a
    assert ring.take((3,), np.dtype(np.float64)) is None
    del ref
    assert ring.take((3,), np.dtype(np.float64)) is not None


class _Memory:
    """Stands for CuPy's Memory: what the pointers of an allocation hold."""


class _Pointer:
    """Stands for CuPy's MemoryPointer: ``mem`` is the allocation."""

    def __init__(self, mem):
        self.mem = mem


class _DeviceArray:
    """Stands for a CuPy array: ``data`` is its pointer (the same object every time)."""

    shape = (4,)
    dtype = np.dtype(np.float32)

    def __init__(self, data=None):
        self.data = data if data is not None else _Pointer(_Memory())


_MEMORY_HOLDERS = {
    "its pointer": lambda arr: arr.data,                       # mp = y.data; del y
    "an alias on its pointer": lambda arr: _DeviceArray(arr.data),  # cupy.ndarray(..., memptr=y.data)
    "its memory": lambda arr: arr.data.mem,                    # m = y.data.mem
    "a view's own pointer": lambda arr: _Pointer(arr.data.mem),   # y[1:] holds the memory, not the pointer
}


@pytest.mark.parametrize("holder", sorted(_MEMORY_HOLDERS))
def test_what_holds_the_memory_keeps_a_result(holder):
    """With the holders check of device arrays, anything that can still reach the memory of a
    dropped result keeps it from being handed out again (issue 28: a held pointer and an alias
    were overwritten by the next calls)."""
    holders = _recycle.memory_holders_check(_DeviceArray)
    assert holders is not None
    ring = ResultRing(holders=holders)
    a = _DeviceArray()
    ring.keep(a)
    kept = _MEMORY_HOLDERS[holder](a)
    del a
    assert ring.take((4,), np.dtype(np.float32)) is None
    del kept
    gc.collect()
    assert ring.take((4,), np.dtype(np.float32)) is not None


def test_the_holders_check_is_measured_not_assumed(monkeypatch):
    monkeypatch.setattr(_recycle, "_refcount", lambda obj: 3)
    assert _recycle.memory_holders_check(_DeviceArray) is None


def test_the_count_is_measured_not_assumed(monkeypatch):
    """A build where one more holder does not change the count turns reuse off."""
    monkeypatch.setattr(_recycle, "_refcount", lambda obj: 7)
    assert _recycle._ring_only_count() is None
    monkeypatch.setattr(_recycle, "_RING_ONLY", None)
    ring = ResultRing()
    ring.keep(np.zeros(2))
    assert ring.take((2,), np.dtype(np.float64)) is None
