"""GPU tests of the CUDA backend and of the API on GPU arrays (skipped without a GPU).

Every dtype x operator (default result dtype) x inclusive/exclusive at sizes around the
warp and tile boundaries and 10^6+7, seeded and unseeded, against the CPU backend
(NumPy) with the same dtype rules: integers, bools, max/min and the logical and bitwise
operators must match exactly; float sums and products must lie within the bound stated
in distscan/backends/cuda (``error_depth``) against a float64 (complex128) reference.  Outputs are
poisoned before every call; inputs are fresh random data.  Large sizes (2^28+3, 2^31+-1,
2^32+1) are checked on the device through the scan recurrence.
"""

from __future__ import annotations

import numpy as np
import pytest

from distscan._dtypes import scan_types
from distscan.backends import cpu as cpu_backend
from distscan.ops import OPS, get_op

from tests.support.devices import require_gpu
from tests.support.reference import reference_scan

cp = require_gpu()
pytestmark = pytest.mark.gpu

from distscan.backends.cuda import compile as cc  # noqa: E402
from distscan.backends import cuda as gpu  # noqa: E402

DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64,
          np.float16, np.float32, np.float64, np.complex64, np.complex128]
CASES = [(np.dtype(dt), op) for dt in DTYPES for op in OPS.values() if np.dtype(dt).kind in op.kinds]


def _tile(dtype, op):
    t = scan_types(op, dtype)
    return cc.choose_tuning(t.input, cc.kernel_acc_dtype(t.acc), t.result, gpu.SETTINGS.tuning).tile_items


@pytest.fixture(scope="module", autouse=True)
def _precompiled():
    """Compile every module this file needs in parallel processes (CuPy disk cache)."""
    keys = [gpu.module_key(dt, scan_types(op, dt), op) for dt, op in CASES]
    keys += [gpu.module_key(np.dtype(np.int8), scan_types(get_op("sum"), np.int8, np.int32), get_op("sum")),
             gpu.module_key(np.dtype(np.int8), scan_types(get_op("sum"), np.int8, np.int8), get_op("sum"))]
    cc.precompile(keys)
    yield


def _random(rng, dtype, n, op):
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.random(n) < 0.5 if op.name != "logical_and" else rng.random(n) < 0.999
    if op.logical:  # many zeros (and NaN for floats) to exercise truth values
        v = rng.integers(0, 3, n).astype(dt) if dt.kind != "f" else rng.choice([0.0, 1.5, -2.0, np.nan], n).astype(dt)
        if op.name == "logical_and" and n:
            v[rng.random(n) < 0.999] = 1  # long runs of True
        return v
    if dt.kind in "iu":
        info = np.iinfo(dt)
        if op.name == "prod":  # odd factors: products stay non-zero modulo 2^bits
            return (rng.integers(0, 8, n) * 2 + 1).astype(dt) * (rng.choice([1, -1], n).astype(dt) if dt.kind == "i" else dt.type(1))
        return rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    if dt.kind == "f":
        if op.name == "prod":
            return (rng.choice([1.0, -1.0], n) * np.exp(rng.normal(0, 1 / np.sqrt(max(n, 1)), n))).astype(dt)
        v = rng.normal(0, 1, n).astype(dt)
        if op.name in ("max", "min") and n > 100:
            v[rng.integers(0, n, 2)] = np.nan
        return v
    # complex
    if op.name == "prod":
        ang = rng.uniform(-np.pi, np.pi, n)
        mag = np.exp(rng.normal(0, 1 / np.sqrt(max(n, 1)), n))
        return (mag * np.exp(1j * ang)).astype(dt)
    return (rng.normal(0, 1, n) + 1j * rng.normal(0, 1, n)).astype(dt)


def _poisoned(shape, dtype):
    out = cp.empty(shape, dtype=dtype)
    out.view(cp.uint8).fill(0xA5)
    return out


