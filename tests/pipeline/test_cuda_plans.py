"""The GPU file pipeline's sizes and settings (distscan.pipeline.gpu_start, distscan.pipeline.gpu_env),
which need no GPU."""

import pytest

from distscan.pipeline.context import parse_bytes
from distscan.pipeline.gpu_env import gpu_visible, staging_from_env
from distscan.pipeline.gpu_start import slot_rows_for


def test_parse_bytes_and_slots():
    assert parse_bytes("512M") == 512 << 20 and parse_bytes("1.5GiB") == 3 << 29 and parse_bytes("4096") == 4096
    for bad in ("", "12Q", "-1", "0"):
        with pytest.raises(ValueError):
            parse_bytes(bad)
    assert slot_rows_for(1000, 16, None) == 1000            # no limit: a host chunk's rows
    assert slot_rows_for(1000, 16, 1 << 20) == 1000         # the limit is larger than a chunk
    assert slot_rows_for(1 << 20, 16, 1 << 20) == 1 << 15   # half the limit for the two slots
    with pytest.raises(MemoryError, match="too small"):
        slot_rows_for(10, 1 << 20, 1 << 20)


def test_staging_and_visibility_from_the_environment(tmp_path):
    assert staging_from_env({}) == "register"
    assert staging_from_env({"DISTSCAN_GPU_STAGING": " Register "}) == "register"
    with pytest.raises(ValueError, match="DISTSCAN_GPU_STAGING must be one of pageable, register"):
        staging_from_env({"DISTSCAN_GPU_STAGING": "pinned"})
    for hidden in ("", "-1"):
        likely, why = gpu_visible({"CUDA_VISIBLE_DEVICES": hidden})
        assert not likely and "hides every GPU" in why


def test_io_threads_from_the_environment():
    from distscan.pipeline.chunks import READ_THREADS, WRITE_THREADS, io_threads

    assert io_threads({}) == (READ_THREADS, WRITE_THREADS)
    assert io_threads({"DISTSCAN_IO_THREADS": "2, 3"}) == (2, 3)
    for bad in ("2", "0,4", "a,b", "1,2,3", "4,1000"):
        with pytest.raises(ValueError, match="DISTSCAN_IO_THREADS must be READ,WRITE"):
            io_threads({"DISTSCAN_IO_THREADS": bad})
