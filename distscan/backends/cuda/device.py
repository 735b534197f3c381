"""The device side of the CUDA backend that every other module needs: CuPy (or None), facts
about each GPU, the keys of streams, whether a stream is capturing into a caller's graph, and
a stream of the backend's own for the work a capture must not record."""

from __future__ import annotations

import threading

from ..._caches import publish
from .settings import SETTINGS

try:  # the backend imports without CuPy; get_backend("cuda") checks availability
    import cupy as cp
    current_device = cp.cuda.runtime.getDevice
except Exception:  # noqa: BLE001
    cp = current_device = None

PER_THREAD_STREAM = 2  # cudaStreamPerThread: one handle, a different stream in every host thread


def require_cupy():
    if cp is None:
        raise RuntimeError("the CUDA backend needs CuPy (pip install cupy-cuda12x or cupy-cuda13x) and an NVIDIA GPU")
    return cp


DEVICE_INFO: dict = {}


def device_info(dev_id: int):
    info = DEVICE_INFO.get(dev_id)
    if info is None:
        dev = require_cupy().cuda.Device(dev_id)
        cc_num = int(dev.compute_capability)
        cc_major = cc_num // 10
        if cc_major < 7:
            raise RuntimeError(
                f"GPU {dev_id} has compute capability {cc_major}.x; distscan's kernels need 7.0 or newer "
                "(ld.relaxed.gpu / st.relaxed.gpu for the look-back)"
            )
        attrs = dev.attributes
        info = {"sms": attrs["MultiProcessorCount"], "cc": cc_num, "l2": attrs["L2CacheSize"],
                # peak DRAM bytes/s (double data rate; kHz, bits); None where not reported
                "dram_bw": (2e3 * attrs["MemoryClockRate"] * attrs["GlobalMemoryBusWidth"] / 8
                            if attrs.get("MemoryClockRate") and attrs.get("GlobalMemoryBusWidth") else None)}
        DEVICE_INFO[dev_id] = info
    return info


def stream_key(stream_ptr: int):
    """What the caches key a stream by: its handle, and the host thread for the per-thread
    default stream (whose handle is the same in every thread)."""
    return stream_ptr if stream_ptr != PER_THREAD_STREAM else (stream_ptr, threading.get_ident())


def remember(cache: dict, key, value, cap: int = None):
    """``cache[key] = value``, dropping the oldest entries past ``cap`` (under _caches.publish's
    lock: host threads on streams of their own fill these caches at once)."""
    return publish(cache, key, value, SETTINGS.max_stream_entries if cap is None else cap)


def runtime_function(name: str):
    """CuPy's ``cupy.cuda.runtime.<name>``, or None (no CuPy, or one without it)."""
    try:
        return getattr(cp.cuda.runtime, name)
    except AttributeError:
        return None


# cudaStreamIsCapturing (the hot path calls it inline: is_capturing says what it means)
stream_capture_status = runtime_function("streamIsCapturing")


def graphs_available() -> bool:
    """Whether this CuPy can tell a capturing stream (and so whether the hot path may make graphs)."""
    return stream_capture_status is not None


def is_capturing(stream_ptr: int) -> bool:
    """Whether the stream records into a graph (someone's capture) rather than runs."""
    if stream_capture_status is None:  # a CuPy without the query cannot capture either
        return False
    try:
        return stream_capture_status(stream_ptr) != 0
    except Exception:  # noqa: BLE001 - e.g. the legacy stream while another stream captures:
        return True    # the plain launch reports what CUDA thinks of that


SIDE_STREAMS: dict = {}


def side_stream():
    """A stream of the current device's own, never capturing: the one place where a call inside a
    caller's capture may set up its scratch (the caller's graph records nothing of it)."""
    dev_id = current_device()
    stream = SIDE_STREAMS.get(dev_id)
    if stream is None:
        stream = SIDE_STREAMS[dev_id] = cp.cuda.Stream(non_blocking=True)
    return stream


def refuse_in_capture(stream_ptr: int, what: str) -> None:
    """Raise before any work is queued when a call that needs the host runs inside a capture."""
    if is_capturing(stream_ptr):
        raise RuntimeError(f"{what} inside a CUDA graph capture: it needs a value on the host, which a "
                           "capture cannot give; call it outside the capture")


def reduction_columns(x):
    """``(x as (n, w) columns, n, w)`` for a reduction.  Where it holds items, a stream that is
    capturing a graph is refused: a reduction copies its result to the host."""
    x = x.reshape(-1, 1) if x.ndim == 1 else x
    n, w = x.shape
    if n and w:
        refuse_in_capture(cp.cuda.get_current_stream().ptr, "a reduction (and so a scan across ranks)")
    return x, n, w


def memset_async(ptr: int, value: int, nbytes: int, stream_ptr: int) -> None:
    cp.cuda.runtime.memsetAsync(ptr, value, nbytes, stream_ptr)