def _check(got, x, op, types, exclusive, seed, n):
    """Compare a GPU result (host copy) with the reference."""
    ref, _ = cpu_backend.scan(x, op, types, exclusive=exclusive, seed=seed)
    kind = types.acc.kind
    if kind not in "fc" or op.name in ("max", "min") or op.logical:
        np.testing.assert_array_equal(got, ref)
        return
    # float/complex sum or prod: bound against a float64/complex128 reference
    wide = np.complex128 if kind == "c" else np.float64
    inclusive = reference_scan(x, op, initial=seed, types=types, acc=wide)  # seed op x[0] op ... op x[i]
    exact = reference_scan(x, op, exclusive=True, initial=seed, types=types, acc=wide) if exclusive else inclusive
    u = np.finfo(types.acc).eps / 2
    if op.name == "sum":
        scale = reference_scan(np.abs(x.astype(wide)), "sum", initial=None if seed is None else np.abs(np.asarray(seed, wide)),
                               acc=np.float64)
        depth = gpu.error_depth(n, types.input, types)
        tol = (depth + 2) * u * scale
    else:
        idx = np.arange(1, inclusive.shape[0] + 1).reshape(-1, 1) + (seed is not None)  # factors so far, the seed's too
        tol = 4 * (idx + 2) * u * np.abs(inclusive)
    if exclusive:
        tol = np.concatenate([np.zeros_like(tol[:1]), tol[:-1]])
    if types.result.itemsize < types.acc.itemsize:  # float16 output: one more rounding
        tol = tol + np.finfo(types.result).eps * np.abs(exact)
    err = np.abs(got.astype(wide) - exact)
    bad = ~(err <= tol)
    assert not bad.any(), f"{bad.sum()} elements outside the bound; first at {np.argwhere(bad)[0]}: got {got[bad][0]}, exact {exact[bad][0]}, tol {tol[bad][0]}"


@pytest.mark.parametrize("dtype,op", CASES, ids=[f"{dt.name}-{op.name}" for dt, op in CASES])
def test_scan_matrix(dtype, op, rng):
    types = scan_types(op, dtype)
    tile = _tile(dtype, op)
    for n in (0, 1, 31, 32, 33, tile - 1, tile, tile + 1, 10**6 + 7):
        for exclusive in (False, True):
            for seeded in (False, True):
                x = _random(rng, dtype, n, op).reshape(n, 1)
                seed = None
                if seeded:
                    seed = _random(rng, types.acc, 1, op).astype(types.acc)
                    if types.acc.kind == "f" and np.isnan(seed).any():
                        seed = np.zeros(1, types.acc)
                out = _poisoned((n, 1), types.result)
                res, total = gpu.scan(cp.asarray(x), op, types, exclusive=exclusive, seed=seed, out=out,
                                      want_total=True)
                assert res is out
                _check(cp.asnumpy(res), x, op, types, exclusive, seed, n)
                # total: seed op x[0] op ... op x[n-1], from the accumulator
                _, ref_total = cpu_backend.scan(x, op, types, exclusive=False, seed=seed, want_total=True)
                assert total.dtype == types.acc and total.shape == (1,)
                if types.acc.kind in "fc" and op.name in ("sum", "prod"):
                    scale = np.abs(x.astype(np.complex128)).sum() + (np.abs(seed).sum() if seed is not None else 0)
                    if op.name == "sum":
                        tol = (gpu.error_depth(n, types.input, types) + 2) * np.finfo(types.acc).eps * scale
                    else:
                        tol = 4 * (n + 2) * np.finfo(types.acc).eps * max(abs(complex(ref_total[0])), 1e-30)
                    assert abs(complex(total[0]) - complex(ref_total[0])) <= tol
                else:
                    np.testing.assert_array_equal(total, ref_total)
        # reduce and combine at the largest size
        x = _random(rng, dtype, n, op).reshape(n, 1)
        red = gpu.reduce(cp.asarray(x), op, types)
        ref = cpu_backend.reduce(x, op, types)
        if types.acc.kind in "fc" and op.name in ("sum", "prod"):
            np.testing.assert_allclose(red.astype(np.complex128), ref.astype(np.complex128), rtol=1e-3, atol=1e-3 * np.abs(x.astype(np.complex128)).sum())
        else:
            np.testing.assert_array_equal(red, ref)
        y = _random(rng, types.result, n, op).reshape(n, 1).astype(types.result)
        off = _random(rng, types.acc, 1, op).astype(types.acc)
        if types.acc.kind == "f":
            off = np.nan_to_num(off)
        yd = cp.asarray(y)
        gpu.combine(yd, op, types, off)
        y_ref = y.copy()
        cpu_backend.combine(y_ref, op, types, off)
        if types.acc.kind in "fc" and op.name in ("sum", "prod"):
            # one operation per element: within a few units of the result dtype's roundoff
            # (the GPU may fuse complex products into FMAs; float16 rounds once more)
            tol = 4 * np.finfo(types.result).eps
            np.testing.assert_allclose(cp.asnumpy(yd).astype(np.complex128), y_ref.astype(np.complex128), rtol=tol,
                                       atol=tol * (np.abs(off.astype(np.complex128)).max() + np.abs(y.astype(np.complex128)).max(initial=0)))
        else:
            np.testing.assert_array_equal(cp.asnumpy(yd), y_ref)


