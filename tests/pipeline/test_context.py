"""What every file pipeline shares (distscan.pipeline.context): the output's default name and the memory
budget of a rank."""

from distscan.pipeline.context import host_budget


def test_default_output_names():
    from distscan.pipeline import default_output
    assert default_output("d/input.npy", "sum") == "d/input.cumsum.npy"
    assert default_output("input.npy", "cumprod") == "input.cumprod.npy"
    assert default_output("input.npy", "maximum") == "input.cummax.npy"
    assert default_output("input.npy", "min", True) == "input.exclusive-cummin.npy"
    assert default_output("input.npy", "bxor") == "input.scan-bitwise_xor.npy"
    assert default_output("input.npy", "logical_or", True) == "input.exclusive-scan-logical_or.npy"


def test_host_budget(monkeypatch):
    assert host_budget("2M") == 2 << 20
    one = host_budget(None, env={})
    four = host_budget(None, env={"OMPI_COMM_WORLD_LOCAL_RANK": "0", "OMPI_COMM_WORLD_LOCAL_SIZE": "4"})
    assert one > 0 and four <= one // 3
