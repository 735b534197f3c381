"""One rank per GPU (distscan.gpus), the rules that need no GPU: which device a rank takes, sharing,
the environment, and the local rank from a launcher's variables."""

import pytest

from distscan.gpus import choose_device, local_rank_from_env


def test_choose_device_rules():
    assert choose_device(1, 2, 2, env={}).device == 1
    b = choose_device(3, 4, 2, env={"DISTSCAN_ALLOW_SHARED_GPU": "1"})
    assert (b.device, b.shared, b.source) == (1, True, "local rank (shared)")
    with pytest.raises(ValueError, match="4 ranks on this node but only 2 GPUs visible.*DISTSCAN_ALLOW_SHARED_GPU"):
        choose_device(3, 4, 2, env={})
    assert choose_device(3, 4, 2, gpu="0", env={}).device == 0  # explicit choice: sharing is the user's call
    assert choose_device(0, 1, 4, env={"DISTSCAN_GPU": "2"}).source == "environment"
    with pytest.raises(ValueError, match="DISTSCAN_GPU=5 but only 4 GPUs"):
        choose_device(0, 1, 4, env={"DISTSCAN_GPU": "5"})
    with pytest.raises(ValueError, match="GPU index"):
        choose_device(0, 1, 4, gpu="x", env={})
    with pytest.raises(RuntimeError, match="no CUDA GPU"):
        choose_device(0, 1, 0, env={})
    assert local_rank_from_env({"OMPI_COMM_WORLD_LOCAL_RANK": "2", "OMPI_COMM_WORLD_LOCAL_SIZE": "4"}) == (2, 4)
    assert local_rank_from_env({}) is None