@pytest.mark.parametrize("w", [2, 5, 33, 300])
@pytest.mark.parametrize("opname,dtype", [("sum", np.int32), ("max", np.float32), ("bitwise_xor", np.uint16)])
def test_columns(w, opname, dtype, rng):
    op = get_op(opname)
    types = scan_types(op, dtype)
    for n in (0, 1, 1000, 70001):
        for exclusive in (False, True):
            x = _random(rng, dtype, n * w, op).reshape(n, w)
            seed = _random(rng, types.acc, w, op).astype(types.acc)
            if types.acc.kind == "f":
                seed = np.nan_to_num(seed)
            out = _poisoned((n, w), types.result)
            res, total = gpu.scan(cp.asarray(x), op, types, exclusive=exclusive, seed=seed, out=out, want_total=True)
            ref, ref_total = cpu_backend.scan(x, op, types, exclusive=exclusive, seed=seed, want_total=True)
            np.testing.assert_array_equal(cp.asnumpy(res), ref)
            np.testing.assert_array_equal(total, ref_total)
            np.testing.assert_array_equal(gpu.reduce(cp.asarray(x), op, types), cpu_backend.reduce(x, op, types))


def test_noncontiguous_and_misaligned(rng):
    op = get_op("sum")
    types = scan_types(op, np.float32)
    base = cp.asarray(rng.normal(size=3 * 100003).astype(np.float32))
    for x in (base[1:100001], base[::3]):  # misaligned start; strided
        res, _ = gpu.scan(x.reshape(-1, 1), op, types)
        ref = np.cumsum(cp.asnumpy(x).astype(np.float64))
        assert np.allclose(cp.asnumpy(res).ravel(), ref, rtol=1e-4, atol=1e-3)
    types = scan_types(op, np.int32)
    xi = cp.asarray(rng.integers(-1000, 1000, 50001, dtype=np.int32))
    res, _ = gpu.scan(xi[3:].reshape(-1, 1), op, types)
    np.testing.assert_array_equal(cp.asnumpy(res).ravel(), np.cumsum(cp.asnumpy(xi[3:])))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.float16])
def test_float_determinism(dtype, rng):
    """Same input, many runs (some racing a copy on another stream) -> bitwise identical."""
    op = get_op("sum")
    types = scan_types(op, dtype)
    n = (1 << 24) + 5
    x = cp.asarray(_random(rng, dtype, n, op).reshape(n, 1))
    first, t0 = gpu.scan(x, op, types, want_total=True)
    first = first.copy()
    junk = cp.empty(1 << 28, dtype=cp.uint8)
    side = cp.cuda.Stream(non_blocking=True)
    for i in range(8):
        if i % 2:
            with side:
                junk.fill(i)  # competes for bandwidth: changes which tiles finish first
        out = _poisoned((n, 1), types.result)
        res, t = gpu.scan(x, op, types, out=out, want_total=True)
        assert cp.array_equal(res.view(cp.uint8), first.view(cp.uint8)), f"run {i} differs"
        assert t.tobytes() == t0.tobytes()
    for excl in (True,):
        a, _ = gpu.scan(x, op, types, exclusive=excl, seed=np.ones(1, types.acc))
        b, _ = gpu.scan(x, op, types, exclusive=excl, seed=np.ones(1, types.acc))
        assert cp.array_equal(a.view(cp.uint8), b.view(cp.uint8))
    side.synchronize()


