"""Cases shared by the kernel tests that compare a device strategy bitwise with the one-tile
look-back (tests/gpu/test_kernels_lookahead.py, tests/gpu/test_kernels_lead.py): every operator x
dtype the kernels handle, data whose sums and products stay finite, and the bitwise comparisons
(integers also against tests.support.reference.reference_scan)."""

from __future__ import annotations

import numpy as np

from distscan.ops import OPS

from tests.support.reference import reference_scan

DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64, np.float16,
          np.float32, np.float64, np.complex64, np.complex128]
TABLE = [(name, np.dtype(dt)) for name in sorted(OPS) for dt in DTYPES if np.dtype(dt).kind in OPS[name].kinds]
TABLE_IDS = [f"{n}-{d.name}" for n, d in TABLE]


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


def as_bytes(a):
    """A device array's bytes on the host (for bitwise comparisons, floats included)."""
    import cupy as cp

    return cp.asnumpy(cp.ascontiguousarray(a)).view(np.uint8)


def assert_deterministic_while_racing(scan, reference):
    """``scan()`` gives bitwise the same array run to run while a bandwidth-hungry kernel runs on
    another stream, and bitwise ``reference()``'s (both zero-argument calls returning an array)."""
    import cupy as cp

    first = scan()
    ref = reference()
    side = cp.cuda.Stream(non_blocking=True)
    with side:
        noise = cp.random.random(1 << 26)
    for _ in range(4):
        with side:
            noise *= 1.0001
        np.testing.assert_array_equal(as_bytes(scan()), as_bytes(first))
    side.synchronize()
    np.testing.assert_array_equal(as_bytes(first), as_bytes(ref))


def assert_int8_sum_is_lookback(n, state, algorithm):
    """An int8 sum of n random items with `algorithm` equals the one-tile look-back's, total
    included, and spot checks equal a direct sum modulo 2^8 (for n past 2^31 and 2^32)."""
    import cupy as cp

    from distscan._dtypes import scan_types
    from distscan.backends import cuda as gpu

    x = cp.random.RandomState(state).randint(-128, 128, n, dtype=cp.int8)
    op = OPS["sum"]
    t = scan_types(op, np.int8, np.int8)
    got, total = gpu.scan(x, op, t, want_total=True, algorithm=algorithm)
    ref = cp.empty_like(got)
    _, ref_total = gpu.scan(x, op, t, out=ref, want_total=True, algorithm="lookback")
    assert bool(cp.array_equal(got, ref))
    assert total[0] == ref_total[0] == got[-1].get()
    del ref
    for i in (0, min((1 << 31) - 2, n - 1), n - 1):
        assert (int(cp.sum(x[:i + 1], dtype=cp.int64).get()) - int(got[i].get())) % 256 == 0


def assert_bitwise_lookback(rng, op, t, dt, n, i, algorithm, label):
    """A scan of n fresh items with `algorithm` against the one-tile look-back, bitwise, total
    included, and exact against NumPy for integers.  Case i picks exclusive (odd i) and a seed
    (i % 3 == 1).  Returns ``(x, ref, exclusive, seed, msg)`` for further checks."""
    import cupy as cp

    from distscan.backends import cuda as gpu

    x = cp.asarray(kernel_data(rng, dt, n))
    exclusive = bool(i % 2)
    seed = np.asarray(kernel_data(rng, t.acc, 1), t.acc) if i % 3 == 1 else None
    got, total = gpu.scan(x, op, t, exclusive=exclusive, seed=seed, want_total=True, algorithm=algorithm)
    ref, ref_total = gpu.scan(x, op, t, exclusive=exclusive, seed=seed, want_total=True, algorithm="lookback")
    assert got.shape == (n,)
    msg = f"{label} n={n} excl={exclusive} seed={seed is not None}"
    np.testing.assert_array_equal(as_bytes(got), as_bytes(ref), err_msg=msg)
    np.testing.assert_array_equal(np.asarray(total).view(np.uint8), np.asarray(ref_total).view(np.uint8), err_msg=msg)
    if dt.kind in "biu":
        np.testing.assert_array_equal(cp.asnumpy(got), reference_scan(cp.asnumpy(x), op, exclusive=exclusive, initial=seed, types=t), err_msg=msg)
    return x, ref, exclusive, seed, msg
