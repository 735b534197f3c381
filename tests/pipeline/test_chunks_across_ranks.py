"""The chunked file pipeline (distscan.pipeline.chunks) at any rank count, every rank role (first, middle,
last): the GPU engine's chunking, carries and agreement run end to end on a NumPy stand-in for the GPU
(``tests.support.host_gpu.HostChunks``, the ``cpu`` backend), and the CPU engine in tiny chunks,
resident and streamed.  Runs serially and under ``mpiexec`` (``comm`` fixture)."""

import numpy as np
import pytest

from distscan import pipeline
from distscan.pipeline.cuda import run_gpu

from tests.support.host_gpu import HostChunks

from tests.support.reference import reference_scan

pytestmark = [pytest.mark.anyranks, pytest.mark.manyranks]


CASES = [  # dtype, shape, op, exclusive, strategy, GPU memory limit, host memory limit, mode
    ("int32", (20_011,), "sum", False, "auto", None, None, "resident"),
    ("int64", (20_011,), "sum", True, "reduce_then_scan", "16K", None, "resident"),
    # Streamed shapes are large enough that every rank streams at up to 8 ranks.
    ("int16", (90_001, 3), "sum", False, "scan_then_add", "64K", "64K", "streamed"),
    (">i4", (90_001, 3), "max", True, "auto", "32K", "32K", "streamed"),
    ("uint8", (3,), "bitwise_xor", False, "auto", None, None, "resident"),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{c[2]}-{c[4]}-{c[7]}" for c in CASES])
def test_gpu_pipeline_logic_on_host_device(shared_tmp_path, comm, monkeypatch, case):
    from distscan.pipeline import chunks as _flow

    dtype, shape, op, exclusive, strategy, limit, host_limit, mode = case
    monkeypatch.setattr(_flow, "CHUNK_BYTES", 64 << 10)  # several chunks, each in pieces under "16K"
    from distscan._dtypes import scan_types
    from distscan.ops import get_op

    rng = np.random.default_rng(11)
    a = rng.integers(0 if dtype == "uint8" else -100, 100, shape).astype(dtype)
    folder = str(shared_tmp_path)  # the same folder on every rank
    inp, out = f"{folder}/in.npy", f"{folder}/out.npy"
    if comm.rank == 0:
        np.save(inp, a)
    comm.Barrier()
    job = pipeline.Job(input=inp, output=out, op=op, exclusive=exclusive, backend="cuda", strategy=strategy,
                       force=True, gpu_memory_limit=limit, memory_limit=host_limit, verify=True)
    monkeypatch.setitem(pipeline.PIPELINES, "cuda",
                        lambda j, c: run_gpu(j, c, chunks_class=HostChunks, count=lambda: 1 << 10))
    report = pipeline.run(job, comm)
    assert {r["mode"] for r in report["pipeline"]["per_rank"]} == {mode}
    # every rank had a "GPU" of its own; exact scans may take the host while it starts
    assert report["backend"]["used"] in ("cuda", "cuda+cpu", "cpu")
    for g, rows in zip(report["gpu"]["per_rank"], _rows_per_rank(len(a), comm.size)):
        assert g["device"] is not None and g["why"].startswith("GPU")
        assert (g["chunks_on_gpu"] + g["chunks_on_host"] > 0) == (rows > 0)
    assert report["verify"] is not None
    for key in ("read", "h2d", "scan", "exscan", "d2h", "write", "context"):
        assert report["times_s"][key] >= 0
    t = scan_types(get_op(op), np.dtype(dtype))
    ref = reference_scan(a, op, exclusive=exclusive)
    got = np.load(out)
    assert got.dtype == t.result
    np.testing.assert_array_equal(got, ref)
    comm.Barrier()


def _rows_per_rank(n, size):
    from distscan.io import block_split
    return [b - a for a, b in (block_split(n, size, r) for r in range(size))]


CPU_CASES = [  # dtype, shape, op, exclusive, strategy, memory limit
    ("int64", (40_009,), "sum", False, "auto", None),               # scan_then_add, in place
    ("int32", (40_009, 2), "sum", True, "reduce_then_scan", None),
    (">i4", (30_001,), "min", False, "scan_then_add", "8K"),         # streamed: pass 1 carries, pass 2 re-reads
    ("float64", (30_001,), "prod", False, "auto", "8K"),             # flagged carries, streamed
]


@pytest.mark.parametrize("case", CPU_CASES, ids=[f"{c[0]}-{c[2]}-{c[4]}-{c[5]}" for c in CPU_CASES])
def test_cpu_pipeline_chunks_at_any_rank_count(shared_tmp_path, comm, monkeypatch, case):
    """The CPU engine of the same skeleton, in tiny chunks, every rank role (first, middle, last)."""
    from distscan.pipeline import chunks as _flow

    dtype, shape, op, exclusive, strategy, limit = case
    monkeypatch.setattr(_flow, "CHUNK_BYTES", 4096)
    monkeypatch.setattr(_flow, "WRITE_RING", 3)
    rng = np.random.default_rng(12)
    a = (rng.integers(-100, 100, shape) if op != "prod" else rng.uniform(0.5, 1.5, shape)).astype(dtype)
    if op == "prod":
        a[len(a) // 3] = 0.0
    folder = str(shared_tmp_path)  # the same folder on every rank
    inp, out = f"{folder}/in.npy", f"{folder}/out.npy"
    if comm.rank == 0:
        np.save(inp, a)
    comm.Barrier()
    job = pipeline.Job(input=inp, output=out, op=op, exclusive=exclusive, backend="cpu", strategy=strategy,
                       force=True, memory_limit=limit, verify=True)
    with np.errstate(all="ignore"):
        report = pipeline.run(job, comm)
    modes = {r["mode"] for r in report["pipeline"]["per_rank"] if r is not None}
    assert modes <= {"resident", "streamed"} and (limit is None or comm.size == 1 or "streamed" in modes)
    ref = reference_scan(a, op, exclusive=exclusive)
    got = np.load(out)
    if op == "prod":
        np.testing.assert_allclose(got, ref, rtol=1e-12)
    else:
        np.testing.assert_array_equal(got, ref)
    comm.Barrier()