def _recurrence_ok(x, out, step, first, exclusive, chunk=1 << 28):
    """out[0] == first and out[i] == step(out[i-1], x[i] or x[i-1]) for all i, chunk by chunk on the device."""
    n = x.shape[0]
    if not bool((out[0] == first).all()):
        return False
    for s in range(1, n, chunk):
        e = min(n, s + chunk)
        xs = x[s - 1:e - 1] if exclusive else x[s:e]
        if not bool(cp.all(out[s:e] == step(out[s - 1:e - 1], xs))):
            return False
    return True


def _fill_random_int8(n, seed):
    x = cp.empty(n, dtype=cp.int8)
    rs = cp.random.RandomState(seed)
    for s in range(0, n, 1 << 30):
        e = min(n, s + (1 << 30))
        x[s:e] = rs.randint(-128, 128, e - s, dtype=cp.int8)
    return x


@pytest.mark.parametrize("n", [(1 << 28) + 3, (1 << 31) - 1, (1 << 31) + 1, (1 << 32) + 1])
def test_huge_int8(n):
    """64-bit indexing: int8 max (inclusive) and int8 sum with dtype=int8 (exclusive, seeded)."""
    x = _fill_random_int8(n, n % 1000)
    op = get_op("max")
    types = scan_types(op, np.int8)
    out = cp.empty(n, dtype=cp.int8)
    out.fill(-77)
    res, total = gpu.scan(x.reshape(-1, 1), op, types, out=out.reshape(-1, 1), want_total=True)
    assert _recurrence_ok(x, out, cp.maximum, x[0], False)
    assert total[0] == out[-1].get()
    del res
    op = get_op("sum")
    types = scan_types(op, np.int8, np.int8)
    seed = np.array([-5], np.int8)
    out.fill(77)
    gpu.scan(x.reshape(-1, 1), op, types, exclusive=True, seed=seed, out=out.reshape(-1, 1))
    assert _recurrence_ok(x, out, lambda a, b: a + b, cp.int8(-5), True)
    red = gpu.reduce(x.reshape(-1, 1), op, types)
    assert red[0] == np.int8(int(cp.sum(x, dtype=cp.int64).get()) & 0xFF if int(cp.sum(x, dtype=cp.int64).get()) & 0xFF < 128 else (int(cp.sum(x, dtype=cp.int64).get()) & 0xFF) - 256)


def test_huge_int8_to_int32():
    n = (1 << 31) + 1
    x = _fill_random_int8(n, 7)
    op = get_op("sum")
    types = scan_types(op, np.int8, np.int32)
    out = cp.empty(n, dtype=cp.int32)
    out.fill(12345)
    _, total = gpu.scan(x.reshape(-1, 1), op, types, out=out.reshape(-1, 1), want_total=True)
    assert _recurrence_ok(x, out, lambda a, b: a + b.astype(cp.int32), x[0].astype(cp.int32), False)
    assert total[0] == out[-1].get()


@pytest.mark.parametrize("dtype,opname,exclusive", [(np.int32, "sum", False), (np.float32, "sum", True),
                                                      (np.int64, "max", True), (np.float64, "sum", False)])
def test_big_2p28(dtype, opname, exclusive, rng):
    n = (1 << 28) + 3
    op = get_op(opname)
    types = scan_types(op, dtype)
    x = _random(rng, dtype, n, op).reshape(n, 1)
    seed = np.array([3], types.acc)
    out = _poisoned((n, 1), types.result)
    res, _ = gpu.scan(cp.asarray(x), op, types, exclusive=exclusive, seed=seed, out=out)
    _check(cp.asnumpy(res), x, op, types, exclusive, seed, n)


# --- through the public API (comm of size 1) ------------------------------------------
def _api():
    try:
        import distscan
        from mpi4py import MPI
    except Exception:  # noqa: BLE001
        pytest.skip("distscan.scan or mpi4py not available")
    if not hasattr(distscan, "scan"):
        pytest.skip("distscan.scan not available")
    return distscan, MPI.COMM_SELF


@pytest.mark.parametrize("opname,dtype", [("sum", np.int32), ("sum", np.float16), ("max", np.float64),
                                          ("logical_or", np.complex64), ("prod", np.int64)])
