"""The file pipeline's GPU engine (distscan.pipeline.cuda) without a GPU: a host stand-in
(``tests.support.host_gpu.HostChunks``) plays the GPU, so that what the engine promises is tested
at any rank count, with ranks that differ:

- a chunk that is ready before CUDA is scans on the host only when the result cannot depend on
  where it is computed (integers, max, min); float sums wait for the GPU;
- a carry begun on the host continues on the GPU and the other way round (exact results);
- ranks beyond the GPUs of their node scan on the host; sharing is asked for;
- ``--backend cuda`` and a GPU that does not start on one rank: the same error on every rank,
  nothing published; ``auto``: that rank scans on the host and the report says why;
- an integer run whose chunks all scanned on the host while CUDA started cancels the start: it
  ends at its next step, not after the buffers and modules, and the bytes are the same;
- calls in a row leave no thread and no GPU state behind.
"""

import threading
import time

import numpy as np
import pytest

from distscan import pipeline
from distscan.dist.plan import ScanPlan
from distscan.pipeline import cuda as gpu_pipeline
from distscan.pipeline.cuda import GpuEngine, exact_anywhere, run_auto, run_gpu
from distscan.pipeline.host import run_chunked

from tests.support.host_gpu import HostChunks
from tests.support.ranks import all_ranks_ok
from tests.support.reference import reference_scan

pytestmark = [pytest.mark.anyranks, pytest.mark.manyranks]

MANY = 1 << 10  # a stand-in device count: a "GPU" for every rank


@pytest.fixture
def small_chunks(monkeypatch):
    from distscan.pipeline import chunks

    monkeypatch.setattr(chunks, "CHUNK_BYTES", 8 << 10)


@pytest.fixture
def stand_in(monkeypatch):
    monkeypatch.setattr(HostChunks, "START_S", 0.0)
    monkeypatch.setattr(HostChunks, "FAIL", None)
    HostChunks.made.clear()
    return HostChunks


def _files(comm, folder, a):
    inp, out = f"{folder}/in.npy", f"{folder}/out.npy"
    if comm.rank == 0:
        np.save(inp, a)
    comm.Barrier()
    return inp, out


def _run(comm, job, fn):
    """``pipeline.run`` with ``fn`` as the job's pipeline; the report."""
    saved = pipeline.PIPELINES[job.backend]
    pipeline.PIPELINES[job.backend] = fn
    try:
        return pipeline.run(job, comm)
    finally:
        pipeline.PIPELINES[job.backend] = saved


class SlowStart:
    """A GpuStart whose GPU is up from the ``after``-th question on (deterministic, unlike a clock)."""

    def __init__(self, chunks, after):
        self.chunks_obj, self.after, self.asked = chunks, after, 0
        self.binding, self.error, self.why, self.t0, self.t1 = None, None, "GPU 0 (stand-in)", 0.0, None
        self.steps = {}  # GpuStart.steps: none timed here

    @property
    def done(self):
        return self.asked >= self.after

    def ready(self):
        self.asked += 1
        return self.chunks_obj if self.done else None

    def wait(self):
        self.asked = max(self.asked, self.after)
        return self.chunks_obj

    def cancel(self):
        pass

    def settle(self, timeout):
        pass

    def close(self):
        self.chunks_obj.close()


def test_which_scans_may_start_on_the_host():
    from distscan._dtypes import scan_types
    from distscan.ops import get_op

    def exact(op, dt):
        o = get_op(op)
        return exact_anywhere(o, scan_types(o, np.dtype(dt)))

    assert exact("sum", "int32") and exact("prod", "uint8") and exact("bitwise_xor", "int64")
    assert exact("max", "float32") and exact("nanmin", "float64")
    # lcm's wrapping overflow is not associative: where its chunks run must not depend on a clock
    assert not exact("lcm", "int64") and not exact("gcd", "int64")
    assert exact("logical_and", "float64")  # a bool accumulator
    assert not exact("sum", "float32") and not exact("prod", "float64") and not exact("nansum", "float32")
    assert not exact("logaddexp", "float64") and not exact("sum", "complex64")


@pytest.mark.parametrize("dtype,op,exclusive", [("int64", "sum", False), ("int32", "sum", True),
                                                ("float64", "max", False), ("uint16", "bitwise_xor", True)])
