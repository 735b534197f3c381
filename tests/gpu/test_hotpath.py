"""The single-rank hot path of the CUDA backend and its caches (skipped without a GPU): scratch growth
and streams, what the hot path refuses, spare results and the result ring, scratch capacity, a
failed launch, CuPy without ``launch_kernel``, an ``out`` written past; host threads sharing a
stream (the legacy default one and the per-thread default one), a stream per call, and arrays on a
GPU other than the current one.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from distscan._dtypes import scan_types
from distscan.ops import OPS

from tests.support.devices import require_gpu

cp = require_gpu()
pytestmark = pytest.mark.gpu

import distscan  # noqa: E402
from distscan.backends import cuda as gpu  # noqa: E402
from mpi4py import MPI  # noqa: E402

COMM = MPI.COMM_SELF


def test_api_hot_path_across_scratch_growth_and_streams(rng):
    """The single-rank hot path keeps the scratch pointers of its last launch: after the
    scratch grows (a bigger scan), on another stream, and with out= and without, every
    result is NumPy's."""
    sizes = (1000, 70001, 5_000_003, 1000, 12_345_679, 70001)
    streams = (cp.cuda.Stream(non_blocking=True), cp.cuda.Stream.null)
    for dtype in (np.int32, np.int64, np.float64):
        for n in sizes:
            host = rng.integers(-100, 100, n).astype(dtype)
            x = cp.asarray(host)
            cp.cuda.Stream.null.synchronize()  # the copy in is on the null stream; a non-blocking one does not wait
            for stream in streams:
                with stream:
                    got = distscan.cumsum(x, dtype=dtype, comm=COMM)
                    out = cp.empty_like(x)
                    assert distscan.cumsum(x, dtype=dtype, out=out, comm=COMM) is out
                    excl = distscan.cumsum(x, exclusive=True, dtype=dtype, comm=COMM)
                stream.synchronize()
                expected = np.cumsum(host, dtype=dtype)
                np.testing.assert_array_equal(cp.asnumpy(got), expected)
                np.testing.assert_array_equal(cp.asnumpy(out), expected)
                np.testing.assert_array_equal(cp.asnumpy(excl), np.concatenate([[0], expected[:-1]]).astype(dtype))


def test_api_hot_path_refuses_what_it_cannot_take():
    """What the hot path hands to the general path: the general path's errors and results."""
    x = cp.arange(1000, dtype=cp.int32)
    wider = cp.empty(1000, cp.int64)  # as NumPy: computed in dtype=, then cast into out's dtype
    assert distscan.cumsum(x, dtype=np.int32, out=wider, comm=COMM) is wider
    np.testing.assert_array_equal(cp.asnumpy(wider), np.cumsum(np.arange(1000, dtype=np.int32), dtype=np.int32))
    with pytest.raises((TypeError, ValueError)):
        distscan.cumsum(x, dtype=np.int32, out=np.empty(1000, np.int32), comm=COMM)
    with pytest.raises(ValueError):
        distscan.cumsum(x, dtype=np.int32, out=cp.empty(999, cp.int32), comm=COMM)
    strided = cp.arange(2000, dtype=cp.int64)[::2]
    np.testing.assert_array_equal(cp.asnumpy(distscan.cumsum(strided, comm=COMM)), np.cumsum(np.arange(0, 2000, 2)))
    out = cp.empty(2000, cp.int64)[::2]
    assert distscan.cumsum(strided, out=out, comm=COMM) is out
    np.testing.assert_array_equal(cp.asnumpy(out), np.cumsum(np.arange(0, 2000, 2)))
    assert distscan.cumsum(cp.empty(0, cp.float32), comm=COMM).shape == (0,)
    y = cp.arange(1, 1001, dtype=cp.int64)  # in place: out is x
    assert distscan.cumsum(y, out=y, comm=COMM) is y
    np.testing.assert_array_equal(cp.asnumpy(y), np.cumsum(np.arange(1, 1001)))


