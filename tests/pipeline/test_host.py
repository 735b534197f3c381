"""The CPU file pipeline (distscan.pipeline.host on the chunked skeleton of distscan.pipeline.chunks)
in-process: chunks, modes, strategies, dtypes, failures.

Chunks are made tiny (a few KB) so that every path runs many chunks: rank 0's single pass,
resident and streamed parts, in-place scans, byte-swapped input, flagged float products.
The multi-rank cases of the same code run under mpiexec in tests/pipeline/test_chunks_across_ranks.py."""

import os

import numpy as np
import pytest

from distscan.dist.plan import ScanPlan
from distscan.pipeline import chunks as _flow
from distscan.pipeline.context import host_budget
from distscan.pipeline.host import CpuEngine

from distscan import io as dio, pipeline
from distscan._dtypes import scan_types
from distscan.ops import get_op

from tests.support.reference import reference_scan

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch):
    monkeypatch.setattr(_flow, "CHUNK_BYTES", 4096)
    monkeypatch.setattr(_flow, "READ_AHEAD", 3)
    monkeypatch.setattr(_flow, "WRITE_RING", 3)


CASES = [  # dtype, shape, op, exclusive, strategy, memory limit
    ("int64", (50_001,), "sum", False, "auto", None),           # in place
    ("int64", (50_001,), "sum", True, "auto", None),
    ("int32", (20_003, 3), "sum", False, "reduce_then_scan", None),
    (">i4", (30_011,), "max", True, "scan_then_add", None),
    ("float64", (40_000,), "sum", False, "auto", "10K"),         # streamed (one rank: single pass)
    ("float16", (9_999,), "sum", False, "auto", None),
    ("uint8", (7,), "bitwise_xor", False, "auto", None),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{c[2]}-{c[4]}-{c[5]}" for c in CASES])
def test_cpu_pipeline_matches_numpy(tmp_path, case):
    dtype, shape, op, exclusive, strategy, limit = case
    a = np.random.default_rng(3).integers(0, 50, shape).astype(dtype)
    inp, out = str(tmp_path / "in.npy"), str(tmp_path / "out.npy")
    np.save(inp, a)
    job = pipeline.Job(input=inp, output=out, op=op, exclusive=exclusive, strategy=strategy, force=True,
                       memory_limit=limit, verify=True)
    report = pipeline.run(job)
    got = np.load(out)
    np.testing.assert_array_equal(got, reference_scan(a, op, exclusive=exclusive))
    assert report["verify"]["passed"]
    t = report["times_s"]
    assert t["total"] >= t["read"] >= 0 and t["write"] >= 0 and "read" in t["spans"] and "write" in t["spans"]
    assert report["pipeline"]["per_rank"][0]["mode"] in ("resident", "streamed")


def test_float_products_absorb_zeros_across_chunks(tmp_path):
    a = np.full(20_000, 3.0)
    a[5_000] = 0.0       # the running product overflows before it: NaN from there, as in NumPy
    a[12_000] = np.inf
    inp, out = str(tmp_path / "in.npy"), str(tmp_path / "out.npy")
    np.save(inp, a)
    with np.errstate(all="ignore"):
        pipeline.run(pipeline.Job(input=inp, output=out, op="prod", force=True))
        np.testing.assert_array_equal(np.load(out), np.cumprod(a))


def _ctx(tmp_path, a, rank, size, comm=None):
    """A Context for one rank of ``size`` (no communicator: the exchange is done by the test)."""
    inp = str(tmp_path / "in.npy")
    np.save(inp, a)
    header = dio.read_header(inp)
    op = get_op("sum")
    types = scan_types(op, header.dtype)
    start, stop = dio.block_split(header.rows, size, rank)
    return pipeline.Context(comm=comm, header=header, op=op, types=types, start=start, stop=stop,
                            progress=pipeline.null_progress), inp


@pytest.mark.parametrize("limit", [None, "1K"])
@pytest.mark.parametrize("strategy", ["scan_then_add", "reduce_then_scan"])
def test_a_later_rank_holds_or_rereads_then_applies_its_offset(tmp_path, monkeypatch, strategy, limit):
    """Rank 1 of 2, the exchange replaced by rank 0's known total: both pass orders of a later rank."""
    a = np.random.default_rng(5).integers(-9, 9, 30_000).astype(np.int32)
    ctx, inp = _ctx(tmp_path, a, 1, 2)
    ctx.comm = None
    seen = {}

    def exchange(self, carry, error=None, **kw):
        if error is not None:
            raise error
        seen["carry"] = np.asarray(carry).copy()
        return np.asarray([a[:ctx.start].sum(dtype=np.int64)])

    monkeypatch.setattr(ScanPlan, "exchange", exchange)
    monkeypatch.setattr(pipeline.Context, "rank", property(lambda self: 1))
    monkeypatch.setattr(pipeline.Context, "size", property(lambda self: 2))
    out = str(tmp_path / "out.npy")
    with dio.NpyWriter(out, a.shape, np.int64, force=True) as w:
        ctx.writer = w
        job = pipeline.Job(input=inp, output=out, strategy=strategy, memory_limit=limit)
        engine = CpuEngine()
        plan = _flow.make_plan(job, ctx, "cpu", engine.default_strategy)
        layout = _flow.layout_for(ctx)
        config = engine.configure(layout, plan, host_budget(limit), final_now=False)
        assert config["mode"] == ("streamed" if limit else "resident")
        _flow.run_chunks(job, ctx, engine, plan, layout, config)
        w.close()
    got = np.load(out)[ctx.start:]
    np.testing.assert_array_equal(got, np.cumsum(a.astype(np.int64))[ctx.start:])
    # The last rank's carry is never read: reduce_then_scan does not form it (the identity goes out).
    if strategy == "reduce_then_scan":
        assert seen["carry"].tolist() == [0]


def test_read_failure_mid_way_publishes_nothing(tmp_path, monkeypatch):
    a = np.arange(40_000, dtype=np.int64)
    inp, out = str(tmp_path / "in.npy"), str(tmp_path / "out.npy")
    np.save(inp, a)
    real = dio.read_rows
    calls = []

    def flaky(header, start, stop, **kw):
        calls.append(start)
        if len(calls) == 4:
            raise OSError("injected: read error")
        return real(header, start, stop, **kw)

    monkeypatch.setattr(dio, "read_rows", flaky)
    with pytest.raises(OSError, match="injected"):
        pipeline.run(pipeline.Job(input=inp, output=out, force=True))
    assert not os.path.exists(out) and not [f for f in os.listdir(tmp_path) if f.endswith(".part")]


def test_write_failure_publishes_nothing(tmp_path, monkeypatch):
    a = np.arange(40_000, dtype=np.int64)
    inp, out = str(tmp_path / "in.npy"), str(tmp_path / "out.npy")
    np.save(inp, a)
    real = dio.NpyWriter.write_rows
    calls = []

    def full(self, start, rows, progress=None):
        calls.append(start)
        if len(calls) == 5:
            raise OSError("injected: disk full")
        return real(self, start, rows, progress)

    monkeypatch.setattr(dio.NpyWriter, "write_rows", full)
    with pytest.raises(OSError, match="disk full"):
        pipeline.run(pipeline.Job(input=inp, output=out, force=True))
    assert not os.path.exists(out) and not [f for f in os.listdir(tmp_path) if f.endswith(".part")]


@pytest.mark.parametrize("fsync", [False, True])
def test_fsync_only_when_asked(tmp_path, monkeypatch, fsync):
    a = np.arange(1000, dtype=np.int64)
    inp, out = str(tmp_path / "in.npy"), str(tmp_path / "out.npy")
    np.save(inp, a)
    calls = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append(fd), real(fd))[1])
    pipeline.run(pipeline.Job(input=inp, output=out, force=True, fsync=fsync))
    np.testing.assert_array_equal(np.load(out), np.cumsum(a))
    assert (len(calls) >= 2) if fsync else (calls == [])  # the file, then the folder