def test_exact_scans_hand_the_carry_between_host_and_gpu(shared_tmp_path, comm, small_chunks, stand_in, rng,
                                                         dtype, op, exclusive):
    """The first chunks of every rank scan on the host, the rest on the "GPU": exact results."""
    a = (rng.integers(-1000, 1000, 90_011) if dtype != "float64" else rng.standard_normal(90_011)).astype(dtype)
    inp, out = _files(comm, shared_tmp_path, a)
    job = pipeline.Job(input=inp, output=out, op=op, exclusive=exclusive, backend="cuda", force=True)
    engines = []

    def make(layout, plan, local):
        dev = HostChunks(0, ScanPlan(plan.op, layout.in_dt, exclusive=job.exclusive, backend="cpu"),
                         layout.chunk_rows, layout.w, layout.in_dt, layout.out_dt, "pageable")
        engines.append(GpuEngine(SlowStart(dev, after=3), required=True, exact=True))
        return engines[-1]

    report = _run(comm, job, lambda j, c: run_chunked(j, c, make))
    np.testing.assert_array_equal(np.load(out), reference_scan(a, op, exclusive=exclusive))
    e = engines[0]
    total = e.chunks["host"] + e.chunks["gpu"]  # one question per chunk: two before the GPU is "up"
    assert (e.chunks["host"], e.chunks["gpu"]) == (min(2, total), max(0, total - 2))
    assert report["backend"]["used"] in ("cuda", "cuda+cpu", "cpu")
    comm.Barrier()


def test_float_sums_wait_for_the_gpu_and_give_the_same_bytes(shared_tmp_path, comm, small_chunks, stand_in,
                                                              monkeypatch, rng):
    """A float sum never starts on the host while CUDA starts: the bytes do not depend on a clock."""
    a = rng.standard_normal(20_011).astype(np.float32)
    inp, out = _files(comm, shared_tmp_path, a)
    results = []
    for delay in (0.0, 0.2):
        monkeypatch.setattr(HostChunks, "START_S", delay)
        job = pipeline.Job(input=inp, output=out, op="sum", backend="cuda", force=True)
        report = _run(comm, job, lambda j, c: run_gpu(j, c, chunks_class=HostChunks, count=lambda: MANY))
        mine = report["gpu"]["per_rank"][comm.rank]
        assert mine["chunks_on_host"] == 0 and mine["chunks_on_gpu"] > 0, mine
        assert report["backend"]["used"] == "cuda" and report["times_s"]["context"] >= delay * 0.9
        steps = mine["start_steps_s"]  # where the start's time went, step by step
        assert list(steps) == ["import", "context", "modules"] and steps["modules"] <= mine["context_s"] + 1e-6
        results.append(np.load(out))
        comm.Barrier()
    np.testing.assert_array_equal(results[0], results[1])
    ref = np.cumsum(a.astype(np.float64))
    assert np.max(np.abs(results[0] - ref)) <= 1e-5 * np.sum(np.abs(a))


def test_ranks_beyond_the_gpus_scan_on_the_host(shared_tmp_path, comm, small_chunks, stand_in, monkeypatch, rng):
    monkeypatch.delenv("DISTSCAN_ALLOW_SHARED_GPU", raising=False)
    monkeypatch.delenv("DISTSCAN_GPU", raising=False)
    # float64 (sums exact): a float scan waits for its GPU; an integer one scans on the host while
    # the GPU starts (GpuEngine.exact), so under load rank 0's GPU took no chunk and its backend
    # read "cpu" (CI of f0c02cf at 2 ranks, 2026-11-29)
    a = rng.integers(0, 100, 9_001).astype(np.float64)
    inp, out = _files(comm, shared_tmp_path, a)
    job = pipeline.Job(input=inp, output=out, backend="cuda", force=True)
    report = _run(comm, job, lambda j, c: run_gpu(j, c, chunks_class=HostChunks, count=lambda: 1))
    np.testing.assert_array_equal(np.load(out), np.cumsum(a))
    per_rank = report["gpu"]["per_rank"]
    # every rank of one node: local rank 0 takes the one GPU, the others scan on the host
    assert per_rank[0]["device"] == 0
    assert all(g["device"] is None and "scans on the host" in g["why"] and g["chunks_on_gpu"] == 0
               for g in per_rank[1:])
    assert report["backend"]["ranks"].get("cpu", []) == list(range(1, comm.size))
    comm.Barrier()
    monkeypatch.setenv("DISTSCAN_ALLOW_SHARED_GPU", "1")
    report = _run(comm, job, lambda j, c: run_gpu(j, c, chunks_class=HostChunks, count=lambda: 1))
    assert all(g["device"] == 0 and g["shared"] == (comm.size > 1) for g in report["gpu"]["per_rank"])
    np.testing.assert_array_equal(np.load(out), np.cumsum(a))
    comm.Barrier()


