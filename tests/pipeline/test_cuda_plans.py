"""The GPU file pipeline's sizes and chunk plans (distscan.pipeline.cuda), which need no GPU."""

import pytest

from distscan.pipeline.cuda import parse_bytes, plan_chunks


def test_parse_bytes_and_plans():
    assert parse_bytes("512M") == 512 << 20 and parse_bytes("1.5GiB") == 3 << 29 and parse_bytes("4096") == 4096
    for bad in ("", "12Q", "-1", "0"):
        with pytest.raises(ValueError):
            parse_bytes(bad)
    assert plan_chunks(1000, 8, 8, 1 << 20)["mode"] == "resident"
    p = plan_chunks(10 ** 6, 8, 8, 1 << 20)
    assert p["mode"] == "streamed" and p["device_bytes"] <= 1 << 20 and p["chunk_rows"] >= 1
    with pytest.raises(MemoryError, match="too small"):
        plan_chunks(10, 1 << 20, 1 << 20, 1 << 20)
