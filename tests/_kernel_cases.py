"""Cases shared by the kernel tests that compare a device strategy bitwise with the one-tile
look-back (test_kernels_lookahead.py, test_kernels_lead.py): every operator x dtype the
kernels handle, data whose sums and products stay finite, and NumPy's scan of it."""

from __future__ import annotations

import numpy as np

from conftest import draw_seed
from distscan.ops import OPS

DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64, np.float16,
          np.float32, np.float64, np.complex64, np.complex128]
TABLE = [(name, np.dtype(dt)) for name in sorted(OPS) for dt in DTYPES if np.dtype(dt).kind in OPS[name].kinds]
TABLE_IDS = [f"{n}-{d.name}" for n, d in TABLE]


def seeded_rng():
    """A generator from a fresh seed (or DISTSCAN_TEST_SEED), printed and kept for the report."""
    s = draw_seed()
    print(f"seed={s}")
    return np.random.default_rng(s)


def kernel_data(rng, dt, n):
    """n items of dtype dt: near 1 for floats and complex (products stay finite), small integers."""
    if dt.kind == "b":
        return rng.random(n) < 0.3
    if dt.kind == "c":
        return (1 + 1e-4 * (rng.standard_normal(n) + 1j * rng.standard_normal(n))).astype(dt)
    if dt.kind == "f":
        return (1 + 1e-3 * rng.standard_normal(n)).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(max(info.min, -1000), min(info.max, 1000), n, endpoint=True).astype(dt)


def numpy_scan(op, t, x, exclusive, seed):
    """NumPy's scan of host array x for ScanTypes t, with an optional (1,) seed."""
    acc = np.asarray(x).astype(t.acc) if not op.logical else np.asarray(x) != 0
    if seed is not None:
        acc = np.concatenate([seed.astype(acc.dtype), acc])
    want = op.ufunc.accumulate(acc, dtype=t.acc)
    if seed is not None:
        want = want[:-1] if exclusive else want[1:]
    elif exclusive:
        want = np.concatenate([np.full(1, op.identity(t.acc), t.acc), want[:-1]])
    return want.astype(t.result)