def _auto_takes_any_part(monkeypatch):
    """auto's thresholds at 0 s: a visible (stand-in) GPU takes a part of any size, whether its
    chunks wait for the GPU or not."""
    monkeypatch.setattr(gpu_pipeline, "AUTO_MIN_HOST_SCAN_S", 0.0)
    monkeypatch.setattr(gpu_pipeline, "AUTO_MIN_HOST_SCAN_WAITING_S", 0.0)


@pytest.mark.parametrize("backend", ["cuda", "auto"])
def test_a_gpu_that_fails_to_start_on_one_rank(shared_tmp_path, comm, small_chunks, stand_in, monkeypatch,
                                               backend):
    """Ranks differ: only the last rank's CUDA fails.  cuda: the same error everywhere, nothing
    published; auto: that rank scans on the host."""
    a = np.arange(7_003, dtype=np.float64)
    inp, out = _files(comm, shared_tmp_path, a)
    if comm.rank == comm.size - 1:
        monkeypatch.setattr(HostChunks, "FAIL", RuntimeError("injected: CUDA driver too old"))
    _auto_takes_any_part(monkeypatch)
    job = pipeline.Job(input=inp, output=out, backend=backend, force=True)
    runner = {"cuda": lambda j, c: run_gpu(j, c, chunks_class=HostChunks, count=lambda: MANY),
              "auto": lambda j, c: run_auto(j, c, visible=lambda: (True, "stand-in"), chunks_class=HostChunks,
                                            count=lambda: MANY)}[backend]
    if backend == "cuda":
        with pytest.raises(RuntimeError, match="CUDA did not start: injected: CUDA driver too old"):
            _run(comm, job, runner)
        comm.Barrier()
        assert not __import__("os").path.exists(out)
    else:
        report = _run(comm, job, runner)
        np.testing.assert_allclose(np.load(out), np.cumsum(a), rtol=1e-12)
        last = report["gpu"]["per_rank"][-1]
        assert last["chunks_on_gpu"] == 0 and "injected" in last["why"]
        assert report["backend"]["ranks"]["cpu"][-1] == comm.size - 1
    comm.Barrier()


@pytest.mark.parametrize("backend,stop", [("cuda", "before the device buffers"), ("auto", "before the context")])
def test_an_integer_run_cancels_a_start_that_no_chunk_used(shared_tmp_path, comm, small_chunks, stand_in,
                                                           monkeypatch, rng, backend, stop):
    """"The CuPy import" lasts until every chunk is scanned (on the host: integers do not wait); the
    buffers and modules after it would take 20 s.  The run does not wait for them: the start ends at
    its next checkpoint (``--backend cuda``: once its context is up), nothing is made, and the
    output is the one a GPU that started at once gives."""
    a = rng.integers(-1000, 1000, 50_011).astype(np.int64)
    inp, out = _files(comm, shared_tmp_path, a)
    _auto_takes_any_part(monkeypatch)
    job = pipeline.Job(input=inp, output=out, backend=backend, force=True)

    def runner(count):
        if backend == "cuda":
            return lambda j, c: run_gpu(j, c, chunks_class=HostChunks, count=count)
        return lambda j, c: run_auto(j, c, visible=lambda: (True, "stand-in"), chunks_class=HostChunks, count=count)

    _run(comm, job, runner(lambda: MANY))  # CUDA up at once
    at_once = np.load(out)
    comm.Barrier()
    HostChunks.made.clear()
    monkeypatch.setattr(HostChunks, "START_S", 20.0)
    scanned = threading.Event()

    def count():  # on the start thread: "the CuPy import", under way until every chunk is scanned
        if threading.current_thread().name == "distscan-gpu-start":
            assert scanned.wait(30)
            # a start thread slow to reach its checkpoint after the cancel (a loaded machine: CI at
            # 7658cb7 reported "CUDA is starting"); the report waits for it (GpuStart.settle)
            time.sleep(0.05)
        return MANY

    computed = GpuEngine.computed
    monkeypatch.setattr(GpuEngine, "computed", lambda engine: (computed(engine), scanned.set()))
    t0 = time.perf_counter()
    report = _run(comm, job, runner(count))
    took = time.perf_counter() - t0

    def check():  # on every rank, agreed (a rank that failed alone left the others in a Barrier)
        assert took < 10, f"the run took {took:.1f} s"
        mine = report["gpu"]["per_rank"][comm.rank]
        assert mine["chunks_on_gpu"] == 0 and mine["chunks_on_host"] > 0 and mine["why"].endswith(f"stopped {stop})")
        assert HostChunks.made == []
        np.testing.assert_array_equal(np.load(out), at_once)
        np.testing.assert_array_equal(at_once, np.cumsum(a))

    all_ranks_ok(comm, check)


