"""Shared fixtures: the communicator under test, reference scans, GPU detection.

The same test files run serially (``pytest``) and under ``mpiexec -n K python -m
pytest --with-mpi``; ``comm`` is then a duplicate of ``COMM_WORLD`` so that a test
cannot disturb another.  Tests that need several ranks are marked
``@pytest.mark.mpi(min_size=2)`` (pytest-mpi skips them otherwise).
"""

import numpy as np
import pytest

from distscan._dtypes import scan_types
from distscan.ops import get_op

try:
    from mpi4py import MPI
except ImportError:  # pragma: no cover - the test extra installs mpi4py
    MPI = None


def _gpu_available() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - no CuPy, no driver, no device: all mean "no GPU"
        return False


HAVE_GPU = _gpu_available()


def pytest_collection_modifyitems(config, items):
    if HAVE_GPU:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU with CuPy")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def require_gpu():
    """CuPy, or skip the calling test module: no CuPy, no driver or no device."""
    cp = pytest.importorskip("cupy")
    if not HAVE_GPU:
        pytest.skip("needs a CUDA GPU", allow_module_level=True)
    return cp


def shared_rng(comm):
    """A generator seeded alike on every rank, from a fresh seed that rank 0 draws and prints."""
    seed = comm.bcast(int(np.random.SeedSequence().entropy % (1 << 63)) if comm.rank == 0 else None)
    print(f"seed={seed}")
    return np.random.default_rng(seed)


def all_ranks_ok(comm, check):
    """Run ``check()`` on every rank; fail on every rank if it failed on any."""
    error = None
    try:
        check()
    except AssertionError as exc:
        error = exc
    failed = comm.allgather(None if error is None else str(error))
    bad = [(r, m) for r, m in enumerate(failed) if m is not None]
    assert not bad, "\n".join(f"rank {r}: {m}" for r, m in bad)


@pytest.fixture
def comm():
    if MPI is None:
        pytest.skip("mpi4py is not installed")
    c = MPI.COMM_WORLD.Dup()
    yield c
    c.Free()


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


def random_array(rng, n, dtype, trailing=()):
    """Fresh random data of ``dtype`` (never zeros only), small enough values for float checks."""
    dtype = np.dtype(dtype)
    shape = (n,) + tuple(trailing)
    if dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -100), min(info.max, 100), shape, endpoint=True).astype(dtype)
    if dtype.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


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
                               rtol=float_rtol, atol=float_rtol * max(1.0, float(np.sqrt(expected.shape[0] or 1))),
                               equal_nan=True)


def block_counts(n, size):
    """Balanced split of n rows over size ranks (parts differ by at most one)."""
    base, extra = divmod(n, size)
    return [base + (1 if r < extra else 0) for r in range(size)]


def local_part(g, counts, rank):
    starts = np.concatenate([[0], np.cumsum(counts)]).astype(int)
    return g[starts[rank]:starts[rank + 1]]
