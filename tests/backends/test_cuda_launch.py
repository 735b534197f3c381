"""Launch shapes of the CUDA backend (distscan.backends.cuda.launch), which need no GPU: the tile
claims one launch can count."""

import pytest


def test_a_scan_launch_refuses_more_tile_claims_than_it_counts():
    """The launch word counts a launch's tile claims in 32 bits and a grid has < 2^31 blocks
    (distscan/backends/cuda/launch.py, MAX_CLAIMS): the last size that fits launches, one item more
    is refused before any launch."""
    from types import SimpleNamespace
    from distscan.backends import cuda as gpu
    persistent = SimpleNamespace(tile=2048, la_grid=396, la_smem=73728, lead=0)  # look-ahead
    most = (gpu.launch.MAX_CLAIMS - 396) * 2048
    assert gpu.launch.launch_shape(persistent, most) == (396, 73728, 0)
    with pytest.raises(ValueError, match=f"a scan of {most + 1} items needs more tiles than one kernel launch"):
        gpu.launch.launch_shape(persistent, most + 1)
    per_tile = SimpleNamespace(tile=8192, la_grid=0, la_smem=0, lead=64)  # look-back with its lead
    most = (gpu.launch.MAX_CLAIMS - 64) * 8192
    assert gpu.launch.launch_shape(per_tile, most) == (gpu.launch.MAX_CLAIMS, 0, 64)
    with pytest.raises(ValueError, match="more tiles than one kernel launch can count"):
        gpu.launch.launch_shape(per_tile, most + 1)
