"""The aligned-window look-back alone (CUB-style): a tiny kernel whose blocks each own one
tile with a random aggregate and ask tile_lookback for its exclusive prefix, over 1 ... 10^6
tiles.  Checks every prefix against NumPy, that the state needs no clearing between
launches (epochs, kept on the device with the tile counter), and the epoch's wrap."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.devices import require_gpu

cp = require_gpu()
pytestmark = pytest.mark.gpu

from distscan.backends.cuda.compile import kernels_dir  # noqa: E402

_SRC = r"""
#include "tile/tile_state.cuh"
template <typename T, int WINDOW>
__global__ void lookback_test(const T *d_aggs, T *d_excl, long long num_tiles, unsigned long long *d_words,
                              unsigned long long *d_subaggs, unsigned long long *d_anchors, unsigned long long *d_launch,
                              T seed, int has_seed, T *d_total) {
    __shared__ long long s_tile;
    distscan::TileState st = distscan::TileState::begin(d_words, d_subaggs, d_anchors, d_launch, gridDim.x);
    if (threadIdx.x == 0) s_tile = st.claim();
    __syncthreads();
    st.epoch = __shfl_sync(0xffffffffu, st.epoch, 0);
    long long tile = s_tile;
    T e = distscan::tile_lookback<T, distscan::Sum, WINDOW>(st, tile, num_tiles, d_aggs[tile], seed, has_seed != 0, d_total);
    if (threadIdx.x == 0) d_excl[tile] = e;
    st.retire();
}
"""


def launch_state(*arrays):
    """kernels/tile/tile_state.cuh's LaunchWord block for these status-word arrays (epoch 0 ended)."""
    state = np.zeros(8, np.uint64)
    state[3:6] = [a.size for a in arrays]
    return cp.asarray(state)


def status_words(tiles, k, window):
    """Zeroed status words (aggregates, sub-window and window words) for up to `tiles` tiles of
    k 64-bit words each, and their launch state."""
    words = cp.zeros(tiles * k + 64, dtype=cp.uint64)
    subaggs = cp.zeros((tiles // 32 + 2) * k, dtype=cp.uint64)
    anchors = cp.zeros((tiles // window + 2) * k, dtype=cp.uint64)
    return words, subaggs, anchors, launch_state(words, subaggs, anchors)


@pytest.fixture(scope="module")
def module():
    return cp.RawModule(code=_SRC, options=("-std=c++17", f"-I{kernels_dir()}"),
                        name_expressions=["lookback_test<long long, 32>", "lookback_test<long long, 1024>",
                                          "lookback_test<int, 64>", "lookback_test<int, 1024>",
                                          "lookback_test<distscan::Complex<double>, 96>"])


@pytest.mark.parametrize("tname,window", [("long long", 32), ("long long", 1024), ("int", 64), ("int", 1024)])
def test_lookback(module, tname, window, rng):
    dt = np.int64 if tname == "long long" else np.int32
    fn = module.get_function(f"lookback_test<{tname}, {window}>")
    k = 2 if dt == np.int64 else 1
    words, subaggs, anchors, state = status_words(10**6, k, window)
    epoch = 0
    for tiles in sorted({1, 2, 31, 32, 33, 63, 64, 65, window - 1, window, window + 1, 3 * window + 7, 10**4 + 1, 10**6}):
        for has_seed in (0, 1):
            epoch += 1
            aggs = rng.integers(-1000, 1000, tiles, dtype=dt)
            seed = dt(rng.integers(-1000, 1000)) if has_seed else dt(0)
            excl = cp.full(tiles, 12345, dtype=dt)
            total = cp.zeros(1, dtype=dt)
            fn((tiles,), (32,), (cp.asarray(aggs), excl, np.int64(tiles), words, subaggs, anchors, state, seed,
                                 np.int32(has_seed), total))
            # the last claim left the state for the next launch: (epoch << 32) | no claims
            assert cp.asnumpy(state)[:3].tolist() == [epoch << 32, 0, 0]
            ref = np.concatenate([[seed], seed + np.cumsum(aggs)]).astype(dt)
            np.testing.assert_array_equal(cp.asnumpy(excl), ref[:-1])
            assert cp.asnumpy(total)[0] == ref[-1]


def test_lookback_16_byte(module, rng):
    """complex128 status values span four 64-bit words (two 16-byte accesses)."""
    fn = module.get_function("lookback_test<distscan::Complex<double>, 96>")
    tiles = 100003
    words, subaggs, anchors, state = status_words(tiles, 4, 96)
    aggs = (rng.integers(-8, 8, tiles) + 1j * rng.integers(-8, 8, tiles)).astype(np.complex128)
    excl = cp.zeros(tiles, dtype=cp.complex128)
    total = cp.zeros(1, dtype=cp.complex128)
    fn((tiles,), (32,), (cp.asarray(aggs), excl, np.int64(tiles), words, subaggs, anchors, state, np.complex128(0),
                         np.int32(0), total))
    ref = np.concatenate([[0], np.cumsum(aggs)])
    np.testing.assert_array_equal(cp.asnumpy(excl), ref[:-1])


def test_the_launch_at_the_last_epoch_zeroes_the_words(module, rng):
    """Epochs are 32-bit: the launch with epoch 2^32 - 1 zeroes every status word at its end
    (its blocks count out, TileState::retire), and the launches after it count from 1 again,
    so words from 2^32 launches before (planted here, tagged with the epochs to come) are never
    taken for a launch's own."""
    fn = module.get_function("lookback_test<long long, 32>")
    tiles = 5003
    words, subaggs, anchors, state = status_words(tiles, 2, 32)
    last = 0xFFFFFFFF
    state[0] = np.uint64((last - 2) << 32)
    for a in (words, subaggs, anchors):  # epoch 1's words, each a plausible value
        a[:] = (1 << 32) | 77
    for epoch in (last - 1, last, 1, 2):
        aggs = rng.integers(-1000, 1000, tiles, dtype=np.int64)
        excl = cp.full(tiles, 12345, dtype=np.int64)
        total = cp.zeros(1, dtype=np.int64)
        fn((tiles,), (32,), (cp.asarray(aggs), excl, np.int64(tiles), words, subaggs, anchors, state, np.int64(0),
                             np.int32(0), total))
        assert cp.asnumpy(state)[:3].tolist() == [(0 if epoch == last else epoch) << 32, 0, 0]
        if epoch == last:
            assert int(cp.count_nonzero(words)) + int(cp.count_nonzero(subaggs)) + int(cp.count_nonzero(anchors)) == 0
        ref = np.concatenate([[0], np.cumsum(aggs)])
        np.testing.assert_array_equal(cp.asnumpy(excl), ref[:-1], err_msg=f"epoch {epoch:#x}")
        assert cp.asnumpy(total)[0] == ref[-1]
