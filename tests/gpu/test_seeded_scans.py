"""Seeded extended scans (reverse and state scans from a rank's offset, ``backends/cuda/extended``):
the seed is a state struct passed by value in the launch's arguments, so seeded scans queued
back to back on one stream, without a synchronisation between them, each start from their own
seed although they share one argument block; a seed of many columns gives each column's launch
its own state; two streams keep their seeds apart.  Each result equals the CPU backend's scan
from the same seed.  Skipped without a GPU."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.devices import require_gpu

cp = require_gpu()
pytestmark = pytest.mark.gpu

from distscan.dist.plan import ScanPlan  # noqa: E402
from distscan.ops import derive, get_op  # noqa: E402

N = 50_003
BACK_TO_BACK = 24  # seeded launches queued behind each other with no wait between them


def _cases():
    s = get_op("sum")
    return {
        "reverse sum": (s, True, np.float64, 0),
        "segmented sum": (derive.segmented(s), False, np.int64, 1),
        "recurrence": (derive.affine(), False, np.float64, 2),
        "compensated": (derive.compensated(s), False, np.float32, 0),
    }


def _inputs(rng, dtype, aux, w=1):
    shape = (N,) if w == 1 else (N, w)
    x = rng.integers(-50, 50, shape).astype(dtype) if np.dtype(dtype).kind == "i" else \
        rng.standard_normal(shape).astype(dtype)
    if aux == 1:
        return x, (rng.random(N) < 0.01,)
    if aux == 2:
        return x, (rng.uniform(0.5, 1.0, shape).astype(dtype),)
    return x, ()


@pytest.mark.parametrize("name", list(_cases()))
def test_seeded_scans_back_to_back_start_from_their_own_seeds(name):
    """3 x BACK_TO_BACK seeded scans queued on one stream without a synchronisation between them
    (the argument block rewritten while earlier launches may still wait behind the earlier
    kernels), then each result against the CPU's scan from the same seed."""
    op, reverse, dtype, aux_kind = _cases()[name]
    rng = np.random.default_rng(11)
    x, aux = _inputs(rng, dtype, aux_kind)
    gpu_plan = ScanPlan(op, dtype, backend="cuda", reverse=reverse)
    cpu_plan = ScanPlan(op, dtype, backend="cpu", reverse=reverse)
    d_x, d_aux = cp.asarray(x), tuple(cp.asarray(a) for a in aux)
    seeds = [cpu_plan.local_carry(x[k * 997:(k + 1) * 997], tuple(a[k * 997:(k + 1) * 997] for a in aux))
             for k in range(3 * BACK_TO_BACK)]
    outs = [cp.empty(x.shape, gpu_plan.types.result) for _ in seeds]
    for seed, out in zip(seeds, outs):
        gpu_plan.seeded_scan(d_x, seed, out=out, aux=d_aux)
    cp.cuda.get_current_stream().synchronize()
    for k, (seed, out) in enumerate(zip(seeds, outs)):
        want, _ = cpu_plan.seeded_scan(x, seed, out=np.empty(x.shape, cpu_plan.types.result), aux=aux)
        got = cp.asnumpy(out)
        if np.dtype(dtype).kind == "i":
            np.testing.assert_array_equal(got, want, err_msg=f"{name}, seed {k}")
        else:
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3 * np.sqrt(N), err_msg=f"{name}, seed {k}")


def test_seeds_of_many_columns_and_two_streams():
    """A seed of many columns gives each column's launch its own state; scans on two streams, each
    queued behind a long one, keep their seeds apart."""
    op = derive.compensated(get_op("sum"))
    w = 131  # float64 (s, e) states: 16 bytes a column
    rng = np.random.default_rng(12)
    x = rng.standard_normal((2_000, w))
    gpu_plan = ScanPlan(op, np.float64, backend="cuda", trailing=(w,))
    cpu_plan = ScanPlan(op, np.float64, backend="cpu", trailing=(w,))
    seed = cpu_plan.local_carry(x[:500])
    out = cp.empty_like(cp.asarray(x))
    gpu_plan.seeded_scan(cp.asarray(x), seed, out=out)
    want, _ = cpu_plan.seeded_scan(x, seed, out=np.empty_like(x))
    np.testing.assert_allclose(cp.asnumpy(out), want, rtol=1e-12, atol=1e-9)

    op, big = derive.segmented(get_op("sum")), 1 << 22
    plan = ScanPlan(op, np.int64, backend="cuda")
    cpu = ScanPlan(op, np.int64, backend="cpu")
    xs = rng.integers(-9, 9, big)
    flags = rng.random(big) < 1e-4
    d_x, d_f = cp.asarray(xs), cp.asarray(flags)
    results = []
    for stream_seed in (1234567, -7654321):
        stream = cp.cuda.Stream(non_blocking=True)
        with stream:
            outs = []
            for k in range(BACK_TO_BACK + 2):
                seed = cpu.local_carry(np.array([stream_seed + k]), (np.array([True]),))
                out = cp.empty(big, np.int64)
                plan.seeded_scan(d_x, seed, out=out, aux=(d_f,))
                outs.append((seed, out))
        results.append((stream, outs))
    for stream, outs in results:
        stream.synchronize()
        for seed, out in outs:
            want, _ = cpu.seeded_scan(xs, seed, out=np.empty(big, np.int64), aux=(flags,))
            np.testing.assert_array_equal(cp.asnumpy(out), want)


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("name", list(_cases()))
def test_the_seeded_lean_scanner_gives_the_general_routes_bits(name, exclusive):
    """``seeded_state_scanner`` (a warm state part's seeded scan on many ranks: ``ScanPlan._seeded_lean``)
    gives ``extended.scan``'s bits from the same seed, into ``out`` or a new array, seeds back to
    back on one stream, with and without a seed; it hands back an
    empty part (None) and a call inside a capture without launching anything."""
    from distscan.backends import cuda as be

    op, reverse, dtype, aux_kind = _cases()[name]
    rng = np.random.default_rng(13)
    x, aux = _inputs(rng, dtype, aux_kind)
    plan = ScanPlan(op, dtype, backend="cuda", reverse=reverse, exclusive=exclusive)
    cpu_plan = ScanPlan(op, dtype, backend="cpu", reverse=reverse, exclusive=exclusive)
    scanner = be.seeded_state_scanner(plan.op, plan.types, exclusive, reverse, "auto")
    assert scanner is not None
    d_x, d_aux = cp.asarray(x), tuple(cp.asarray(a) for a in aux)
    seeds = [None] + [cpu_plan.local_carry(x[k * 997:(k + 1) * 997], tuple(a[k * 997:(k + 1) * 997] for a in aux))
                      for k in range(BACK_TO_BACK + 3)]
    got = [scanner(d_x, None if k % 2 else cp.full(N, 7, plan.types.result), d_aux, seed)
           for k, seed in enumerate(seeds)]
    for seed, out in zip(seeds, got):
        want, _ = plan.seeded_scan(d_x, seed, out=cp.empty(N, plan.types.result), aux=d_aux)
        np.testing.assert_array_equal(cp.asnumpy(out), cp.asnumpy(want))
    assert scanner(d_x[:0], None, tuple(a[:0] for a in d_aux), seeds[1]) is None
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        try:
            assert scanner(d_x, None, d_aux, seeds[1]) is None
        finally:
            stream.end_capture()
