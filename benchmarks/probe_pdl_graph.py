"""What a CUDA graph and programmatic dependent launch (PDL) could cut from a small call
(issue 10, eleventh pass; sm_90; ``PYTHONPATH=$PWD python benchmarks/probe_pdl_graph.py``;
log: benchmarks/logs/probe-pdl-graph-h100.txt).
(A) host cost per launch, loop of 3000 + one sync: cuLaunchKernel (CuPy driver.launchKernel),
    cuLaunchKernelEx (ctypes, with and without the PDL attribute), a one-kernel CUDA graph replayed.
(B) GPU time of 200 dependent pairs (produce 2^16 floats -> consume them), events around the
    chain, the consumer launched with and without PDL (it waits with griddepcontrol.wait).
"""
import ctypes, time, statistics, sys
import numpy as np, cupy as cp

SRC = r'''
extern "C" __global__ void produce(float* a, int n, float v) {
  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] = v + i; }
extern "C" __global__ void consume(const float* a, float* b, int n) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) b[i] = 2.0f * a[i]; }
extern "C" __global__ void spin(long long cycles) {
  long long t0 = clock64(); while (clock64() - t0 < cycles) { } }
'''
mod = cp.RawModule(code=SRC, options=("-arch=sm_90",))
produce, consume, spin = (mod.get_function(k).kernel for k in ("produce", "consume", "spin"))
n = 1 << 16
a, b = cp.zeros(n, cp.float32), cp.zeros(n, cp.float32)
grid, block = (n + 255) // 256, 256
cu = ctypes.CDLL("libcuda.so.1")

class Attr(ctypes.Structure):
    _fields_ = [("id", ctypes.c_uint32), ("pad", ctypes.c_uint32), ("val", ctypes.c_ubyte * 64)]
class Config(ctypes.Structure):
    _fields_ = [("gx", ctypes.c_uint), ("gy", ctypes.c_uint), ("gz", ctypes.c_uint), ("bx", ctypes.c_uint),
                ("by", ctypes.c_uint), ("bz", ctypes.c_uint), ("smem", ctypes.c_uint), ("stream", ctypes.c_void_p),
                ("attrs", ctypes.POINTER(Attr)), ("nattrs", ctypes.c_uint)]
assert ctypes.sizeof(Attr) == 72 and Config.stream.offset == 32 and ctypes.sizeof(Config) == 56
cu.cuLaunchKernelEx.argtypes = [ctypes.POINTER(Config), ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
pdl = Attr(); pdl.id = 6; pdl.val[0] = 1  # CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, allowed = 1

def argblock(*vals):
    vals = list(vals)
    arr = (ctypes.c_void_p * len(vals))(*[ctypes.addressof(v) for v in vals])
    return vals, arr

stream = cp.cuda.Stream(non_blocking=True)
with stream:
    p_keep, p_args = argblock(ctypes.c_uint64(a.data.ptr), ctypes.c_int(n), ctypes.c_float(1.0))
    s_keep, s_args = argblock(ctypes.c_longlong(30_000_000))  # ~15 ms: the host queues the chain meanwhile
    c_keep, c_args = argblock(ctypes.c_uint64(a.data.ptr), ctypes.c_uint64(b.data.ptr), ctypes.c_int(n))
    launch = cp.cuda.driver.launchKernel
    def plain(fn, args):
        launch(fn.ptr, grid, 1, 1, block, 1, 1, 0, stream.ptr, ctypes.addressof(args), 0)
    cfg_plain = Config(grid, 1, 1, block, 1, 1, 0, stream.ptr, None, 0)
    cfg_pdl = Config(grid, 1, 1, block, 1, 1, 0, stream.ptr, ctypes.pointer(pdl), 1)
    def ex(cfg, fn, args):
        r = cu.cuLaunchKernelEx(ctypes.byref(cfg), fn.ptr, ctypes.addressof(args), None)
        if r: raise RuntimeError(f"cuLaunchKernelEx: {r}")
    stream.begin_capture()
    plain(produce, p_args)
    graph = stream.end_capture()

    def wall(f, reps=3000):
        f(); stream.synchronize()
        ts = []
        for _ in range(5):
            t = time.perf_counter()
            for _ in range(reps): f()
            stream.synchronize()
            ts.append(1e6 * (time.perf_counter() - t) / reps)
        return statistics.median(ts)

    print(f"(A) host us per launch, one 2^16 kernel, loop of 3000 (median of 5), {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
    for name, f in [("cuLaunchKernel (CuPy driver.launchKernel)", lambda: plain(produce, p_args)),
                    ("cuLaunchKernelEx, no attribute (ctypes)", lambda: ex(cfg_plain, produce, p_args)),
                    ("cuLaunchKernelEx, PDL attribute (ctypes)", lambda: ex(cfg_pdl, produce, p_args)),
                    ("one-kernel CUDA graph, Graph.launch", lambda: graph.launch(stream)),
                    ("distscan.cumsum(x, out=y), float32", None)]:
        if f is None:
            sys.path.insert(0, "."); import distscan
            x = cp.ones(n, cp.float32); y = cp.empty_like(x)
            f = lambda: distscan.cumsum(x, out=y)
        print(f"  {name:45s} {wall(f):6.2f}")

    print("(B) 200 dependent pairs produce -> consume (2^16 floats), GPU us per pair (events, median of 7;"
          " queued behind a spinning kernel, so the GPU never waits for the host)")
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    for name, second in [("consumer without PDL (cuLaunchKernelEx)", lambda: ex(cfg_plain, consume, c_args)),
                         ("consumer with PDL", lambda: ex(cfg_pdl, consume, c_args)),
                         ("consumer without PDL (again)", lambda: ex(cfg_plain, consume, c_args)),
                         ("consumer with PDL (again)", lambda: ex(cfg_pdl, consume, c_args))]:
        ts = []
        for _ in range(7):
            stream.synchronize()
            launch(spin.ptr, 1, 1, 1, 1, 1, 1, 0, stream.ptr, ctypes.addressof(s_args), 0)
            start.record(stream)
            for _ in range(200):
                plain(produce, p_args); second()
            stop.record(stream); stop.synchronize()
            ts.append(cp.cuda.get_elapsed_time(start, stop) * 1e3 / 200)
        ok = bool(cp.all(b == 2 * (1.0 + cp.arange(n, dtype=cp.float32))))
        b.fill(0); stream.synchronize()
        print(f"  {name:45s} {statistics.median(ts):6.2f}  result ok: {ok}")
    # the host issues 400 launches per chain: if that exceeds the GPU time, (B) measures the host
    stream.synchronize()
    t = time.perf_counter()
    for _ in range(200):
        plain(produce, p_args); ex(cfg_pdl, consume, c_args)
    host = 1e6 * (time.perf_counter() - t) / 200
    stream.synchronize()
    print(f"  host time to issue one pair: {host:.2f} us (200 pairs: {200 * host / 1e3:.2f} ms, under the spin's ~15 ms)")
