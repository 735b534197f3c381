"""What a launch costs on the critical path after a wait, against a kernel queued before the wait
behind cuStreamWaitValue32 on a host-mapped flag (one GPU): the time from the host's decision
(t0) until the host sees the kernel's mark in mapped memory.

    python benchmarks/probe_queued_launch.py

60 rounds of each (the first 5 dropped), a 1 ms sleep or a 1 ms host spin before the decision;
medians and the 10th and 90th percentiles (µs).  benchmarks/RESULTS.md, "A launch after a wait,
and one queued before it".
import ctypes, time, statistics as st
import numpy as np, cupy as cp
libcuda = ctypes.CDLL("libcuda.so.1")
wait = getattr(libcuda, "cuStreamWaitValue32_v2", None) or libcuda.cuStreamWaitValue32
wait.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_uint]
wait.restype = ctypes.c_int
ptr = cp.cuda.runtime.hostAlloc(256, 2)  # cudaHostAllocMapped; UVA: the host pointer serves the device
flags = np.ctypeslib.as_array((ctypes.c_uint32 * 64).from_address(ptr))
flags[:] = 0
mark = cp.RawKernel(r'''extern "C" __global__ void mark(unsigned long long addr, unsigned v) {
    volatile unsigned *p = (volatile unsigned *)addr; p[16] = v; __threadfence_system(); }''', 'mark')
s = cp.cuda.Stream(non_blocking=True)
def see(e):
    while flags[16] != e: pass
res = {"launch after 1 ms sleep": [], "queued behind a wait, released after 1 ms sleep": [],
       "launch after a 1 ms host spin": [], "queued, released after a 1 ms host spin": []}
def sleep(): time.sleep(0.001)
def spin():
    t = time.perf_counter_ns()
    while time.perf_counter_ns() - t < 1_000_000: pass
e = 0
with s:
    for rep in range(60):
        for pause, a, b in ((sleep, "launch after 1 ms sleep", "queued behind a wait, released after 1 ms sleep"),
                            (spin, "launch after a 1 ms host spin", "queued, released after a 1 ms host spin")):
            e += 1
            pause(); t0 = time.perf_counter_ns()
            mark((1,), (1,), (np.uint64(ptr), np.uint32(e)))
            see(e); res[a].append((time.perf_counter_ns() - t0) / 1e3)
            e += 1
            rc = wait(s.ptr, ptr, e, 0)  # CU_STREAM_WAIT_VALUE_GEQ
            assert rc == 0, rc
            mark((1,), (1,), (np.uint64(ptr), np.uint32(e)))
            pause(); t0 = time.perf_counter_ns()
            flags[0] = e
            see(e); res[b].append((time.perf_counter_ns() - t0) / 1e3)
print(cp.cuda.runtime.getDeviceProperties(0)["name"].decode())
for k, v in res.items():
    v = v[5:]
    print(f"{k:52s} median {st.median(v):6.1f} us  p10 {sorted(v)[len(v)//10]:6.1f}  p90 {sorted(v)[len(v)*9//10]:6.1f}")
