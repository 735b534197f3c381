"""How the hot path launches (issue 10): it replays a CUDA graph of a call it has seen before,
a caller's own graph may capture scans (both rest on the launch state on the device, the
epoch and the tile counter of kernels/tile/tile_state.cuh: a replayed launch is a new launch), and
from gpu.SETTINGS.dependent_min_bytes moved a launch is a programmatic dependent of the kernel before
it.  Skipped without a GPU."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.devices import require_gpu

cp = require_gpu()
pytestmark = pytest.mark.gpu

import distscan  # noqa: E402
from distscan.backends import cuda as gpu  # noqa: E402
from mpi4py import MPI  # noqa: E402

COMM = MPI.COMM_SELF
LAST_EPOCH = 0xFFFFFFFF


def _entries(stream):
    return [e for k, e in gpu.hotpath.FAST.items() if k[1] == stream.ptr and e is not gpu.hotpath.NOT_FAST]


def _graphs(stream):
    return [g for e in _entries(stream) for g in (e.graphs or {}).values() if g is not gpu.hotpath.SEEN_ONCE]


class _CountLaunches:
    """Counts the plain launches of a stream's hot-path entries while in the block."""

    def __init__(self, stream):
        self.originals = {e: e.launch for e in _entries(stream)}
        self.count = 0

    def __enter__(self):
        for e, launch in self.originals.items():
            e.launch = self._counting(launch)
        return self

    def _counting(self, launch):
        def counted(*args):
            self.count += 1
            return launch(*args)
        return counted

    def __exit__(self, *exc):
        for e, launch in self.originals.items():
            e.launch = launch
        return False


def _data(r, n, dtype):
    # small integers: float sums stay exact, so results compare bitwise with NumPy's
    return r.integers(-3, 4, n).astype(dtype)


@pytest.mark.parametrize("dtype,n", [(np.int32, 65536), (np.float64, 1000), (np.int64, 1_000_003),
                                     (np.float32, (1 << 25) + 3)])
@pytest.mark.parametrize("with_out", [True, False])
def test_a_repeated_call_replays_its_graph_on_fresh_data(rng, dtype, n, with_out):
    """Calls with the same input, output and size: the second makes a graph, the later ones
    replay it (no plain launch) and read the input as it is now.  (1 << 25) + 3 float32 items
    take the persistent look-ahead kernel, launched as a dependent (sm_90+) or graphed."""
    seed = int(rng.integers(1 << 30))
    print("seed", seed)
    r = np.random.default_rng(seed)
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        x = cp.empty(n, dtype)
        out = cp.empty(n, dtype) if with_out else None
        counter = None
        for i in range(6):
            if i == 3:  # the first call prepares the scratch, the second is seen, the third graphed
                counter = _CountLaunches(stream).__enter__()
            host = _data(r, n, dtype)
            x.set(host, stream=stream)
            got = distscan.cumsum(x, dtype=dtype, out=out, comm=COMM)
            np.testing.assert_array_equal(cp.asnumpy(got, stream=stream), np.cumsum(host, dtype=dtype),
                                          err_msg=f"call {i}")
            del got  # a dropped small result comes back from the ring: the same pointer
        counter.__exit__()
    nbytes = n * np.dtype(dtype).itemsize
    dependent = 2 * nbytes >= gpu.SETTINGS.dependent_min_bytes and _entries(stream)[0].dependent is not None
    repeats = with_out or nbytes <= gpu.SETTINGS.spare_max_bytes
    if repeats and not dependent:  # large calls are dependent launches instead (a test below)
        assert _graphs(stream), "no graph was made"
        assert counter.count == 0, f"{counter.count} plain launches where graphs should have run"


def _repeat_on_fresh_data(r, x, out, stream, calls=4):
    """`calls` scans of x into out (the same arguments each time), each on fresh data."""
    for _ in range(calls):
        host = _data(r, x.size, x.dtype)
        x.set(host, stream=stream)
        distscan.cumsum(x, out=out, comm=COMM)
        np.testing.assert_array_equal(cp.asnumpy(out, stream=stream), np.cumsum(host))


def test_graphs_are_dropped_when_the_scratch_grows(rng):
    """A graph holds the scratch's pointers: when a scan of more tiles than the scratch holds
    reallocates it (here: prepare() as the general path calls it), the entry's graphs go, and
    the next repeats make new ones."""
    r = np.random.default_rng(int(rng.integers(1 << 30)))
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        x, out = cp.empty(70001, np.int64), cp.empty(70001, np.int64)
        _repeat_on_fresh_data(r, x, out, stream)
        before = _graphs(stream)
        assert before
        ent = _entries(stream)[0]
        scratch, generation = ent.scratch, ent.scratch.generation
        # what the general path does for a scan of one tile more than the scratch holds
        scratch.prepare(scratch.capacity(ent.plan.window, ent.plan.k_words) + 1, ent.plan.window, ent.plan.k_words)
        assert scratch.generation == generation + 1
        _repeat_on_fresh_data(r, x, out, stream)
        after = _graphs(stream)
    assert after and not any(g is h for g in after for h in before)


