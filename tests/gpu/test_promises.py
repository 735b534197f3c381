"""What the GPU fast paths promise, whatever a user does (issue 28): a result is never written
while anything can still reach its memory; a first call inside a caller's CUDA-graph capture
works, a refused one leaves nothing half made, and a graph replays on any stream; ``out=`` of
another dtype is NumPy's cast; float sums start from the same bits as on the CPU.
Skipped without a GPU."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

from tests.support.devices import require_gpu

cp = require_gpu()
pytestmark = pytest.mark.gpu

import distscan  # noqa: E402
from distscan.backends import cuda as gpu  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, invariant, rule  # noqa: E402
from mpi4py import MPI  # noqa: E402

COMM = MPI.COMM_SELF
N = 65536  # a result the ring keeps (gpu.SETTINGS.spare_max_bytes)


def _torch():
    return pytest.importorskip("torch")


# -- results held in every way a CuPy or PyTorch user holds them --------------------------------

def _capsule_values(capsule, like):
    from_capsule = getattr(cp, "fromDlpack", None)
    return None if from_capsule is None else cp.asnumpy(from_capsule(capsule))


# holder name -> (what a user keeps of a result y, the values behind it as a host array, what
# they must be given the result's values)
HOLDERS = {
    "array": (lambda y: y, lambda h, like: cp.asnumpy(h), lambda w: w),
    "view": (lambda y: y[1:], lambda h, like: cp.asnumpy(h), lambda w: w[1:]),
    "view()": (lambda y: y.view(), lambda h, like: cp.asnumpy(h), lambda w: w),
    "reshape": (lambda y: y.reshape(2, -1), lambda h, like: cp.asnumpy(h).reshape(-1), lambda w: w),
    "memory pointer": (lambda y: y.data,  # mp = y.data; del y
                       lambda h, like: cp.asnumpy(cp.ndarray(like.shape, like.dtype, memptr=h)), lambda w: w),
    "memory": (lambda y: y.data.mem,
               lambda h, like: cp.asnumpy(cp.ndarray(like.shape, like.dtype, memptr=cp.cuda.MemoryPointer(h, 0))),
               lambda w: w),
    "alias on the pointer": (lambda y: cp.ndarray(y.shape, y.dtype, memptr=y.data), lambda h, like: cp.asnumpy(h),
                             lambda w: w),
    "alias on the memory": (lambda y: cp.ndarray(y.shape, y.dtype, memptr=cp.cuda.MemoryPointer(y.data.mem, 0)),
                            lambda h, like: cp.asnumpy(h), lambda w: w),
    "dlpack capsule": (lambda y: y.__dlpack__(), _capsule_values, lambda w: w),
    "list": (lambda y: [y], lambda h, like: cp.asnumpy(h[0]), lambda w: w),
}


@pytest.mark.parametrize("holder", sorted(HOLDERS))
@pytest.mark.parametrize("dtype", [np.int32, np.float64])
def test_a_held_result_is_never_overwritten(holder, dtype, rng):
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        for _ in range(3):  # warm: the entry, the scratch, results in the ring
            distscan.cumsum(cp.asarray(rng.integers(-9, 9, N).astype(dtype)), dtype=dtype, comm=COMM)
        host = rng.integers(-9, 9, N).astype(dtype)
        y = distscan.cumsum(cp.asarray(host), dtype=dtype, comm=COMM)
        want = np.cumsum(host, dtype=dtype)
        keep, read, expect = HOLDERS[holder]
        held = keep(y)
        ptr = y.data.ptr
        del y
        gc.collect()
        for _ in range(6):  # the same shape and dtype, again and again
            other = distscan.cumsum(cp.asarray(rng.integers(-9, 9, N).astype(dtype)), dtype=dtype, comm=COMM)
            assert other.data.ptr != ptr, f"the memory held through {holder} was handed out again"
        stream.synchronize()
        got = read(held, want)
        if got is not None:
            np.testing.assert_array_equal(got, expect(want))


def test_a_weak_reference_never_resolves_to_another_result(rng):
    with cp.cuda.Stream(non_blocking=True):
        for _ in range(3):
            distscan.cumsum(cp.arange(N), comm=COMM)
        y = distscan.cumsum(cp.arange(N), comm=COMM)
        ref = weakref.ref(y)
        first = int(y[-1])
        del y
        for _ in range(6):
            z = distscan.cumsum(cp.ones(N, np.int64), comm=COMM)
            assert ref() is None or ref() is not z
            if ref() is not None:
                assert int(ref()[-1]) == first


@pytest.mark.parametrize("way", ["as_tensor", "from_dlpack"])
def test_torch_holders_keep_a_result(way, rng):
    torch = _torch()
    with cp.cuda.Stream(non_blocking=True) as s:
        for _ in range(3):
            distscan.cumsum(cp.arange(N), comm=COMM)
        y = distscan.cumsum(cp.arange(N), comm=COMM)
        t = torch.as_tensor(y, device="cuda") if way == "as_tensor" else torch.from_dlpack(y)
        del y
        for _ in range(6):
            distscan.cumsum(cp.ones(N, np.int64), comm=COMM)
        s.synchronize()
        assert int(t[-1]) == N * (N - 1) // 2


class HeldResults(RuleBasedStateMachine):
    """Calls of a few shapes and dtypes on one stream, results held in random ways and dropped in
    random order: whatever is held keeps its values."""

    held = Bundle("held")

    def __init__(self):
        super().__init__()
        self.stream = cp.cuda.Stream(non_blocking=True)
        self.rng = np.random.default_rng(0)
        self.snapshots = {}

    @rule(target=held, n=st.sampled_from([1000, 4096, N]), dtype=st.sampled_from([np.int32, np.int64]),
          holder=st.sampled_from(sorted(HOLDERS)), with_out=st.booleans())
    def call(self, n, dtype, holder, with_out):
        host = self.rng.integers(-9, 9, n).astype(dtype)
        with self.stream:
            out = cp.empty(n, np.int64) if with_out else None
            y = distscan.cumsum(cp.asarray(host), out=out, comm=COMM)
        key = len(self.snapshots) + 1000 * self.rng.integers(1 << 30)
        keep, read, expect = HOLDERS[holder]
        self.snapshots[key] = (keep(y), read, expect(np.cumsum(host)), np.cumsum(host))
        return key

    @rule(key=consumes(held))
    def drop(self, key):
        self.snapshots.pop(key, None)
        gc.collect()

    @rule(n=st.sampled_from([1000, 4096, N]))
    def churn(self, n):
        with self.stream:
            for _ in range(3):
                distscan.cumsum(cp.ones(n, np.int64), comm=COMM)

    @invariant()
    def held_results_keep_their_values(self):
        self.stream.synchronize()
        for held, read, want, like in list(self.snapshots.values()):
            if type(held).__name__ == "PyCapsule":
                continue  # a capsule is consumed once: its hold is tested by the memory it keeps
            got = read(held, like)
            np.testing.assert_array_equal(got, want)


TestHeldResults = HeldResults.TestCase
TestHeldResults.settings = settings(max_examples=25, stateful_step_count=20, deadline=None,
                                    suppress_health_check=list(HealthCheck))


# -- a caller's CUDA-graph capture ----------------------------------------------------------------

def _capture(stream, fn):
    with stream:
        stream.begin_capture()
        try:
            result = fn()
        finally:
            graph = stream.end_capture()
    return graph, result


@pytest.mark.parametrize("dtype,n", [(np.int16, 5000), (np.float32, (1 << 22) + 7), (np.int64, 1 << 21)])
@pytest.mark.parametrize("exclusive", [False, True])
def test_the_first_call_of_a_process_inside_a_capture(dtype, n, exclusive, rng):
    """With every cache empty (a new process): the plan, the hot-path entry and the status words
    are made inside the caller's capture; nothing of it is recorded into the caller's graph."""
    gpu.clear_caches()
    host = rng.integers(-1, 2, n).astype(dtype)  # float sums stay exact
    x = cp.asarray(host)
    cp.cuda.Device().synchronize()  # the copy ran on the default stream, which the capture does not wait for
    stream = cp.cuda.Stream(non_blocking=True)
    graph, y = _capture(stream, lambda: distscan.cumsum(x, exclusive=exclusive, comm=COMM))
    want = np.cumsum(host, dtype=y.dtype)
    if exclusive:
        want = np.concatenate([[0], want[:-1]]).astype(y.dtype)
    for _ in range(3):
        with stream:  # on the replay's stream: a non-blocking stream does not wait for the default one
            y[...] = -1
        graph.launch(stream)
        stream.synchronize()
        np.testing.assert_array_equal(cp.asnumpy(y), want)


@pytest.mark.parametrize("op", ["nanmax", "nanmin"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("cold", [True, False])
def test_an_exclusive_nanmax_s_first_row_is_recorded_in_a_capture(op, dtype, cold, rng):
    """An exclusive nanmax/nanmin's first result is its identity (-inf/+inf), written after the
    kernel by CuPy's fill on the call's stream (launch.write_first_row), not by the kernel: the
    fill must be recorded into the caller's graph and replayed, in a new process (cold: CuPy's
    fill kernel first loaded inside the capture) and with warm caches."""
    n = (1 << 20) + 3
    host = rng.standard_normal(n).astype(dtype)
    host[rng.random(n) < 0.1] = np.nan
    x = cp.asarray(host)
    if cold:
        gpu.clear_caches()
    else:
        distscan.scan(x, op, exclusive=True, comm=COMM)
    cp.cuda.Device().synchronize()
    stream = cp.cuda.Stream(non_blocking=True)
    graph, y = _capture(stream, lambda: distscan.scan(x, op, exclusive=True, comm=COMM))
    fold = np.fmax if op == "nanmax" else np.fmin
    identity = -np.inf if op == "nanmax" else np.inf
    want = np.concatenate([[identity], fold.accumulate(host)[:-1]]).astype(dtype)
    for _ in range(3):
        with stream:
            y[...] = 7  # the first row too: a replay that skipped the fill would leave 7 there
        graph.launch(stream)
        stream.synchronize()
        np.testing.assert_array_equal(cp.asnumpy(y), want)


def test_a_refused_call_inside_a_capture_leaves_nothing_half_made(rng):
    """A call that needs the host (a reduction) is refused inside a capture with a clear error;
    after the capture, the same calls on the same stream work (issue 28: this killed the CUDA
    context with an illegal address)."""
    gpu.clear_caches()
    stream = cp.cuda.Stream(non_blocking=True)
    host = rng.integers(-9, 9, 70_001)
    x = cp.asarray(host)
    cp.cuda.Device().synchronize()

    def refused():
        with pytest.raises(RuntimeError, match="capture"):
            distscan.reduce(x, comm=COMM)
        with pytest.raises(RuntimeError, match="capture"):
            distscan.cumprod(x.astype(np.float64), comm=COMM)  # products repair zeros on the host
        return distscan.cumsum(x, comm=COMM)

    graph, y = _capture(stream, refused)
    with stream:
        for _ in range(3):
            np.testing.assert_array_equal(cp.asnumpy(distscan.cumsum(x, comm=COMM)), np.cumsum(host))
            assert int(distscan.reduce(x, comm=COMM)) == int(host.sum())
    graph.launch(stream)
    stream.synchronize()
    np.testing.assert_array_equal(cp.asnumpy(y), np.cumsum(host))


def test_a_failed_scratch_set_up_leaves_the_scratch_as_it_was(rng, monkeypatch):
    """A scratch whose set-up fails half way (here the copy of the launch state) is not used
    half made: the next call sets it up again and is right."""
    gpu.clear_caches()
    real = cp.asarray
    calls = {"n": 0}

    def failing(a, *args, **kwargs):
        if isinstance(a, np.ndarray) and a.dtype == np.uint64 and calls["n"] == 0:
            calls["n"] += 1
            raise cp.cuda.memory.OutOfMemoryError(8, 0, 0)
        return real(a, *args, **kwargs)

    host = rng.integers(-9, 9, 100_003)
    x = cp.asarray(host)
    monkeypatch.setattr(cp, "asarray", failing)
    with pytest.raises(cp.cuda.memory.OutOfMemoryError):
        distscan.cumsum(x, comm=COMM)
    monkeypatch.undo()
    for _ in range(3):
        np.testing.assert_array_equal(cp.asnumpy(distscan.cumsum(x, comm=COMM)), np.cumsum(host))


def test_a_captured_graph_replays_on_another_stream_beside_direct_calls(rng):
    """The captured launch has status words of its own: replays on another stream run at the
    same time as direct calls on the capturing stream, and both are right."""
    n = 1 << 22
    host = rng.integers(-9, 9, n)
    x = cp.asarray(host)
    a, b = cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)
    with a:
        distscan.cumsum(x, comm=COMM)  # the capturing stream's own entry and scratch exist
    graph, y = _capture(a, lambda: distscan.cumsum(x, comm=COMM))
    other_host = rng.integers(-9, 9, n)
    other = cp.asarray(other_host)
    cp.cuda.Device().synchronize()  # the copies ran on the default stream; a and b do not wait for it
    for _ in range(5):
        graph.launch(b)
        with a:
            z = distscan.cumsum(other, comm=COMM)
        a.synchronize()
        b.synchronize()
        np.testing.assert_array_equal(cp.asnumpy(z), np.cumsum(other_host))
        np.testing.assert_array_equal(cp.asnumpy(y), np.cumsum(host))
    assert gpu.stats()["captured scratches"] >= 1


# -- NumPy's semantics on the GPU ---------------------------------------------------------------------

OUT_CASES = [(np.int32, np.float64), (np.float64, np.int64), (np.int64, np.float64), (np.float32, np.float16),
             (np.complex128, np.float64), (np.int64, np.int32), (np.uint8, np.uint8), (np.int8, np.bool_)]


@pytest.mark.parametrize("in_dtype,out_dtype", OUT_CASES)
@pytest.mark.parametrize("n", [1000, 1 << 20])
def test_out_of_another_dtype_is_numpys_cast(in_dtype, out_dtype, n, rng):
    host = (rng.standard_normal(n) * 3).astype(in_dtype) if np.dtype(in_dtype).kind in "fc" \
        else rng.integers(-5 if np.dtype(in_dtype).kind == "i" else 0, 6, n).astype(in_dtype)
    want = np.cumsum(host, out=np.zeros(n, out_dtype)) if np.dtype(in_dtype).kind != "c" else \
        np.cumsum(host, out=np.zeros(n, np.complex128)).real.astype(out_dtype)
    out = cp.zeros(n, out_dtype)
    with np.errstate(all="ignore"):
        got = distscan.cumsum(cp.asarray(host), out=out, comm=COMM)
    assert got is out
    if np.dtype(out_dtype).kind in "fc":
        np.testing.assert_allclose(cp.asnumpy(out), want, rtol=1e-5 if out_dtype != np.float16 else 1e-2,
                                   atol=1e-6 * n)
    else:
        np.testing.assert_array_equal(cp.asnumpy(out), want)


def test_out_of_another_dtype_computes_in_numpys_dtype():
    """np.cumsum(np.array([2**62, 2**62]), out=float64) computes in float64: no overflow."""
    out = cp.zeros(2)
    distscan.cumsum(cp.asarray(np.array([2**62, 2**62])), out=out, comm=COMM)
    np.testing.assert_array_equal(cp.asnumpy(out), np.cumsum(np.array([2**62, 2**62]), out=np.zeros(2)))
    out = cp.zeros(2, np.int64)
    distscan.cumsum(cp.asarray([1.5, 2.5]), out=out, comm=COMM)
    np.testing.assert_array_equal(cp.asnumpy(out), [1, 4])


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex64])
@pytest.mark.parametrize("n", [6, 70_001, 1 << 21])
def test_float_sums_start_from_the_bits_of_the_cpu(dtype, n):
    """An exclusive float sum starts with +0.0 on both backends; a prefix of -0.0 stays -0.0."""
    host = np.full(n, -0.0, dtype)
    host[n // 2:] = 1.0
    for exclusive in (False, True):
        cpu = distscan.cumsum(host, exclusive=exclusive, comm=COMM)
        got = cp.asnumpy(distscan.cumsum(cp.asarray(host), exclusive=exclusive, comm=COMM))
        assert got.tobytes() == cpu.tobytes(), f"exclusive={exclusive}: the first differing bits at " \
            f"{np.flatnonzero(got.view(np.uint8) != cpu.view(np.uint8))[:4]}"
        if exclusive:
            assert not np.signbit(np.real(got[0])) and (n < 2 or np.signbit(np.real(got[1])))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("n", [6, 70_001, 1 << 21])
@pytest.mark.parametrize("reverse", [False, True])
def test_compensated_sums_of_negative_zeros_keep_their_sign(dtype, n, reverse):
    """``compensated=True`` on the GPU: a run of -0.0 items sums to -0.0, as NumPy's cumsum and the
    CPU's loops (kernels/util/states.cuh writes the error negated, as distscan/ops/folds.py: the
    runs' Neumaier error and the tiles' TwoSum join added +0.0 to -0.0 before, 2026-11-25).  The
    items after the zeros are small integers (1, -1, -0.0: exact sums, some of them +0.0), so the
    GPU's bits equal the CPU's whatever the association; a complex sum per component, its
    imaginary parts -0.0 throughout."""
    first = np.full(n // 2, -0.0, dtype)
    tail = np.resize(np.array([1.0, -1.0, -0.0, 1.0], dtype), n - n // 2)
    host = np.concatenate([tail[::-1], first]) if reverse else np.concatenate([first, tail])
    if np.dtype(dtype).kind == "c":
        host.imag[:] = -0.0
    for exclusive in (False, True):
        cpu = distscan.cumsum(host, exclusive=exclusive, reverse=reverse, compensated=True, comm=COMM)
        got = cp.asnumpy(distscan.cumsum(cp.asarray(host), exclusive=exclusive, reverse=reverse,
                                         compensated=True, comm=COMM))
        assert got.tobytes() == cpu.tobytes(), f"exclusive={exclusive}: differing bytes at " \
            f"{np.flatnonzero(got.view(np.uint8) != cpu.view(np.uint8))[:4]}"
        in_scan_order = got[::-1] if reverse else got
        start = 1 if exclusive else 0  # an exclusive scan's first is +0.0
        assert np.all(np.signbit(np.real(in_scan_order[start:n // 2]))), "a sum of -0.0 items is -0.0"
        if np.dtype(dtype).kind == "c":
            assert np.all(np.signbit(np.imag(in_scan_order[start:]))), "imaginary sums of -0.0 are -0.0"
