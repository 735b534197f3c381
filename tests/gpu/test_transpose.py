"""backends/cuda/transpose.py (the column-at-a-time scan's copies in and out) against CuPy's own
transposed copies: every item size (bool to complex128), odd shapes, a tile's edge, and widths
past what a block's shared memory holds (CuPy's copy then)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.devices import require_gpu

cp = require_gpu()
pytestmark = pytest.mark.gpu

from distscan.backends.cuda import transpose  # noqa: E402


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.float16, np.int32, np.float64, np.complex64, np.complex128])
def test_rows_to_columns_and_back_are_cupys_copies(dtype, rng):
    for n, w in [(1, 2), (7, 3), (1000, 4), (100003, 5), (4097, 32), (3000, 33), (513, 257), (70001, 64),
                 (5, 3100), (2, 7000)]:
        host = (rng.standard_normal((n, w)) * 100).astype(dtype)
        if np.dtype(dtype).kind == "c":
            host = host + 1j * (rng.standard_normal((n, w)) * 100).astype(dtype)
        x = cp.asarray(host)
        xt = transpose.rows_to_columns(x)
        assert xt.flags.c_contiguous and xt.shape == (w, n)
        np.testing.assert_array_equal(cp.asnumpy(xt), host.T, err_msg=f"{n} x {w}")
        out = cp.full((n, w), 7, dtype)
        transpose.columns_to_rows(xt, out)
        np.testing.assert_array_equal(cp.asnumpy(out), host, err_msg=f"{n} x {w} back")


def test_scans_of_few_columns_through_the_kernels(rng):
    """distscan.cumsum of (n, w) rows (the column-at-a-time way) equals NumPy's, integers exact."""
    import distscan
    from mpi4py import MPI
    for n, w in [(100003, 2), (4097, 32), (40000, 33), (3, 5)]:
        x = rng.integers(-1000, 1000, (n, w)).astype(np.int64)
        got = distscan.cumsum(cp.asarray(x), comm=MPI.COMM_SELF)
        np.testing.assert_array_equal(cp.asnumpy(got), np.cumsum(x, axis=0))
