"""The reference scan (NumPy's ``accumulate`` on the whole array) and the comparison with it."""

from __future__ import annotations

import numpy as np

from distscan._dtypes import scan_types
from distscan.ops import get_op


def reference_scan(g, op, *, exclusive=False, initial=None, dtype=None):
    """NumPy's scan of the whole (global) array ``g`` along axis 0, the way distscan defines it."""
    op = get_op(op)
    types = scan_types(op, g.dtype, dtype)
    acc = g.astype(types.acc) if not op.logical else (g != 0)
    if initial is not None:
        init = np.broadcast_to(np.asarray(initial).astype(types.acc), (1,) + g.shape[1:])
        acc = np.concatenate([init, acc])
    if acc.shape[0] == 0:
        return np.empty(g.shape, types.result)
    ref = op.ufunc.accumulate(acc, axis=0, dtype=types.acc)
    if initial is not None:
        ref = ref[:-1] if exclusive else ref[1:]
    elif exclusive:
        first = np.full((1,) + g.shape[1:], op.identity(types.acc), types.acc)
        ref = np.concatenate([first, ref[:-1]])
    return ref.astype(types.result)


def assert_scan_equal(result, expected, *, float_rtol=None):
    """Integers and bool exactly; floats within a bound relative to the running magnitude."""
    result = np.asarray(result)
    assert result.dtype == expected.dtype, (result.dtype, expected.dtype)
    assert result.shape == expected.shape, (result.shape, expected.shape)
    if expected.dtype.kind in "biu":
        np.testing.assert_array_equal(result, expected)
        return
    if float_rtol is None:
        float_rtol = {2: 2e-2, 4: 1e-4, 8: 1e-10, 16: 1e-10}[expected.dtype.itemsize if expected.dtype.kind == "f"
                                                           else expected.dtype.itemsize // 2]
    np.testing.assert_allclose(result.astype(np.complex128), expected.astype(np.complex128),
                               rtol=float_rtol, atol=float_rtol * max(1.0, float(np.sqrt(expected.shape[0] if expected.ndim else 1))),
                               equal_nan=True)
