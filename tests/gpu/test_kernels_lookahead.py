"""The look-ahead kernel (kernels/agent/agent_lookahead.cuh; skipped without a GPU).

It combines tiles with the same status words and fixed trees as the look-back kernel, so for
every dtype and operator its results must be *bitwise* the look-back's at the same tile shape
(floats included), and integers exact against NumPy.  Sizes sit on the boundaries that matter
to a persistent grid: one tile +- 1, one round of the grid +- 1, DEPTH rounds (the first
scans) +- 1, and several rounds; and the window words published 1 and DEPTH iterations after a
tile's reduction (BEHIND's bounds).  Also: "auto" switching to it at lookahead_min_bytes() (through
the API's hot path too), the tile counter's accounting across launches of both kernels,
unaligned data (synchronous loads), run-to-run determinism while another stream races, and
64-bit indexing past 2^31 and 2^32 items."""

from __future__ import annotations

import contextlib
import dataclasses
import itertools

import numpy as np
import pytest

from tests.support.devices import require_gpu

cp = require_gpu()
pytestmark = pytest.mark.gpu

from distscan._dtypes import scan_types  # noqa: E402
from distscan.backends.cuda import compile as cc  # noqa: E402
from distscan.backends import cuda as gpu  # noqa: E402
from distscan.ops import OPS, affine  # noqa: E402
from tests.support.kernel_cases import (TABLE, TABLE_IDS, as_bytes, assert_bitwise_lookback,  # noqa: E402
                                        assert_deterministic_while_racing, assert_int8_sum_is_lookback, kernel_data)
from tests.support.seeds import seeded_rng  # noqa: E402



def _lookahead_shape(t):
    """The look-ahead kernel's default shape on this GPU (it depends on its DRAM bandwidth)."""
    return gpu.tuning(t.input, t, "lookahead", default=True)


# (operator, dtype) of the publication-distance test
BEHIND_CASES = [("sum", np.int32), ("sum", np.float64), ("max", np.int64)]


@pytest.fixture
def same_shape():
    """Run the look-back reference at the look-ahead kernel's tile shape (restored after)."""
    with contextlib.ExitStack() as stack:
        yield lambda t: stack.enter_context(gpu.overrides(tuning=_lookahead_shape(t)))


@pytest.fixture(scope="module", autouse=True)
def _precompiled():
    keys = []
    for name, dt in TABLE:
        op = OPS[name]
        t = scan_types(op, dt)
        keys.append(gpu.module_key(t.input, t, op, "lookahead"))
        with gpu.overrides(tuning=_lookahead_shape(t)):
            keys += [gpu.module_key(t.input, t, op, alg) for alg in ("lookahead", "lookback")]
    for dt in (np.int8, np.float32):
        t = scan_types(OPS["sum"], np.dtype(dt), np.dtype(dt))
        keys += [gpu.module_key(t.input, t, OPS["sum"], alg) for alg in ("lookahead", "lookback", "auto")]
    for name, dt in BEHIND_CASES:
        t = scan_types(OPS[name], dt)
        base = _lookahead_shape(t)
        for behind in (1, base.depth):
            with gpu.overrides(tuning=dataclasses.replace(base, behind=behind)):
                keys += [gpu.module_key(t.input, t, OPS[name], alg) for alg in ("lookahead", "lookback")]
    cc.precompile(keys)
    yield


def _plan(op, t, algorithm="lookahead"):
    return gpu.plans.plan_of(cp.cuda.Device().id, t.input, t, op, algorithm)


