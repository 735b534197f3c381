"""The timing every GPU benchmark shares (benchmarks/README.md: how to time).

``events_median``        CUDA events around each call after warm-up; the median
``events_interleaved``   several implementations in turn within every repetition, in a new
                         random order each time, the L2 flushed before each call; with
                         ``hide_host``, the GPU's time alone (the host's work before the launch
                         hidden behind a sleep on the GPU)
``wall_per_call``        a loop of calls and one synchronisation: host cost included
``wall_median``          the median wall time of single calls (a peer that synchronises itself: JAX)
``jax_on_gpu``           ``(jax, jax.numpy)`` with float64 kept, or None without JAX or a GPU for it
``ranks_interleaved``    µs per call of several host calls over MPI ranks, in turn within every
                         round (the slowest rank's loop, after a barrier)
``bare_cumsum``          the bare pipeline of a rank's part: ``np.cumsum`` + ``Exscan`` + add
``make_cub``             CUB's inclusive sum through cuda.compute (None and why when missing)
``lead_multiples``, ``lead_of``  the sweeps' ``--leads`` and the lead a multiple of a plan's default gives
``SELF``                 MPI.COMM_SELF (None without mpi4py): one-rank calls without COMM_WORLD's agreement
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import time

import numpy as np

try:
    import cupy as cp
except ImportError:  # plots and reports need no GPU
    cp = None

try:
    from mpi4py import MPI
    SELF = MPI.COMM_SELF
except ImportError:  # pragma: no cover
    SELF = None


def events_median(fn, reps, warm=3):
    for _ in range(warm):
        fn()
    times = []
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    for _ in range(reps):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) * 1e-3)
    return statistics.median(times), times


_SLEEP = None


def gpu_sleep(microseconds: int) -> None:
    """Keep the current stream busy for about ``microseconds`` (one thread spinning on
    ``__nanosleep``), touching no memory: the host then queues the next calls while the GPU is
    still asleep, and events recorded after the sleep time the GPU's work alone."""
    global _SLEEP
    if _SLEEP is None:
        _SLEEP = cp.RawKernel(r'''
extern "C" __global__ void gpu_sleep(long long cycles) {
    const long long t0 = clock64();
    while (clock64() - t0 < cycles) __nanosleep(1000);
}''', "gpu_sleep")
    _SLEEP((1,), (1,), (cp.int64(int(microseconds) * 2000),))  # SM clocks <= 2 GHz: at least that long


def events_interleaved(impls: dict, reps, warm=3, hide_host=False, sleep_us=2000):
    """``{name: median seconds}`` of one call of each implementation between two events, the
    implementations taken in turn within every repetition, so that a drift of the host or the
    GPU (clocks, other load) falls on all of them alike, and in a new random order every
    repetition (seeded): in a fixed order the same kernel read up to 4 % apart depending on
    which implementation it followed (benchmarks/RESULTS.md, "Issue 10, ninth pass").  Before
    each call the L2 is flushed
    (a write of twice its size, then a synchronisation): otherwise a call that fits in L2 would
    find there what the implementation before it left (its own input and output, or the other
    one's output to write back), and the order would favour some.  ``hide_host``: a sleep of
    ``sleep_us`` (2 ms) on the GPU after the flush, before the first event, so that what the host
    does before its launches (argument checks, plans, allocations) happens while the GPU sleeps:
    the time is the GPU's alone (host work past the sleep would still show)."""
    for fn in impls.values():
        for _ in range(warm):
            fn()
    scrub = cp.empty(2 * cp.cuda.Device().attributes["L2CacheSize"], cp.uint8)
    stream = cp.cuda.get_current_stream()
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    times = {name: [] for name in impls}
    order = random.Random(0)
    for _ in range(reps):
        for name in order.sample(list(impls), len(impls)):
            fn = impls[name]
            scrub.fill(0)
            stream.synchronize()
            if hide_host:
                gpu_sleep(sleep_us)
            start.record()
            fn()
            stop.record()
            stop.synchronize()
            times[name].append(cp.cuda.get_elapsed_time(start, stop) * 1e-3)
    return {name: statistics.median(t) for name, t in times.items()}


def device_copy(dst, src):
    """A call (for :func:`events_interleaved`) that copies ``src``'s bytes into ``dst`` on the
    device, on the current stream: the bandwidth every scan is measured against."""
    return lambda: cp.cuda.runtime.memcpyAsync(dst.data.ptr, src.data.ptr, src.nbytes, 3,
                                               cp.cuda.get_current_stream().ptr)


def copy_bandwidth(nbytes: int, reps: int) -> float:
    """GB/s of a device-to-device copy of ``nbytes`` (read and written: twice that many bytes
    moved), median of ``reps`` (:func:`events_interleaved`, L2 flushed)."""
    src, dst = cp.empty(nbytes, cp.uint8), cp.empty(nbytes, cp.uint8)
    return 2 * nbytes / events_interleaved({"copy": device_copy(dst, src)}, reps)["copy"] / 1e9


def wall_per_call(fn, reps=2000, warm=50):
    for _ in range(warm):
        fn()
    cp.cuda.get_current_stream().synchronize()
    best = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        cp.cuda.get_current_stream().synchronize()
        best.append((time.perf_counter() - t0) / reps)
    return statistics.median(best)


