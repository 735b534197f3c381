"""The look-ahead kernel (kernels/agent_lookahead.cuh; skipped without a GPU).

It combines tiles with the same status words and fixed trees as the look-back kernel, so for
every dtype and operator its results must be *bitwise* the look-back's (floats included), and
integers exact against NumPy.  Sizes sit on the boundaries that matter to a persistent grid:
one tile +- 1, one round of the grid +- 1, and several rounds.  Also: the tile counter's accounting across launches of both kernels,
unaligned data (synchronous loads), run-to-run determinism while another stream races, and
64-bit indexing past 2^31 and 2^32 items.
"""

from __future__ import annotations

import numpy as np
import pytest

from conftest import require_gpu

cp = require_gpu()
pytestmark = pytest.mark.gpu

from distscan._dtypes import scan_types  # noqa: E402
from distscan.backends import _cuda_compile as cc  # noqa: E402
from distscan.backends import cuda as gpu  # noqa: E402
from distscan.ops import OPS  # noqa: E402
from _kernel_cases import (TABLE, TABLE_IDS, assert_bitwise_lookback,  # noqa: E402
                           assert_deterministic_while_racing, assert_int8_sum_is_lookback, kernel_data, seeded_rng)



@pytest.fixture(scope="module", autouse=True)
def _precompiled():
    keys = []
    for name, dt in TABLE:
        op = OPS[name]
        t = scan_types(op, dt)
        keys += [gpu.module_key(t.input, t, op, alg) for alg in ("lookahead", "lookback")]
    t = scan_types(OPS["sum"], np.int8, np.int8)
    keys += [gpu.module_key(t.input, t, OPS["sum"], alg) for alg in ("lookahead", "lookback")]
    cc.precompile(keys)
    yield


def _plan(op, t, algorithm="lookahead"):
    return gpu._plan(cp.cuda.Device().id, t.input, t, op, algorithm)


@pytest.mark.parametrize("name,dt", TABLE, ids=TABLE_IDS)
def test_lookahead_is_bitwise_lookback(name, dt):
    rng = seeded_rng()
    op = OPS[name]
    t = scan_types(op, dt)
    plan = _plan(op, t)
    tile, grid = plan.tile, plan.la_grid
    assert grid >= 1
    sizes = [1, tile - 1, tile + 1, grid * tile - 1, grid * tile + 1, (cc.Tuning.stages + 2) * grid * tile + tile // 3]
    for i, n in enumerate(sizes):
        assert_bitwise_lookback(rng, op, t, dt, n, i, "lookahead", f"{name} {dt}")


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
def test_determinism_while_another_stream_races(dt):
    rng = seeded_rng()
    op = OPS["sum"]
    t = scan_types(op, dt)
    n = (1 << 24) + 1001
    x = cp.asarray(rng.standard_normal(n).astype(dt))
    assert_deterministic_while_racing(lambda: gpu.scan(x, op, t, algorithm="lookahead")[0],
                                      lambda: gpu.scan(x, op, t, algorithm="lookback")[0])


@pytest.mark.parametrize("n", [(1 << 31) - 1, (1 << 31) + 1, (1 << 32) + 1])
def test_64_bit_indexing_both_kernels(n):
    """int8 sums past 2^31 and 2^32 items: look-ahead equals look-back."""
    assert_int8_sum_is_lookback(n, n % 997, "lookahead")