@pytest.mark.parametrize("name,dt", TABLE, ids=TABLE_IDS)
def test_lookahead_is_bitwise_lookback(name, dt, same_shape):
    rng = seeded_rng()
    op = OPS[name]
    t = scan_types(op, dt)
    same_shape(t)
    plan = _plan(op, t)
    tile, grid, depth = plan.tile, plan.la_grid, plan.tuning.depth
    assert grid >= 1 and plan.tuning == _lookahead_shape(t)
    sizes = [1, tile - 1, tile + 1, grid * tile - 1, grid * tile + 1, depth * grid * tile - 1,
             depth * grid * tile + 1, (plan.tuning.stages + 2) * grid * tile + tile // 3]
    for i, n in enumerate(sizes):
        assert_bitwise_lookback(rng, op, t, dt, n, i, "lookahead", f"{name} {dt}")


@pytest.mark.parametrize("behind", ["one", "depth"])
@pytest.mark.parametrize("name,dt", BEHIND_CASES)
def test_publication_distance_bounds(name, dt, behind, same_shape):
    """The window words published 1 iteration after a tile's reduction, and DEPTH iterations
    after it (the last iteration before a block's loop ends): bitwise the look-back, with sizes
    that end a block's run of tiles at a window's or sub-window's last tile."""
    rng = seeded_rng()
    op = OPS[name]
    t = scan_types(op, dt)
    base = _lookahead_shape(t)
    shape = dataclasses.replace(base, behind=1 if behind == "one" else base.depth)
    with gpu.overrides(tuning=shape):
        plan = _plan(op, t)
        assert plan.tuning == shape
        tile, grid, window = plan.tile, plan.la_grid, plan.window
        sizes = [32 * tile, 32 * tile + 1, window * tile, window * tile - 1, (grid + 31) * tile,
                 (shape.depth + 1) * grid * tile + 32 * tile - 3, 3 * window * tile + 5]
        for i, n in enumerate(sizes):
            assert_bitwise_lookback(rng, op, t, np.dtype(dt), n, i, "lookahead", f"{name} {dt} behind={shape.behind}")


@pytest.mark.parametrize("dt,out_dt", [(np.int8, np.int8), (np.float32, np.float32), (np.int64, np.int64),
                                       (np.int32, np.int64), (np.float64, np.float32)])
def test_auto_switches_at_the_threshold(dt, out_dt):
    """Below lookahead_min_bytes() moved (2^26, or 2^25 where input or output items have 8 bytes)
    "auto" is the look-back (with its lead), from it the look-ahead kernel, bitwise, through the
    backend and through the API's hot path with out=."""
    import distscan

    rng = seeded_rng()
    op = OPS["sum"]
    t = scan_types(op, np.dtype(dt), np.dtype(out_dt))
    sizes = np.dtype(dt).itemsize, np.dtype(out_dt).itemsize
    assert gpu.lookahead_min_bytes(*sizes) == (1 << 25 if max(sizes) >= 8 else 1 << 26)
    edge = -(-gpu.lookahead_min_bytes(*sizes) // sum(sizes))  # the first size that uses it
    assert gpu.uses_lookahead(edge, *sizes)
    assert not gpu.uses_lookahead(edge - 1, *sizes)
    for n in (edge - 1, edge, edge + 12345):
        x = cp.asarray(kernel_data(rng, np.dtype(dt), n))
        want = gpu.scan(x, op, t, algorithm="lookahead" if n >= edge else "auto")[0]
        got = gpu.scan(x, op, t)[0]
        np.testing.assert_array_equal(as_bytes(got), as_bytes(want), err_msg=f"n={n}")
        out = cp.empty_like(want)
        for _ in range(2):  # the hot path's first call builds its entry, the second reuses it
            out.fill(0)
            distscan.cumsum(x, dtype=t.result, out=out)
            np.testing.assert_array_equal(as_bytes(out), as_bytes(want), err_msg=f"n={n} api")
        if dt == np.int8:
            np.testing.assert_array_equal(cp.asnumpy(got), np.cumsum(cp.asnumpy(x), dtype=np.int8))
    lead_plan = _plan(op, t, "auto")
    assert gpu.plans.large_plan(lead_plan).device == "lookahead" and lead_plan.device == "lookback"


def test_counter_accounting_across_kernels():
    """Persistent launches claim num_tiles + grid ids; interleaved with one-block-per-tile
    launches on the same stream (one tile counter), every result must still be right."""
    rng = seeded_rng()
    op = OPS["sum"]
    t = scan_types(op, np.int64)
    plan = _plan(op, t)
    sizes = [(1 << 22) + 12345, 1000, plan.tile * plan.la_grid * 3 + 1, 1, 1 << 22, 77777]
    for rep in range(3):
        for i, n in enumerate(sizes):
            x = rng.integers(-(1 << 40), 1 << 40, n)
            algorithm = ("lookahead", "auto", "lookback")[(i + rep) % 3]
            got, total = gpu.scan(cp.asarray(x), op, t, want_total=True, exclusive=bool(rep % 2), algorithm=algorithm)
            want = np.cumsum(x)
            if rep % 2:
                want = np.concatenate([[0], want[:-1]])
            np.testing.assert_array_equal(cp.asnumpy(got), want)
            assert total[0] == x.sum()


@pytest.mark.parametrize("dt", [np.int32, np.float64, np.int16])
def test_unaligned_data(dt):
    rng = seeded_rng()
    op = OPS["max"]
    t = scan_types(op, dt)
    n = _plan(op, t).tile * 37 + 5
    base = cp.asarray(kernel_data(rng, np.dtype(dt), n + 3))
    x = base[1:n + 1]
    out = cp.empty(n + 1, t.result)[1:]
    got, _ = gpu.scan(x, op, t, out=out, algorithm="lookahead")
    np.testing.assert_array_equal(cp.asnumpy(got), np.maximum.accumulate(cp.asnumpy(x)))


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.complex64])
def test_determinism_while_another_stream_races(dt, same_shape):
    rng = seeded_rng()
    op = OPS["sum"]
    t = scan_types(op, dt)
    same_shape(t)
    n = (1 << 24) + 1001
    x = cp.asarray(rng.standard_normal(n).astype(dt))
    assert_deterministic_while_racing(lambda: gpu.scan(x, op, t, algorithm="lookahead")[0],
                                      lambda: gpu.scan(x, op, t, algorithm="lookback")[0])


