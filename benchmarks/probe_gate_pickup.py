#!/usr/bin/env python3
"""How soon does the GPU start a scan once the host knows its seed: a fresh launch, a kernel
queued before behind ``cuStreamWaitValue32``, or a resident kernel that polls host memory?

    python benchmarks/probe_gate_pickup.py [--rounds 60]

Question (issue 30's 2-GPU rows; benchmarks/RESULTS.md, "Where the 2-GPU cumsum's time goes"):
40-45 µs lie between a carry's arrival on the host and the seeded scan's launch on the waiting
rank, and the fortieth session's queued launch (the seed copied to the device after a
``cuStreamWaitValue32``) lost to the fresh launch.  Before building the untried variants
(NOTES-gpu.md, fortieth session: the queued kernel reading its seed itself from host-mapped
memory; a resident gate), this measures the pickup alone on one GPU of this host: the time from
the host's decision (t0, after a 1 ms host spin that stands for the wait on the exchange) until
the host sees a word the kernel wrote into mapped memory.

- ``launch``: ``cuLaunchKernel`` through CuPy's driver binding (the hot path's call) at t0;
- ``wait value``: the kernel queued before the spin behind ``cuStreamWaitValue32`` on a
  host-mapped word, which the host writes at t0;
- ``resident``: a one-block kernel launched before the spin, its thread polling the mapped word
  with volatile loads (``__nanosleep(100)`` between them), which the host writes at t0.

Each kernel writes the round's number into mapped memory; rounds in turn, the first 5 dropped;
medians and the 10th and 90th percentiles in µs.  The mark's trip back to the host (PCIe) is in
every row alike.
"""

from __future__ import annotations

import argparse
import ctypes
import statistics
import time

import cupy as cp
import numpy as np

SOURCE = r'''
extern "C" __global__ void mark(unsigned long long addr, unsigned v) {
    volatile unsigned *p = (volatile unsigned *)addr;
    p[16] = v;
    __threadfence_system();
}
extern "C" __global__ void gate(unsigned long long addr, unsigned v) {
    volatile unsigned *p = (volatile unsigned *)addr;
    while (p[0] < v) __nanosleep(100);
    p[16] = v;
    __threadfence_system();
}
'''


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=60)
    a = ap.parse_args()
    libcuda = ctypes.CDLL("libcuda.so.1")
    wait = getattr(libcuda, "cuStreamWaitValue32_v2", None) or libcuda.cuStreamWaitValue32
    wait.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_uint]
    wait.restype = ctypes.c_int
    ptr = cp.cuda.runtime.hostAlloc(256, 2)  # cudaHostAllocMapped; UVA: the host pointer serves the device
    words = np.ctypeslib.as_array((ctypes.c_uint32 * 64).from_address(ptr))
    words[:] = 0
    mod = cp.RawModule(code=SOURCE)
    mark, gate = mod.get_function("mark"), mod.get_function("gate")
    launch = cp.cuda.driver.launchKernel
    arg_addr, arg_v = ctypes.c_uint64(ptr), ctypes.c_uint32(0)
    params = (ctypes.c_void_p * 2)(ctypes.cast(ctypes.pointer(arg_addr), ctypes.c_void_p),
                                   ctypes.cast(ctypes.pointer(arg_v), ctypes.c_void_p))
    stream = cp.cuda.Stream(non_blocking=True)

    def spin():
        t = time.perf_counter_ns()
        while time.perf_counter_ns() - t < 1_000_000:
            pass

    def see(v):
        while words[16] != v:
            pass

    res = {"launch": [], "wait value": [], "resident": []}
    v = 0
    for rnd in range(a.rounds + 5):
        # a fresh launch at t0 (the hot path's driver call, its argument block made before)
        v += 1
        arg_v.value = v
        spin()
        t0 = time.perf_counter_ns()
        launch(mark.kernel.ptr, 1, 1, 1, 1, 1, 1, 0, stream.ptr, ctypes.addressof(params), 0)
        see(v)
        t1 = time.perf_counter_ns()
        # queued behind a wait on the mapped word, released at t0
        v += 1
        arg_v.value = v
        assert wait(stream.ptr, ptr, v, 0) == 0  # CU_STREAM_WAIT_VALUE_GEQ
        launch(mark.kernel.ptr, 1, 1, 1, 1, 1, 1, 0, stream.ptr, ctypes.addressof(params), 0)
        spin()
        t2 = time.perf_counter_ns()
        words[0] = v
        see(v)
        t3 = time.perf_counter_ns()
        # a resident kernel polling the word, released at t0
        v += 1
        arg_v.value = v
        launch(gate.kernel.ptr, 1, 1, 1, 1, 1, 1, 0, stream.ptr, ctypes.addressof(params), 0)
        spin()
        t4 = time.perf_counter_ns()
        words[0] = v
        see(v)
        t5 = time.perf_counter_ns()
        stream.synchronize()
        if rnd >= 5:
            res["launch"].append((t1 - t0) / 1e3)
            res["wait value"].append((t3 - t2) / 1e3)
            res["resident"].append((t5 - t4) / 1e3)
    name = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)["name"].decode()
    print(f"{name}: from the host's decision to its mark seen by the host, µs, {a.rounds} rounds after a 1 ms spin")
    for k, ts in res.items():
        q = statistics.quantiles(ts, n=10)
        print(f"  {k:12s} median {statistics.median(ts):6.1f}  p10 {q[0]:6.1f}  p90 {q[-1]:6.1f}")


if __name__ == "__main__":
    main()