@pytest.mark.parametrize("segmented", [False, True], ids=["plain", "segmented"])
def test_a_small_memory_limit_shrinks_the_chunks_to_fit_it(tmp_path, monkeypatch, segmented):
    """``--memory-limit`` bounds what a streamed rank holds: READ_AHEAD chunks of input (with their
    segment flags, read and converted) and WRITE_RING chunks of output fit in it, the chunks
    shrinking down to MIN_CHUNK_BYTES; without a limit (a share of the memory) they keep CHUNK_BYTES."""
    monkeypatch.setattr(_flow, "CHUNK_BYTES", 16 << 20)
    monkeypatch.setattr(_flow, "READ_AHEAD", 6)
    monkeypatch.setattr(_flow, "WRITE_RING", 16)
    rng = np.random.default_rng(11)
    a = rng.integers(-1000, 1000, (300_007, 2)).astype(np.int32)  # 8-byte rows in, 16-byte rows out
    flags = rng.random(a.shape[0]) < 0.001
    inp, out, seg = str(tmp_path / "in.npy"), str(tmp_path / "out.npy"), str(tmp_path / "f.npy")
    np.save(inp, a)
    np.save(seg, flags)
    ring_row = 6 * (8 + (2 if segmented else 0)) + 16 * 16  # flags: one byte read, one converted
    floor_rows = (64 << 10) // 16
    want = (reference_scan(a, "sum") if not segmented else
            np.concatenate([np.cumsum(s, axis=0, dtype=np.int64) for s in np.split(a, np.flatnonzero(flags))]))
    for limit, rows in (("4M", (4 << 20) // ring_row), ("1M", max((1 << 20) // ring_row, floor_rows)),
                        (None, (16 << 20) // 16)):
        job = pipeline.Job(input=inp, output=out, force=True, memory_limit=limit, segments=seg if segmented else None)
        report = pipeline.run(job)
        np.testing.assert_array_equal(np.load(out), want)
        mine = report["pipeline"]["per_rank"][0]
        assert mine["chunk_rows"] == rows, (limit, mine)
        if limit == "4M":
            assert mine["mode"] == "streamed" and rows * ring_row <= 4 << 20


@pytest.mark.parametrize("limit", [None, "10K"])
def test_float16_of_wider_input_is_rounded_once_as_each_chunk_comes(tmp_path, monkeypatch, limit):
    """``--dtype float16`` of float64 input: each chunk is rounded once, when it comes
    (CpuEngine.put), into a float16 buffer of its own, and the file's buffer goes back to the pool
    at once; the carries and scans read the float16 rows as they are (each chunk used to be
    rounded again by both passes of reduce_then_scan, which float16 results take)."""
    a = np.random.default_rng(9).standard_normal(30_011) * 300
    inp, out = str(tmp_path / "in.npy"), str(tmp_path / "out.npy")
    np.save(inp, a)
    seen = {"puts": 0, "reads": []}
    put = CpuEngine.put

    def spy_put(self, k, rows, buf, aux=()):
        free_before = len(self._free_in)
        put(self, k, rows, buf, aux)
        seen["puts"] += 1
        assert self.inp[k].dtype == np.float16
        assert len(self._free_in) == free_before + 1 and self._free_in[-1] is buf  # the file's buffer is free

    def spy(name):
        original = getattr(ScanPlan, name)

        def call(self, x, *args, **kwargs):
            seen["reads"].append(x.dtype)
            return original(self, x, *args, **kwargs)
        return call

    monkeypatch.setattr(CpuEngine, "put", spy_put)
    for name in ("local_carry", "seeded_scan"):
        monkeypatch.setattr(ScanPlan, name, spy(name))
    job = pipeline.Job(input=inp, output=out, dtype="float16", force=True, memory_limit=limit, verify=True)
    report = pipeline.run(job)
    assert report["verify"]["passed"]
    assert seen["puts"] > 3 and set(seen["reads"]) == {np.dtype(np.float16)}
    np.testing.assert_array_equal(np.load(out), np.cumsum(a.astype(np.float16).astype(np.float32)).astype(np.float16))
