"""The look-back with its reduction ahead of its scan (kernels/agent/agent_scan.cuh, lead > 0; the
default for large N; skipped without a GPU).

The block of claim c reduces tile c and scans tile c - lead, from the same status words and
fixed trees as the one-tile look-back, so for every dtype and operator its results must be
*bitwise* the one-tile look-back's (floats included) and integers exact against NumPy.  The
lead is forced (``cuda.SETTINGS.lead``) so that small arrays cross every boundary: leads of
1 (reduction one claim ahead), 2, 31, 33 and several hundred; sizes of one tile +- 1, one
lead of tiles +- 1, sub-window (32 tiles) and window boundaries (a small window forced
through the tile shape, so windows and their anchors chain many times).  Also: the size
rule (no lead below LEAD_MIN_LEADS leads of tiles), the tile counter across launches with
and without a lead, unaligned data, determinism while another stream races, and 64-bit
indexing past 2^31 and 2^32 items at the default lead.
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

from tests.support.devices import require_gpu

cp = require_gpu()
pytestmark = pytest.mark.gpu

import distscan  # noqa: E402
from distscan._dtypes import scan_types  # noqa: E402
from distscan.backends.cuda import compile as cc  # noqa: E402
from distscan.backends import cuda as gpu  # noqa: E402
from distscan.ops import ALL_OPS, OPS  # noqa: E402
from tests.support.kernel_cases import (TABLE, TABLE_IDS, as_bytes, assert_bitwise_lookback,  # noqa: E402
                                        assert_deterministic_while_racing, assert_int8_sum_is_lookback, kernel_data)
from tests.support.seeds import seeded_rng  # noqa: E402

SMALL_WINDOW = 64  # tiles per window in the forced tile shape: anchors chain every 64 tiles


def _small_shape(t):
    """A tile shape of 64 threads and a 64-tile window (ITEMS raised to 16 bytes per lane)."""
    return cc.Tuning(64, 2, SMALL_WINDOW, 1)


@pytest.fixture(scope="module", autouse=True)
def _precompiled():
    keys = []
    for name, dt in TABLE:
        op = OPS[name]
        t = scan_types(op, dt)
        keys.append(gpu.module_key(t.input, t, op, "auto"))
        with gpu.overrides(tuning=_small_shape(t)):
            keys.append(gpu.module_key(t.input, t, op, "auto"))
    t = scan_types(OPS["sum"], np.int8, np.int8)
    keys.append(gpu.module_key(t.input, t, OPS["sum"], "auto"))
    cc.precompile(keys)
    yield


@pytest.fixture
def lead():
    """Force the reduction lead of "auto" for one test (restored after): ``lead(v)``."""
    with contextlib.ExitStack() as stack:
        yield lambda v: stack.enter_context(gpu.overrides(lead=v))


def _compare(rng, op, t, dt, n, i, label):
    """One scan with the forced lead against the one-tile look-back, bitwise (and NumPy for integers)."""
    x, ref, exclusive, seed, msg = assert_bitwise_lookback(rng, op, t, dt, n, i, "auto", label)
    # the same call through the single-call fast path (no seed, no total), bitwise too
    fast = cp.empty_like(ref)
    gpu.scan(x, op, t, exclusive=exclusive, out=fast, algorithm="auto")
    if seed is None:
        np.testing.assert_array_equal(as_bytes(fast), as_bytes(ref), err_msg=msg + " fast path")


@pytest.mark.parametrize("name,dt", TABLE, ids=TABLE_IDS)
def test_lead_is_bitwise_lookback(name, dt, lead):
    """Default tile shape (1024-tile windows): leads of 1, 2, 31 and 300 tiles."""
    rng = seeded_rng()
    op = OPS[name]
    t = scan_types(op, dt)
    tile = gpu.plans.plan_of(cp.cuda.Device().id, t.input, t, op, "auto").tile
    cases = [(1, 1), (1, tile - 1), (2, tile + 1), (31, 31 * tile + 1), (31, 33 * tile - 1), (300, 300 * tile - 1),
             (300, 301 * tile + 1), (2, 1100 * tile + tile // 3)]
    for i, (ahead, n) in enumerate(cases):
        lead(ahead)
        _compare(rng, op, t, dt, n, i, f"{name} {dt} lead={ahead}")


@pytest.mark.parametrize("name,dt", [c for c in TABLE if c[0] in ("sum", "prod", "max")],
                         ids=[f"{n}-{d.name}" for n, d in TABLE if n in ("sum", "prod", "max")])
def test_lead_many_windows(name, dt, lead):
    """64-thread tiles in 64-tile windows: anchors chain every 64 tiles; leads around a
    sub-window (31, 32, 33), a window (63, 65) and several windows (200)."""
    rng = seeded_rng()
    op = OPS[name]
    t = scan_types(op, dt)
    with gpu.overrides(tuning=_small_shape(t)):
        tile = gpu.plans.plan_of(cp.cuda.Device().id, t.input, t, op, "auto").tile
        for i, ahead in enumerate((1, 31, 32, 33, 63, 65, 200)):
            lead(ahead)
            for j, tiles in enumerate((ahead - 1, ahead + 1, SMALL_WINDOW - 1, SMALL_WINDOW + 1, 7 * SMALL_WINDOW + 5)):
                n = max(1, tiles * tile + (i * 7 + j) % tile)
                _compare(rng, op, t, dt, n, i + j, f"{name} {dt} lead={ahead} tiles={tiles}")


def test_size_rule():
    """No lead below LEAD_MIN_LEADS leads of tiles, the plan's lead from there; only "auto"
    plans of the look-back have one; the lead keeps its tiles within the L2 share."""
    op = OPS["sum"]
    dev = cp.cuda.Device().id
    for dt in (np.int8, np.int32, np.float64, np.complex128):
        t = scan_types(op, np.dtype(dt))
        plan = gpu.plans.plan_of(dev, t.input, t, op, "auto")
        assert plan.lead >= 1
        info = gpu.device.device_info(dev)
        if info["dram_bw"]:  # ~LEAD_SECONDS of DRAM traffic (H100: ~190 tiles of 64 KB)
            assert plan.lead <= max(1, round(gpu.plans.LEAD_SECONDS * info["dram_bw"]
                                             / (plan.tile * (plan.in_size + plan.out_size))))
        else:
            assert plan.lead <= max(1, round(info["sms"] * gpu.plans.LEAD_PER_SM))
        assert plan.lead * plan.tile * (2 * plan.in_size + plan.out_size) <= gpu.plans.LEAD_L2_SHARE * info["l2"] or plan.lead == 1
        edge = gpu.plans.LEAD_MIN_LEADS * plan.lead
        assert gpu.plans.lead_of(plan, edge - 1) == 0 and gpu.plans.lead_of(plan, edge) == plan.lead
        if dt == np.int32:  # (one dtype: each other algorithm is one more module to compile)
            for alg in ("lookback", "lookahead", "domino", "kogge_stone"):
                assert gpu.plans.plan_of(dev, t.input, t, op, alg).lead == 0


def test_costly_operators_take_the_plain_lookback():
    """"auto" scans logaddexp, logaddexp2, gcd and lcm with the look-back without a lead at every size (the
    look-ahead and the lead apply the operator a third time per item: plans.COSTLY_FUNCTORS), the
    reverse scans too; the sum keeps its look-ahead and lead.  Results of the sizes that took the
    look-ahead before (2^26 bytes moved and more) against NumPy's float64 accumulate."""
    dev = cp.cuda.Device().id
    for name, dt in (("logaddexp", np.float32), ("logaddexp2", np.float64), ("gcd", np.int64), ("lcm", np.int32)):
        op = ALL_OPS[name]
        t = scan_types(op, np.dtype(dt))
        plan = gpu.plans.plan_of(dev, t.input, t, op, "auto")
        assert gpu.plans.costly(op) and plan.lead == 0 and plan.large_key is None
        assert gpu.plans.large_plan(plan) is plan and plan.device == "lookback"
    total = scan_types(OPS["sum"], np.dtype(np.float32))
    assert not gpu.plans.costly(OPS["sum"])
    assert gpu.plans.plan_of(dev, total.input, total, OPS["sum"], "auto").large_key is not None
    rng = seeded_rng()
    n = (1 << 23) + 5  # 64 MiB moved in float32: the look-ahead's size before
    for dt, rtol in ((np.float32, 2e-5), (np.float64, 1e-12)):
        x = (rng.standard_normal(n) * 3).astype(dt)
        want = np.logaddexp.accumulate(x.astype(np.float64))
        want_rev = np.logaddexp.accumulate(x[::-1].astype(np.float64))[::-1]
        d = cp.asarray(x)
        got = cp.asnumpy(distscan.scan(d, np.logaddexp)).astype(np.float64)
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)
        got = cp.asnumpy(distscan.scan(d, np.logaddexp, reverse=True)).astype(np.float64)
        np.testing.assert_allclose(got, want_rev, rtol=rtol, atol=rtol)
        ext = [p for k, p in gpu.EXT_PLANS.items() if k[4] == "LogAddExp" and k[1] == np.dtype(dt)]
        assert ext and all(p.device == "lookback" and p.lead == 0 for p in ext)  # the reverse scan's plans
    g = (6 * rng.integers(1, 1000, n)).astype(np.int64)
    g[n // 2] = 4  # the running gcd falls from 6 to 2 half way
    np.testing.assert_array_equal(cp.asnumpy(distscan.scan(cp.asarray(g), np.gcd)), np.gcd.accumulate(g))


def test_counter_accounting_with_and_without_lead(lead):
    """Launches claiming num_tiles + lead ids, num_tiles ids and num_tiles + grid ids
    (look-ahead) interleaved on one stream (one tile counter): every result still right."""
    rng = seeded_rng()
    op = OPS["sum"]
    t = scan_types(op, np.int64)
    for rep in range(3):
        for i, n in enumerate([(1 << 22) + 12345, 1000, 4096 * 700 + 1, 1, 1 << 22, 77777]):
            x = rng.integers(-(1 << 40), 1 << 40, n)
            lead((None, 5, 0, 400)[(i + rep) % 4])
            algorithm = ("auto", "auto", "lookback", "lookahead")[(i + 2 * rep) % 4]
            got, total = gpu.scan(cp.asarray(x), op, t, want_total=True, exclusive=bool(rep % 2), algorithm=algorithm)
            want = np.cumsum(x)
            if rep % 2:
                want = np.concatenate([[0], want[:-1]])
            np.testing.assert_array_equal(cp.asnumpy(got), want, err_msg=f"n={n} {algorithm}")
            assert total[0] == x.sum()


@pytest.mark.parametrize("dt", [np.int32, np.float64, np.int16])
def test_unaligned_data(dt, lead):
    rng = seeded_rng()
    op = OPS["max"]
    t = scan_types(op, dt)
    n = gpu.plans.plan_of(cp.cuda.Device().id, t.input, t, op, "auto").tile * 37 + 5
    base = cp.asarray(kernel_data(rng, np.dtype(dt), n + 3))
    x = base[1:n + 1]
    out = cp.empty(n + 1, t.result)[1:]
    lead(9)
    got, _ = gpu.scan(x, op, t, out=out, algorithm="auto")
    np.testing.assert_array_equal(cp.asnumpy(got), np.maximum.accumulate(cp.asnumpy(x)))


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.complex64])
def test_determinism_while_another_stream_races(dt, lead):
    """At the default lead (2^24 + 1001 items is past the size rule; the lead forced, or "auto"
    would run the look-ahead kernel at this size): bitwise run to run and equal to the one-tile
    look-back while another stream competes for bandwidth."""
    rng = seeded_rng()
    op = OPS["sum"]
    t = scan_types(op, dt)
    n = (1 << 24) + 1001
    plan = gpu.plans.plan_of(cp.cuda.Device().id, t.input, t, op, "auto")
    assert gpu.plans.lead_of(plan, -(-n // plan.tile)) == plan.lead > 0
    lead(plan.lead)
    x = cp.asarray(rng.standard_normal(n).astype(dt))
    assert_deterministic_while_racing(lambda: gpu.scan(x, op, t)[0],
                                      lambda: gpu.scan(x, op, t, algorithm="lookback")[0])


@pytest.mark.parametrize("n", [(1 << 31) - 1, (1 << 31) + 1, (1 << 32) + 1])
def test_64_bit_indexing_default_lead(n, lead):
    """int8 sums past 2^31 and 2^32 items at the default lead equal the one-tile look-back (the
    lead forced, or "auto" would run the look-ahead kernel at these sizes)."""
    t = scan_types(OPS["sum"], np.int8, np.int8)
    plan = gpu.plans.plan_of(cp.cuda.Device().id, t.input, t, OPS["sum"], "auto")
    assert gpu.plans.lead_of(plan, -(-n // plan.tile)) == plan.lead > 0
    lead(plan.lead)
    assert_int8_sum_is_lookback(n, n % 991, "auto")
