"""How long a launch and a small distscan call take on the host right after a stream
synchronisation, after an idle sleep, after a busy host wait, and back to back (one GPU).

    python benchmarks/probe_launch_after_idle.py

Question (the 2-GPU rows of issue 30, benchmarks/RESULTS.md "A launch after a wait, and one
queued before it"): the seeded scan's launch after the ranks' exchange took 26-31 us in situ
(probe_multi_gpu_steps.py), where a loop of launches takes 5-8: is that the launch after the
thread waited?  Host time of one ``RawKernel`` launch and of ``distscan.cumsum`` of 2^16 float32,
30 of each situation, medians (µs).
import time, statistics as st, ctypes
import numpy as np, cupy as cp
import distscan
spin = cp.RawKernel(r'''
extern "C" __global__ void spin(long long ns) {
    long long t0; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    long long t = t0; while (t - t0 < ns) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
}''', 'spin')
tiny = cp.RawKernel(r'''extern "C" __global__ void tiny(int *p) { if (threadIdx.x == 0) p[0] += 1; }''', 'tiny')
buf = cp.zeros(4, cp.int32)
x = cp.random.random(1 << 16, dtype=cp.float32); y = cp.empty_like(x)
big = cp.random.random(1 << 28, dtype=cp.float32); ybig = cp.empty_like(big)
s = cp.cuda.get_current_stream()
def t_us(fn):
    t = time.perf_counter_ns(); fn(); return (time.perf_counter_ns() - t) / 1e3
launch = lambda: tiny((1,), (32,), (buf,))
call = lambda: distscan.cumsum(x, out=y)
for _ in range(50): launch(); call()
s.synchronize()
res = {}
for name, fn in (("tiny launch", launch), ("cumsum 2^16", call)):
    r = {"back to back": [], "after sync of a 400us kernel": [], "after 1 ms sleep": [], "after sync of a 2^28 cumsum": [],
         "after busy 200us host wait": []}
    for rep in range(30):
        r["back to back"].append(t_us(fn))
        s.synchronize()
        spin((1,), (1,), (np.int64(400_000),)); s.synchronize()
        r["after sync of a 400us kernel"].append(t_us(fn))
        s.synchronize(); time.sleep(0.001)
        r["after 1 ms sleep"].append(t_us(fn))
        s.synchronize()
        distscan.cumsum(big, out=ybig); s.synchronize()
        r["after sync of a 2^28 cumsum"].append(t_us(fn))
        s.synchronize(); t = time.perf_counter_ns()
        while time.perf_counter_ns() - t < 200_000: pass
        r["after busy 200us host wait"].append(t_us(fn))
        s.synchronize()
    res[name] = r
print(cp.cuda.runtime.getDeviceProperties(0)["name"].decode())
for name, r in res.items():
    for k, v in r.items():
        print(f"{name:12s} {k:32s} median {st.median(v):7.1f} us  min {min(v):7.1f}  max {max(v):7.1f}")