def test_results_without_out_take_the_spare_and_never_share_memory(rng):
    """A call without out= takes the memory its stream set aside after the last such call (up to
    gpu.SETTINGS.spare_max_bytes), whatever the dtype of that call, and sets aside the next: results
    kept alive never overlap, and each is NumPy's.  A larger result leaves nothing aside."""
    seed = int(rng.integers(1 << 30))
    print("seed", seed)
    r = np.random.default_rng(seed)
    stream = cp.cuda.Stream(non_blocking=True)
    small = gpu.SETTINGS.spare_max_bytes // 8
    cases = [(np.int64, 1000), (np.int64, 1000), (np.int32, 2000), (np.float64, 1000), (np.int64, 1001),
             (np.int64, small), (np.float64, small), (np.int64, small + 1), (np.int32, 999), (np.int32, 999)]
    kept = []
    with stream:
        for _ in range(2):  # the stream's first call prepares its scratch on the general path
            distscan.cumsum(cp.ones(10, np.int64), comm=COMM)
        for dtype, n in cases:
            host = r.integers(-100, 100, n).astype(dtype)
            x = cp.asarray(host)
            got = distscan.cumsum(x, dtype=dtype, comm=COMM)
            kept.append((got, np.cumsum(host, dtype=dtype)))
            spare = gpu.scratch.SCRATCHES[(x.device.id, stream.ptr)].spare
            nbytes = n * np.dtype(dtype).itemsize
            assert (spare is not None and spare[0] == nbytes) == (nbytes <= gpu.SETTINGS.spare_max_bytes)
            assert spare is None or spare[1].ptr != got.data.ptr
    stream.synchronize()
    spans = sorted((g.data.ptr, g.data.ptr + g.nbytes) for g, _ in kept)
    assert all(end <= start for (_, end), (start, _) in zip(spans, spans[1:])), "two results share memory"
    for got, expected in kept:
        np.testing.assert_array_equal(cp.asnumpy(got), expected)


@pytest.mark.parametrize("window,k", [(32, 1), (1024, 1), (1024, 2), (64, 3)])
def test_scratch_capacity_is_what_prepare_holds_without_reallocating(window, k):
    """The hot path launches while ``num_tiles <= capacity``; prepare() must then keep its
    arrays, and must grow them one tile later."""
    for tiles in (1, 31, 32, 33, 70_000, 1 << 17):
        s = gpu.scratch.TileScratch()
        s.prepare(tiles, window, k)
        cap = s.capacity(window, k)
        assert cap >= tiles
        generation = s.generation
        s.prepare(cap, window, k)
        assert s.generation == generation, (tiles, cap)
        s.prepare(cap + 1, window, k)
        assert s.generation == generation + 1, (tiles, cap)
    assert gpu.scratch.TileScratch().capacity(window, k) == -1


def test_a_launch_that_fails_leaves_the_stream_right(rng):
    """A hot-path launch that raises changes nothing on the device (the epoch and the tile
    counter are the kernel's to move on), so the calls after it are right."""
    seed = int(rng.integers(1 << 30))
    print("seed", seed)
    host = np.random.default_rng(seed).integers(-100, 100, 100_003).astype(np.int64)
    # A stream's handle is reused once an earlier test's stream is gone: an entry of another key
    # with this handle would be found first below and broken in vain (H100, 2026-11-25).
    gpu.hotpath.FAST.clear()
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        x = cp.asarray(host)
        for _ in range(2):  # the first call prepares the stream's scratch on the general path
            distscan.cumsum(x, dtype=np.int64, comm=COMM)
        ent = next(e for k, e in gpu.hotpath.FAST.items() if k[1] == stream.ptr and e is not gpu.hotpath.NOT_FAST)
        launch = ent.launch
        state = cp.asnumpy(ent.scratch.launch_state)

        def broken(*args):
            raise RuntimeError("launch refused")

        ent.launch = broken
        try:
            fresh = cp.empty_like(x)  # a call not seen before: a plain launch, not a graph's replay
            with pytest.raises(RuntimeError, match="launch refused"):
                distscan.cumsum(x, dtype=np.int64, out=fresh, comm=COMM)
        finally:
            ent.launch = launch
        np.testing.assert_array_equal(cp.asnumpy(ent.scratch.launch_state), state)
        for out in (None, cp.empty_like(x), fresh, fresh):
            got = distscan.cumsum(x, dtype=np.int64, out=out, comm=COMM)
            np.testing.assert_array_equal(cp.asnumpy(got), np.cumsum(host))