def wall_median(fn, reps):
    """Median wall time of ``reps`` calls of ``fn`` (which waits for its own work: a JAX call's
    ``block_until_ready``), after two unmeasured ones."""
    fn()
    fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def jax_on_gpu(preallocate: bool = True):
    """``(jax, jax.numpy)`` with float64 kept (``jax_enable_x64``), or None where JAX is missing or
    has no GPU.  ``preallocate=False``: JAX takes GPU memory as it needs it, leaving the rest to
    CuPy (set before JAX starts).  JAX's start leaves the last GPU current on a host of several:
    a caller that makes CuPy arrays after it makes GPU 0 current again."""
    if not preallocate:
        os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    try:
        import jax
        import jax.numpy as jnp
        if not any(d.platform == "gpu" for d in jax.devices()):
            return None
        jax.config.update("jax_enable_x64", True)
        return jax, jnp
    except Exception:  # noqa: BLE001 - no JAX, or no GPU for it: the caller leaves its column out
        return None


def ranks_interleaved(comm, cases: dict, calls: int, rounds: int, warm: int = 50) -> dict:
    """µs per call of each of ``cases`` (name -> function of no arguments, collective), one loop of
    ``calls`` each in turn within every one of ``rounds`` rounds (so that a slow moment hits all of
    them), after ``warm`` untimed calls and a barrier; the slowest rank's time.  Name -> the rounds'
    figures."""
    times = {name: [] for name in cases}
    for _ in range(rounds):
        for name, fn in cases.items():
            for _ in range(warm):
                fn()
            comm.Barrier()
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            dt = comm.allreduce(time.perf_counter() - t0, op=MPI.MAX)
            times[name].append(dt / calls * 1e6)
    return times


def checked_per_call(comm, cases: dict, out, ref, calls: int, rounds: int) -> dict:
    """:func:`ranks_interleaved` of ``cases``, each first checked: ``out`` zeroed, 50 calls, then
    ``out`` must equal ``ref`` (which also warms each)."""
    for name, fn in cases.items():
        out[...] = 0
        for _ in range(50):
            fn()
        assert np.array_equal(out, ref), name
    return ranks_interleaved(comm, cases, calls, rounds, warm=0)  # interleaved: a slow moment hits all


def bare_cumsum(comm, x, out):
    """The bare pipeline the exchange benchmarks measure distscan against, as a function of no
    arguments: ``np.cumsum(x, out=out)``, ``comm.Exscan`` of its last element (an int64 sum), the
    offset added on every rank but the first."""
    send, recv = np.zeros(1, np.int64), np.zeros(1, np.int64)
    rank = comm.rank

    def bare():
        np.cumsum(x, out=out)
        send[0] = out[-1]
        comm.Exscan(send, recv, op=MPI.SUM)
        if rank:
            np.add(out, recv[0], out=out)
    return bare


def print_per_call(times: dict, base: str, header: str) -> dict:
    """Each case's median µs per call (its fastest round) and its ratio to ``base``'s, under ``header``."""
    med = {k: statistics.median(v) for k, v in times.items()}
    print(header)
    width = max(len(k) for k in times) + 2
    for k, v in times.items():
        print(f"  {k:<{width}}{med[k]:8.2f} ({min(v):.2f})   × {base} {med[k] / med[base]:.2f}")
    return med


def lead_multiples(text, default: list) -> list:
    """A sweep's ``--leads``: comma-separated multiples of the default plan's reduction lead
    (``auto``: the plan's own, None; ``0``: none), or ``default`` where not given."""
    return default if not text else [None if v == "auto" else float(v) for v in text.split(",")]


def lead_of(multiple, default_lead: int):
    """The lead (tiles) ``multiple`` times ``default_lead`` gives: None stays None (the plan's
    own), 0 is none, any other at least one tile."""
    return None if multiple is None else 0 if multiple == 0 else max(1, round(multiple * default_lead))


def make_cub(x, y, n):
    try:
        import os

        import cuda

        # a `cuda` package of the image (cuda-python) may shadow the wheel's cuda/compute
        for p in sys.path:
            d = os.path.join(p, "cuda")
            if os.path.isdir(os.path.join(d, "compute")) and d not in list(cuda.__path__):
                cuda.__path__.append(d)
        import cuda.compute as cc
    except Exception as exc:  # noqa: BLE001
        return None, f"cuda.compute unavailable: {exc!r}"
    try:
        s = cc.make_inclusive_scan(d_in=x, d_out=y, op=cc.OpKind.PLUS, init_value=None)
        nbytes = s(temp_storage=None, d_in=x, d_out=y, op=cc.OpKind.PLUS, init_value=None, num_items=n)
        tmp = cp.empty(max(int(nbytes), 1), dtype=cp.uint8)

        def run():
            s(temp_storage=tmp, d_in=x, d_out=y, op=cc.OpKind.PLUS, init_value=None, num_items=n)

        return run, None
    except Exception as exc:  # noqa: BLE001
        return None, f"cuda.compute failed: {exc!r}"
