"""The ring of results handed out again once dropped (distscan.backends._recycle), on NumPy
arrays: what counts as dropped must be exact, since a result taken while something still
references it would be overwritten under its holder."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

from distscan.backends import _recycle
from distscan.backends._recycle import ResultRing

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
    refs = [weakref.ref(a) for a in arrays]
    for a in arrays:
        ring.keep(a)
    del a, arrays
    assert refs[0]() is None  # forgotten: freed
    assert ring.take((1,), np.dtype(np.float64)) is None
    assert ring.take((2,), np.dtype(np.float64)) is not None
    assert ring.take((3,), np.dtype(np.float64)) is not None


def test_the_count_is_measured_not_assumed(monkeypatch):
    """A build where one more holder does not change the count turns reuse off."""
    monkeypatch.setattr(_recycle, "_refcount", lambda obj: 7)
    assert _recycle._ring_only_count() is None
    monkeypatch.setattr(_recycle, "_RING_ONLY", None)
    ring = ResultRing()
    ring.keep(np.zeros(2))
    assert ring.take((2,), np.dtype(np.float64)) is None
