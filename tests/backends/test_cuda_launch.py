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


@pytest.mark.parametrize("gpu_name,dram_bw,plain", [("H100 SXM", 3.35e12, False), ("H200", 4.8e12, True),
                                                    ("no bandwidth figure", None, False)])
def test_float_max_and_min_take_the_plain_look_back_where_bandwidth_outruns_the_sms(gpu_name, dram_bw, plain,
                                                                                   monkeypatch):
    """plans.costly: float max and min of four-byte items or fewer take the plain look-back on a GPU
    with more than SELECT_BOUND_BYTES_PER_SM_CYCLE DRAM bytes an SM cycle (the H200: 18.4), not on
    one with fewer (the H100: 12.8) or without the figures; float64, integers, nanmax and the sum never;
    logaddexp, gcd and lcm always."""
    import numpy as np
    from distscan.backends.cuda import plans
    from distscan.ops import ALL_OPS, OPS

    info = {"sms": 132, "cc": 90, "l2": 50 << 20, "sm_clock": 1.98e9, "dram_bw": dram_bw}
    monkeypatch.setattr(plans, "device_info", lambda dev_id: info)
    for name in ("max", "min"):
        for acc in (np.float32, np.float16):
            assert plans.costly(OPS[name], acc, 0) is plain, (gpu_name, name, acc)
        for acc in (np.float64, np.int32, np.int8, np.complex64):
            assert not plans.costly(OPS[name], acc, 0)
        assert not plans.costly(OPS[name])  # no GPU named: by operator alone
    for name in ("nanmax", "nanmin", "sum"):
        assert not plans.costly(ALL_OPS[name], np.float32, 0)
    for name in ("logaddexp", "gcd"):
        assert plans.costly(ALL_OPS[name], np.float32, 0) and plans.costly(ALL_OPS[name])
    info["sm_clock"] = None
    assert not plans.costly(OPS["max"], np.float32, 0)