@pytest.mark.parametrize("dtype", [np.int64, np.float32])
def test_a_cupy_without_launch_kernel_takes_the_general_path(monkeypatch, rng, dtype):
    """Without ``cupy.cuda.driver.launchKernel`` (older CuPy) the hot paths of scan and reduce
    step aside, remembered as such, and the general path (CuPy's RawKernel) gives the result."""
    seed = int(rng.integers(1 << 30))
    print("seed", seed)
    host = np.random.default_rng(seed).integers(-50, 50, 70_001).astype(dtype)
    monkeypatch.delattr(cp.cuda.driver, "launchKernel")
    gpu.clear_caches()  # the entries are made again, without the launch call
    x = cp.asarray(host)
    want = np.cumsum(host, dtype=np.float64 if dtype == np.float32 else dtype)
    for _ in range(2):  # the second call finds the remembered verdict
        for out in (None, cp.empty_like(x)):
            got = cp.asnumpy(distscan.cumsum(x, dtype=dtype, out=out, comm=COMM))
            if dtype == np.float32:  # small integers: every partial sum is exact in float32
                np.testing.assert_array_equal(got, want.astype(np.float32))
            else:
                np.testing.assert_array_equal(got, want)
        assert distscan.reduce(x, comm=COMM) == want[-1]
    assert gpu.hotpath.FAST and all(e is gpu.hotpath.NOT_FAST for e in gpu.hotpath.FAST.values())
    assert gpu.reductions.REDUCTIONS and all(e is gpu.hotpath.NOT_FAST for e in gpu.reductions.REDUCTIONS.values())
    monkeypatch.undo()
    gpu.clear_caches()  # the entries made without the launch call go with it


def test_backend_refuses_an_out_it_would_write_past():
    op = OPS["sum"]
    types = scan_types(op, np.dtype(np.int32), np.dtype(np.int64))
    x = cp.arange(1000, dtype=cp.int32)
    for out in (cp.empty(1000, cp.int32), cp.empty(999, cp.int64)):
        with pytest.raises(TypeError):
            gpu.scan(x, op, types, out=out)


@pytest.mark.parametrize("dtype", [np.int32, np.float64])
def test_dropped_results_are_reused_and_held_ones_never(monkeypatch, rng, dtype):
    """A loop that drops its results gets them back without allocating (_recycle); a result
    still held, as a variable, through a view, or as the next call's input, keeps its values."""
    seed = int(rng.integers(1 << 30))
    print("seed", seed)
    r = np.random.default_rng(seed)
    n = 70_001
    stream = cp.cuda.Stream(non_blocking=True)

    def fresh(bound=100):
        host = r.integers(-bound, bound + 1, n).astype(dtype)
        return host, cp.asarray(host)

    def check(got, host):
        np.testing.assert_array_equal(cp.asnumpy(got), np.cumsum(host, dtype=dtype))

    with stream:
        for _ in range(3):  # the scratch on the general path, then two results for the ring
            distscan.cumsum(fresh()[1], dtype=dtype, comm=COMM)
        allocs = []
        real_alloc = cp.cuda.alloc
        monkeypatch.setattr(cp.cuda, "alloc", lambda nbytes: allocs.append(nbytes) or real_alloc(nbytes))
        for _ in range(6):
            host, x = fresh()
            check(distscan.cumsum(x, dtype=dtype, comm=COMM), host)
        assert allocs == [], "a loop that drops its results allocated"
        held_host, x = fresh()
        held = distscan.cumsum(x, dtype=dtype, comm=COMM)
        view_host, x = fresh()
        view = distscan.cumsum(x, dtype=dtype, comm=COMM)[1:]
        chained_host, y = fresh(1)  # a scan of a scan stays within int32
        for _ in range(2):
            y = distscan.cumsum(y, dtype=dtype, comm=COMM)  # the old result is this call's input
            chained_host = np.cumsum(chained_host, dtype=dtype)
        for _ in range(4):
            host, x = fresh()
            check(distscan.cumsum(x, dtype=dtype, comm=COMM), host)
        check(held, held_host)
        np.testing.assert_array_equal(cp.asnumpy(view), np.cumsum(view_host, dtype=dtype)[1:])
        np.testing.assert_array_equal(cp.asnumpy(y), chained_host)