@pytest.mark.parametrize("n", [(1 << 31) - 1, (1 << 31) + 1, (1 << 32) + 1])
def test_64_bit_indexing_both_kernels(n):
    """int8 sums past 2^31 and 2^32 items: look-ahead equals look-back."""
    assert_int8_sum_is_lookback(n, n % 997, "lookahead")


def _occupancy_calls(rng):
    """{name: call(algorithm)}: one small call of each kind whose tile shape, ring and static
    shared memory differ (plain scans by item size, run states, segmented and affine states)."""
    import distscan
    from tests.support.ranks import SELF

    n = 5000
    x = {dt: cp.asarray(kernel_data(rng, np.dtype(dt), n)) for dt in
         (np.int8, np.int32, np.int64, np.float32, np.float64, np.complex64, np.complex128)}
    flags = cp.asarray(rng.random(n) < 0.01)
    calls = {f"cumsum {np.dtype(dt).name}": lambda alg, v=v: distscan.cumsum(v, algorithm=alg, comm=SELF)
             for dt, v in x.items()}
    calls["max float32"] = lambda alg: distscan.scan(x[np.float32], "max", algorithm=alg, comm=SELF)
    for dt in (np.float32, np.float64, np.complex64, np.complex128):
        v = x[dt]
        name = np.dtype(dt).name
        calls[f"compensated {name}"] = lambda alg, v=v: distscan.cumsum(v, compensated=True, algorithm=alg, comm=SELF)
        calls[f"segmented {name}"] = lambda alg, v=v: distscan.cumsum(v, segments=flags, algorithm=alg, comm=SELF)
        calls[f"recurrence {name}"] = lambda alg, v=v: distscan.linear_recurrence(v * 0.5, v, algorithm=alg, comm=SELF)
        calls[f"recurrence {name}, one a"] = lambda alg, v=v: distscan.linear_recurrence(
            v.dtype.type(0.5), v, algorithm=alg, comm=SELF)
        calls[f"segmented recurrence {name}"] = lambda alg, v=v: distscan.linear_recurrence(
            v * 0.5, v, segments=flags, algorithm=alg, comm=SELF)
    for dt in (np.float32, np.float64):
        calls[f"logaddexp {np.dtype(dt).name}"] = lambda alg, v=x[dt]: distscan.scan(v, np.logaddexp, algorithm=alg,
                                                                                    comm=SELF)
    calls["segmented int64"] = lambda alg: distscan.cumsum(x[np.int64], segments=flags, algorithm=alg, comm=SELF)
    calls["gcd int64"] = lambda alg: distscan.scan(x[np.int64], np.gcd, algorithm=alg, comm=SELF)
    return calls