def test_api_cupy(opname, dtype, rng):
    distscan, comm = _api()
    op = get_op(opname)
    for n in (0, 5, 100003):
        x = _random(rng, dtype, n, op)
        for exclusive in (False, True):
            got = distscan.scan(cp.asarray(x), op=opname, exclusive=exclusive, comm=comm)
            assert isinstance(got, cp.ndarray)
            assert got.shape == x.shape
            ref = distscan.scan(x, op=opname, exclusive=exclusive, comm=comm, backend="cpu")
            if np.dtype(dtype).kind == "f" and opname == "sum":
                np.testing.assert_allclose(cp.asnumpy(got).astype(np.float64), ref.astype(np.float64), rtol=2e-3, atol=0.5)
            else:
                np.testing.assert_array_equal(cp.asnumpy(got), ref)


def test_api_initial_dtype_2d(rng):
    distscan, comm = _api()
    x = rng.integers(-100, 100, (1001, 3), dtype=np.int16)
    got = distscan.scan(cp.asarray(x), op="sum", dtype=np.int32, initial=7, exclusive=True, comm=comm)
    ref = distscan.scan(x, op="sum", dtype=np.int32, initial=7, exclusive=True, comm=comm)
    np.testing.assert_array_equal(cp.asnumpy(got), ref)


def test_api_torch():
    distscan, comm = _api()
    torch = pytest.importorskip("torch")
    x = torch.randint(-1000, 1000, (300001,), dtype=torch.int32, device="cuda")
    got = distscan.scan(x, op="sum", comm=comm)
    assert isinstance(got, torch.Tensor) and got.device == x.device
    ref = torch.cumsum(x, 0)
    assert torch.equal(got, ref)
    xs = torch.rand(200001, device="cuda")[::2]  # non-contiguous view
    got = distscan.scan(xs, op="max", comm=comm)
    assert torch.equal(got, torch.cummax(xs, 0).values)
    # CUDA-array-interface object without DLPack -> CuPy result
    class CAI:
        def __init__(self, a):
            self.__cuda_array_interface__ = a.__cuda_array_interface__
    a = cp.arange(1000, dtype=cp.int64)
    got = distscan.scan(CAI(a), op="sum", comm=comm)
    assert isinstance(got, cp.ndarray)
    np.testing.assert_array_equal(cp.asnumpy(got), np.cumsum(np.arange(1000)))


@pytest.mark.parametrize("shape", [(256, 0, 1024, 3), (128, 0, 64, 8), (64, 0, 32, 1)])
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32])
def test_tile_shapes(shape, dtype, rng):
    """The scan kernel at other tile shapes (template arguments) over more tiles than resident
    blocks, misaligned and partial tiles, back to back (tile counter and epochs across launches):
    exact for integers, bitwise equal between repeated runs for floats."""
    op = get_op("sum")
    types = scan_types(op, dtype)
    items = 32 if np.dtype(dtype).itemsize == 4 else 16
    with gpu.overrides(tuning=(shape[0], items, shape[2], shape[3])):
        for n in (1, 8191, 8193, 3 * 8192 * 1024 + 77, (1 << 25) + 3):
            x = cp.asarray(_random(rng, dtype, n + 1, op))[1:]  # misaligned: scalar path
            for xx in (x, cp.ascontiguousarray(x)):
                out = _poisoned((n, 1), types.result)
                res, _ = gpu.scan(xx, op, types, out=out)
                ref = np.cumsum(cp.asnumpy(xx).astype(np.float64 if np.dtype(dtype).kind == "f" else dtype))
                again, _ = gpu.scan(xx, op, types)  # 1-D, no out: the backend's fast launch path
                assert again.shape == (n,)  # a backend returns the shape it was given
                assert cp.array_equal(res.view(cp.uint8).ravel(), again.view(cp.uint8).ravel())
                if np.dtype(dtype).kind == "f":
                    assert np.allclose(cp.asnumpy(res).ravel(), ref, rtol=1e-3, atol=1e-2 * np.sqrt(n))
                else:
                    np.testing.assert_array_equal(cp.asnumpy(res).ravel(), ref)