def test_auto_takes_the_host_where_no_gpu_is_seen_or_the_part_is_small(shared_tmp_path, comm, stand_in,
                                                                        monkeypatch):
    a = np.arange(5_000, dtype=np.int64)
    inp, out = _files(comm, shared_tmp_path, a)
    job = pipeline.Job(input=inp, output=out, backend="auto", force=True)
    for visible, why in (((False, "no NVIDIA driver on this node"), "no NVIDIA driver"),
                         ((True, "a GPU is visible"), "less than CUDA takes to start")):
        report = _run(comm, job, lambda j, c: run_auto(j, c, visible=lambda: visible, chunks_class=HostChunks,
                                                        count=lambda: MANY))
        assert report["backend"]["used"] == "cpu" and why in report["backend"]["why"]
        assert "gpu" not in report and HostChunks.made == []
        np.testing.assert_array_equal(np.load(out), np.cumsum(a))
        comm.Barrier()
    _auto_takes_any_part(monkeypatch)
    monkeypatch.setattr(HostChunks, "START_S", 0.05)
    job = pipeline.Job(input=inp, output=out, op="sum", dtype="float64", backend="auto", force=True)
    report = _run(comm, job, lambda j, c: run_auto(j, c, visible=lambda: (True, "a GPU is visible"),
                                                   chunks_class=HostChunks, count=lambda: MANY))
    assert report["backend"]["used"] == "cuda" and report["backend"]["why"] == "auto: a GPU is visible"
    comm.Barrier()


@pytest.mark.parametrize("exact_s,waiting_s", [(1.0, 0.0), (0.0, 1.0)])
def test_auto_weighs_a_part_by_whether_its_chunks_wait_for_the_gpu(shared_tmp_path, comm, stand_in, monkeypatch,
                                                                    exact_s, waiting_s):
    """The same part: an integer sum (its chunks run on the host while CUDA starts) is held to
    AUTO_MIN_HOST_SCAN_S, a float sum (they wait for the GPU) to AUTO_MIN_HOST_SCAN_WAITING_S; the
    reason names the threshold taken."""
    a = np.arange(5_000, dtype=np.int64)
    inp, out = _files(comm, shared_tmp_path, a)
    monkeypatch.setattr(gpu_pipeline, "AUTO_MIN_HOST_SCAN_S", exact_s)
    monkeypatch.setattr(gpu_pipeline, "AUTO_MIN_HOST_SCAN_WAITING_S", waiting_s)
    monkeypatch.setattr(HostChunks, "START_S", 0.05)
    for dtype, threshold, waits in (("int64", exact_s, "run on the host while it starts"),
                                    ("float64", waiting_s, "wait for the GPU")):
        job = pipeline.Job(input=inp, output=out, op="sum", dtype=dtype, backend="auto", force=True)
        report = _run(comm, job, lambda j, c: run_auto(j, c, visible=lambda: (True, "a GPU is visible"),
                                                       chunks_class=HostChunks, count=lambda: MANY))
        if threshold:
            assert report["backend"]["used"] == "cpu" and f"({threshold} s for a scan whose chunks {waits})" \
                in report["backend"]["why"], report["backend"]["why"]
            assert "gpu" not in report
        else:  # the GPU engine ran (an integer part may still have been scanned on the host while it started)
            assert report["backend"]["why"] == "auto: a GPU is visible" and "gpu" in report, report["backend"]
        np.testing.assert_array_equal(np.load(out), np.cumsum(a, dtype=dtype))
        comm.Barrier()


def test_calls_in_a_row_leave_no_thread_and_close_their_gpu(shared_tmp_path, comm, small_chunks, stand_in, rng):
    a = rng.integers(0, 9, 3_001).astype(np.float64)  # a float sum waits for the "GPU": every chunk on it
    inp, out = _files(comm, shared_tmp_path, a)
    threads = threading.active_count()
    for limit in (None, "4K", None):  # one call sends its chunks through the "GPU" in pieces
        job = pipeline.Job(input=inp, output=out, backend="cuda", force=True, gpu_memory_limit=limit,
                           exclusive=True)
        _run(comm, job, lambda j, c: run_gpu(j, c, chunks_class=HostChunks, count=lambda: MANY))
        np.testing.assert_array_equal(np.load(out), reference_scan(a, "sum", exclusive=True))
        comm.Barrier()
    assert threading.active_count() == threads
    assert HostChunks.made and all(d.closed for d in HostChunks.made)
    assert any(d.calls["pieces"] > d.calls["scan"] for d in HostChunks.made if d.calls["scan"])