def _blocks_an_sm(plan, role: str) -> int:
    """The driver's count of ``plan``'s kernel ``role`` resident on one SM, with its launch's
    threads and dynamic shared memory (the look-ahead's ring; none for the look-back)."""
    fn = plan.funcs[role]
    return int(cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(fn.kernel.ptr, plan.threads, plan.la_smem))


def test_every_plan_runs_the_blocks_an_sm_its_shape_was_tuned_for():
    """A tile shape's ``min_blocks`` (tuning.choose_tuning) is the count of blocks an SM it was
    measured at: the kernels' launch bounds cap the registers for it, and the look-ahead's rings
    were sized so that that many fit an SM's shared memory.  The kernel's static shared memory
    (the look-ahead's RESCAN slots, the block scans' storage) sits beside them; where it grows past
    the room left, the driver runs fewer blocks than the shape was measured with, silently (the
    compensated complex128 sum's look-ahead after 54ad7eb: one where two were tuned, 1.62x slower;
    benchmarks/RESULTS.md, "Run states keep the look-ahead's blocks an SM").  For
    one call of each kind, on both kernels, every plan built runs at least that many, its
    exclusive and inclusive kernels alike.  A look-ahead ring the GPU cannot hold at all is
    refused with the plans' error, and "auto" does not take that kernel for it at any size.

    The look-ahead's persistent grid is its inclusive kernel's blocks an SM (plans.lookahead_grid),
    launched for the exclusive kernel too: where that one fits fewer, a part of the grid waits
    and the scan runs on fewer blocks (the exclusive segmented float32 sum, 139 registers where
    its inclusive kernel took 115: two blocks an SM against three, 0.82x the inclusive's speed on
    the H200 until its shape asked for three; benchmarks/RESULTS.md, "Exclusive segmented scans").
    So both kernels of a look-ahead plan run the same count."""
    from distscan.backends.cuda import extended

    rng = seeded_rng()
    gpu.plans.PLANS.clear()
    extended.EXT_PLANS.clear()
    refused = []
    for name, call in _occupancy_calls(rng).items():
        for alg in ("lookahead", "lookback"):
            try:
                call(alg)
            except RuntimeError as exc:
                assert alg == "lookahead" and "more than GPU" in str(exc), f"{name} {alg}: {exc}"
                refused.append(name)
    plans = [*gpu.plans.PLANS.values(), *extended.EXT_PLANS.values()]
    assert sum(p.device == "lookahead" for p in plans) >= 20 and sum(p.device == "lookback" for p in plans) >= 20
    sms = gpu.plans.device_info(cp.cuda.Device().id)["sms"]
    short = []
    for p in plans:
        roles = [r for r in ("scan_incl", "scan_excl", "ext_incl", "ext_excl") if r in p.funcs]
        blocks = [_blocks_an_sm(p, r) for r in roles]  # the driver's count, asked once a kernel
        runs = min(blocks)
        if p.device == "lookahead":
            assert p.la_grid == blocks[0] * sms
            if len(set(blocks)) > 1:
                short.append(f"lookahead {p.kacc} tile {p.threads}x{p.tuning.items}: blocks an SM {blocks} for "
                             f"{roles} ({[p.funcs[r].attributes['num_regs'] for r in roles]} registers)")
        if runs < p.tuning.min_blocks:
            fn = p.funcs[roles[0]]
            short.append(f"{p.device} {p.kacc} tile {p.threads}x{p.tuning.items}: {runs} of {p.tuning.min_blocks} "
                         f"(static {fn.attributes['shared_size_bytes']} B, ring {p.la_smem} B, "
                         f"{fn.attributes['num_regs']} registers)")
    assert not short, "\n".join(short)
    for name in refused:  # the complex128 maps' rings alone may not fit; "auto" keeps the look-back for them
        assert name.startswith(("recurrence complex128", "segmented recurrence complex128")), name
        op = affine(segments=name.startswith("segmented"))
        for mode, fast in itertools.product(cc.COEF_MODES, (False, True)):
            assert gpu.plans.ext_device(op, "auto", 1 << 32, 16, 16, "c", mode, fast_dram=fast) == "lookback"
