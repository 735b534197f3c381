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


def test_the_file_command_runs_ranks_beyond_the_gpus_on_the_host():
    from distscan.gpus import device_or_host

    # 8 ranks, 2 GPUs: local ranks 0 and 1 take one GPU each, the others scan on the host
    picks = [device_or_host(r, 8, 2, env={}) for r in range(8)]
    assert [b.device if b else None for b, _ in picks] == [0, 1] + [None] * 6
    assert all(not b.shared for b, _ in picks[:2])
    assert "scans on the host" in picks[5][1] and "DISTSCAN_ALLOW_SHARED_GPU=1" in picks[5][1]
    # sharing asked for: every rank on GPU i % 2, marked shared
    shared = [device_or_host(r, 8, 2, env={"DISTSCAN_ALLOW_SHARED_GPU": "1"})[0] for r in range(8)]
    assert [b.device for b in shared] == [0, 1] * 4 and all(b.shared for b in shared)
    # an explicit device is the user's call, whatever the count
    assert device_or_host(7, 8, 2, gpu="1", env={})[0].device == 1
    assert device_or_host(7, 8, 2, env={"DISTSCAN_GPU": "0"})[0].source == "environment"
    # as many ranks as GPUs, or fewer: one each
    assert device_or_host(1, 2, 4, env={})[0].device == 1
    # no GPU: the host, not an error (--backend cuda makes it one: tests/pipeline/test_gpu_engine.py)
    assert device_or_host(0, 1, 0, env={}) == (None, "no CUDA GPU is visible to this rank")
    with pytest.raises(ValueError, match="DISTSCAN_GPU=5 but only 2 GPUs"):
        device_or_host(0, 1, 2, env={"DISTSCAN_GPU": "5"})
