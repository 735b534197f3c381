"""A rank's part passed in a kind of its own: the ways a caller hands distscan an array."""

from __future__ import annotations

import numpy as np


class Sub(np.ndarray):
    """A subclass of ndarray that adds nothing."""


class ArrayLike:
    """An object NumPy reads through ``__array__`` alone."""

    def __init__(self, a):
        self.a = a

    def __array__(self, dtype=None, copy=None):
        return self.a if dtype is None else self.a.astype(dtype)


class DLPack:
    """An object with ``__dlpack__`` and ``__dlpack_device__`` only (a CPU tensor of another library)."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, **kwargs):
        return self.a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


# a list keeps its dtype only for these (and has none when empty)
_LIST_DTYPES = (np.int64, np.float64, np.complex128, np.bool_)


def part_as(p, kind: str, tmp_path=None, name: str = "part"):
    """``p`` (a fresh 1-D or 2-D array, not used afterwards) passed as ``kind``: ``contiguous``,
    ``strided``, ``reversed`` (a negative-stride view), ``fortran``, ``list`` (where a list keeps
    the dtype), ``readonly``, ``byteswapped``, ``memmap`` (a file under ``tmp_path``, where given and
    ``p`` is not empty), ``masked``, ``subclass``, ``array_like`` or ``dlpack``; a copy otherwise."""
    if kind == "strided":
        b = np.zeros((2 * p.shape[0],) + p.shape[1:], p.dtype)
        b[::2] = p
        return b[::2]
    if kind == "reversed":
        return p[::-1].copy()[::-1]
    if kind == "fortran":
        return np.asfortranarray(p)
    if kind == "list":
        return p.tolist() if p.size and p.dtype in _LIST_DTYPES else p.copy()
    if kind == "readonly":
        q = p.copy()
        q.flags.writeable = False
        return q
    if kind == "byteswapped":
        return p.astype(p.dtype.newbyteorder("S"))
    if kind == "memmap" and p.size and tmp_path is not None:
        m = np.memmap(tmp_path / f"{name}.dat", dtype=p.dtype, mode="w+", shape=p.shape)
        m[...] = p
        return m
    if kind == "masked":
        return np.ma.MaskedArray(p.copy(), mask=np.zeros(p.shape, bool))
    if kind == "subclass":
        return p.copy().view(Sub)
    if kind == "array_like":
        return ArrayLike(p.copy())
    if kind == "dlpack":
        return DLPack(p.copy())
    return p.copy()