def _thread_calls(seed, calls, stream, failures):
    """``calls`` scans and reductions of fresh arrays on ``stream``, each checked against NumPy."""
    rng = np.random.default_rng(seed)
    try:
        stream.use()  # this thread's current stream
        for i in range(calls):
            # Some sizes repeat (in bytes too: 1000 int64, 2000 int32): the threads then take
            # each other's spare results (gpu.SETTINGS.spare_max_bytes).
            n = int(rng.choice([1000, 2000, 70001, int(rng.integers(1, 300_000))]))
            dtype = (np.int32, np.int64)[i % 2]
            host = rng.integers(-100, 100, n).astype(dtype)
            x = cp.asarray(host)
            out = cp.empty_like(x) if i % 3 else None
            got = distscan.cumsum(x, dtype=dtype, out=out, comm=COMM)
            total = distscan.reduce(x, comm=COMM)
            if not np.array_equal(cp.asnumpy(got), np.cumsum(host, dtype=dtype)) or total != host.sum():
                failures.append((seed, i, n, dtype))
    except Exception as exc:  # noqa: BLE001 - reported by the test
        failures.append((seed, repr(exc)))


@pytest.mark.parametrize("stream", ["null", "per-thread"])
def test_host_threads_sharing_a_stream(stream, rng):
    """Threads launching on one stream take turns with the argument block and graphs (shared per
    stream), and their launches take their epochs in stream order; the per-thread default stream is a different stream in every
    thread (one handle), so each thread has its own scratch there and none waits for another."""
    base = int(rng.integers(1 << 30))
    print("thread seeds from", base)
    failures: list = []
    threads = [threading.Thread(target=_thread_calls, args=(base + t, 60,
                                                            cp.cuda.Stream.null if stream == "null" else
                                                            cp.cuda.Stream.ptds, failures)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    assert not failures, failures[:5]


def test_a_stream_per_call_keeps_the_caches_bounded(rng):
    host = rng.integers(-100, 100, 70001).astype(np.int64)
    x = cp.asarray(host)
    expected = np.cumsum(host)
    for i in range(4 * gpu.SETTINGS.max_stream_entries + 10):
        stream = cp.cuda.Stream(non_blocking=True)
        cp.cuda.Stream.null.synchronize()
        with stream:
            got = distscan.cumsum(x, comm=COMM)
            total = distscan.reduce(x, comm=COMM)
        stream.synchronize()
        np.testing.assert_array_equal(cp.asnumpy(got), expected)
        assert total == expected[-1]
    assert len(gpu.scratch.SCRATCHES) <= gpu.SETTINGS.max_stream_entries
    assert len(gpu.hotpath.FAST) <= 4 * gpu.SETTINGS.max_stream_entries and len(gpu.reductions.REDUCTIONS) <= 4 * gpu.SETTINGS.max_stream_entries


@pytest.mark.skipif(cp.cuda.runtime.getDeviceCount() < 2, reason="needs two GPUs")
def test_arrays_on_another_gpu_are_scanned_there(rng):
    """A part on a GPU other than the current one is scanned on its GPU (as torch does), with or
    without out= on that GPU; an out on another GPU is refused; the current device stays."""
    n = 1_000_003
    host = rng.integers(-100, 100, n).astype(np.int64)
    expected = np.cumsum(host)
    with cp.cuda.Device(1):
        x = cp.asarray(host)
        out = cp.empty_like(x)
        x32 = cp.asarray(host.astype(np.float32))
    with cp.cuda.Device(0):
        for _ in range(2):  # the second call: the hot path, if it were taken
            got = distscan.cumsum(x, comm=COMM)
            assert got.device.id == 1
            np.testing.assert_array_equal(cp.asnumpy(got), expected)
            assert distscan.cumsum(x, out=out, comm=COMM) is out
            np.testing.assert_array_equal(cp.asnumpy(out), expected)
            excl = distscan.cumsum(x, exclusive=True, comm=COMM)
            np.testing.assert_array_equal(cp.asnumpy(excl)[1:], expected[:-1])
            f64 = distscan.cumsum(x32, dtype=np.float64, comm=COMM)
            assert f64.device.id == 1 and f64.dtype == np.float64
            assert distscan.reduce(x, comm=COMM) == expected[-1]
        with pytest.raises(ValueError, match="GPU"):
            distscan.cumsum(x, out=cp.empty(n, cp.int64), comm=COMM)
        assert cp.cuda.runtime.getDevice() == 0
    torch = pytest.importorskip("torch")
    t = torch.from_numpy(host).to("cuda:1")
    with torch.cuda.device(0), cp.cuda.Device(0):
        got = distscan.cumsum(t, comm=COMM)
        assert got.device == t.device
        np.testing.assert_array_equal(got.cpu().numpy(), expected)