@pytest.mark.parametrize("dtype,n", [(np.int64, 100_003), (np.int32, 1 << 25)])
def test_scans_inside_the_callers_own_graph(rng, dtype, n):
    """A caller captures two dependent scans into a graph of its own and replays it on fresh
    data, with calls outside the graph on the same stream in between: each replay is a new
    launch (its own epoch), so every result is NumPy's."""
    seed = int(rng.integers(1 << 30))
    print("seed", seed)
    r = np.random.default_rng(seed)
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        x, y, z, w = (cp.zeros(n, dtype) for _ in range(4))
        for _ in range(3):  # the scratch and the hot path's entries exist before the capture
            distscan.cumsum(x, dtype=dtype, out=y, comm=COMM)
            distscan.cumsum(y, dtype=dtype, out=z, exclusive=True, comm=COMM)
        stream.begin_capture()
        distscan.cumsum(x, dtype=dtype, out=y, comm=COMM)
        distscan.cumsum(y, dtype=dtype, out=z, exclusive=True, comm=COMM)
        graph = stream.end_capture()
        for i in range(6):
            host = _data(r, n, dtype)
            x.set(host, stream=stream)
            graph.launch(stream)
            if i % 2:
                distscan.cumsum(z, dtype=dtype, out=w, comm=COMM)
            first = np.cumsum(host, dtype=dtype)
            second = np.concatenate([[0], np.cumsum(first, dtype=dtype)[:-1]]).astype(dtype)
            np.testing.assert_array_equal(cp.asnumpy(y, stream=stream), first, err_msg=f"replay {i}")
            np.testing.assert_array_equal(cp.asnumpy(z, stream=stream), second, err_msg=f"replay {i}")
            if i % 2:
                np.testing.assert_array_equal(cp.asnumpy(w, stream=stream), np.cumsum(second, dtype=dtype))


def test_calls_across_the_epoch_wrap(rng):
    """The launch with the last 32-bit epoch zeroes the stream's status words; the calls after
    it (plain and replayed, both kernels) count from epoch 1 and never take words planted with
    the epochs to come for their own."""
    r = np.random.default_rng(int(rng.integers(1 << 30)))
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        x, out = cp.empty(1_000_003, np.int64), cp.empty(1_000_003, np.int64)
        distscan.cumsum(x, out=out, comm=COMM)  # prepares the stream's scratch
        scratch = gpu.scratch.SCRATCHES[(x.device.id, stream.ptr)]
        for a in (scratch.words, scratch.subaggs, scratch.anchors):
            a[:] = (1 << 32) | 77  # words of epoch 1, each a plausible value
        scratch.launch_state[0] = np.uint64((LAST_EPOCH - 3) << 32)  # (the last launch's epoch << 32) | claims
        epochs = []
        for i in range(7):
            host = _data(r, x.size, np.int64)
            x.set(host, stream=stream)
            assert distscan.cumsum(x, out=out, comm=COMM) is out
            np.testing.assert_array_equal(cp.asnumpy(out, stream=stream), np.cumsum(host), err_msg=f"call {i}")
            epochs.append(int(scratch.launch_state[0].get(stream=stream)) >> 32)
    assert epochs == [LAST_EPOCH - 2, LAST_EPOCH - 1, 0, 1, 2, 3, 4]


@pytest.mark.parametrize("dtype,n,threshold", [(np.int64, 1000, 0), (np.int32, 65537, 0), (np.int64, 3_000_017, None),
                                               (np.int32, (1 << 25) + 5, None)])
def test_dependent_launches_read_what_the_kernel_before_wrote(rng, dtype, n, threshold):
    """A dependent launch starts while the kernel before it drains and must wait for its writes:
    a chain of scans, each of the previous one's output, with a CuPy kernel writing in between
    and results without out=, is NumPy's chain.  threshold 0: dependent launches at every size;
    None: the shipped threshold (these sizes are above it)."""
    with gpu.overrides(**({} if threshold is None else {"dependent_min_bytes": threshold})):
        _dependent_chain(rng, dtype, n)


def _dependent_chain(rng, dtype, n):
    assert n * 2 * np.dtype(dtype).itemsize >= gpu.SETTINGS.dependent_min_bytes
    seed = int(rng.integers(1 << 30))
    print("seed", seed)
    host = np.random.default_rng(seed).integers(-3, 4, n).astype(dtype)
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        a, b = cp.asarray(host), cp.empty(n, dtype)
        distscan.cumsum(a, dtype=dtype, out=b, comm=COMM)  # prepares the stream's scratch
        distscan.cumsum(b, dtype=dtype, exclusive=True, comm=COMM)  # the second entry
        dependents = [0]
        for ent in _entries(stream):
            if ent.dependent is None:
                pytest.skip("no dependent launches here (compute capability below 9.0, or no cuLaunchKernelEx)")
            launch = ent.dependent
            ent.dependent = lambda *args, launch=launch: (dependents.__setitem__(0, dependents[0] + 1), launch(*args))
        want = host
        for i in range(4):
            distscan.cumsum(a, dtype=dtype, out=b, comm=COMM)
            c = distscan.cumsum(b, dtype=dtype, exclusive=True, comm=COMM)
            cp.multiply(c, 3, out=a)  # a kernel of CuPy's between two of ours
            a -= 1
            first = np.cumsum(want, dtype=dtype)
            want = (np.concatenate([[0], np.cumsum(first, dtype=dtype)[:-1]]).astype(dtype) * dtype(3) - dtype(1))
        got = cp.asnumpy(a, stream=stream)
    np.testing.assert_array_equal(got, want)
    assert dependents[0] == 8
