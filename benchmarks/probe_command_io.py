#!/usr/bin/env python3
"""Where the GPU command's time goes before and around its scan: start-up, reads, copies, writes.

    python3 benchmarks/probe_command_io.py OUT.json [--gib 2] [--threads 4,8,16]
                                           [--launcher "mpirun --allow-run-as-root"]

Question (issue 31): the file command on GPUs starts later and reads slower than the CPU one.
Which of these costs what on this machine?

- start-up, each a fresh process (median of 3): the interpreter, NumPy, ``distscan.cli``, CuPy's
  import, the CUDA context, distscan's first GPU scan (its module from CuPy's disk cache, warmed
  once before; alone, it starts MPI too: compare the "MPI +" pair), and the launcher with 1, 2
  and 8 ranks running ``from mpi4py import MPI``;
- positional reads of a page-cached file of ``--gib`` GiB in 16 MiB chunks on T threads into
  fresh pageable buffers, a reused ring of pageable buffers, a ring of pinned buffers
  (``cupyx.empty_pinned``) and a ring of pageable buffers registered with ``cudaHostRegister``;
- what pinning costs: ``empty_pinned`` and ``cudaHostRegister`` of 16 MiB;
- host -> device and device -> host copies of 16 MiB chunks from pinned and from pageable memory;
- positional writes of the same bytes to a new file on T threads from pageable and pinned memory;
- KvikIO, where it imports (``kvikio-cu13``): ``CuFile.pread`` into device memory and
  ``CuFile.pwrite`` from it, with its default thread pool and with 16 threads, against 16 threads
  of pread -> pinned -> host -> device and of device -> pinned -> pwrite.

Every figure goes to OUT.json; a short table is printed last.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

CHUNK = 16 << 20


def _wall(cmd, env=None, reps=3):
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def startup(launcher, py):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    first_scan = ("import cupy, distscan; x = cupy.arange(1 << 20); distscan.cumsum(x); "
                  "cupy.cuda.Device().synchronize()")
    _wall([py, "-c", first_scan], env, reps=1)  # fills CuPy's disk cache
    cases = {
        "python -c pass": [py, "-c", "pass"],
        "import numpy": [py, "-c", "import numpy"],
        "import distscan.cli": [py, "-c", "import distscan.cli"],
        "import cupy": [py, "-c", "import cupy"],
        "cupy + CUDA context": [py, "-c", "import cupy; cupy.cuda.Device(0).use(); cupy.empty(1)"],
        "cupy + context + first distscan scan": [py, "-c", first_scan],
        # the command's case: MPI is up before the GPU starts (distscan.cumsum without comm= would
        # otherwise start it: MPI_Init inside the first scan)
        "MPI + cupy + context": [py, "-c", "from mpi4py import MPI; import cupy; cupy.cuda.Device(0).use(); "
                                 "cupy.empty(1)"],
        "MPI + cupy + context + first distscan scan": [py, "-c", "from mpi4py import MPI; " + first_scan],
    }
    out = {name: _wall(cmd, env) for name, cmd in cases.items()}
    for n in (1, 2, 8):
        out[f"launcher -n {n}: from mpi4py import MPI"] = _wall(
            launcher + ["-n", str(n), py, "-c", "from mpi4py import MPI"], env)
        out[f"launcher -n {n}: import distscan.cli + MPI"] = _wall(
            launcher + ["-n", str(n), py, "-c", "from mpi4py import MPI; import distscan.cli"], env)
    return out


def _rw(fn, fd, bufs, size, threads):
    """Chunks [k*CHUNK, ...) of ``size`` bytes, chunk k through ``bufs(k)``, on ``threads`` threads."""
    nchunks = -(-size // CHUNK)

    def one(k):
        lo = k * CHUNK
        mv = memoryview(bufs(k))[: min(CHUNK, size - lo)]
        done = 0
        while done < len(mv):
            done += fn(fd, [mv[done:]], lo + done)

    t0 = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(one, range(nchunks)))
    return time.perf_counter() - t0


def io(path, size, threads_list, cp):
    import cupyx

    res = {}
    fd = os.open(path, os.O_RDONLY)
    ring = 32
    pageable = [np.empty(CHUNK, np.uint8) for _ in range(ring)]
    for b in pageable:
        b[:] = 1
    pinned = [cupyx.empty_pinned((CHUNK,), np.uint8) for _ in range(ring)]
    registered = [np.empty(CHUNK, np.uint8) for _ in range(ring)]
    for b in registered:
        b[:] = 1
        cp.cuda.runtime.hostRegister(b.ctypes.data, b.nbytes, 0)
    try:
        for t in threads_list:
            res[f"read {t} threads, fresh pageable"] = size / _rw(os.preadv, fd, lambda k: np.empty(CHUNK, np.uint8),
                                                                 size, t) / 1e9
            res[f"read {t} threads, pageable ring"] = size / _rw(os.preadv, fd, lambda k: pageable[k % ring], size, t) / 1e9
            res[f"read {t} threads, pinned ring"] = size / _rw(os.preadv, fd, lambda k: pinned[k % ring], size, t) / 1e9
            res[f"read {t} threads, registered ring"] = size / _rw(os.preadv, fd, lambda k: registered[k % ring],
                                                                  size, t) / 1e9
        os.close(fd)
        # pinning costs
        t_pin, t_reg = [], []
        for _ in range(5):
            t0 = time.perf_counter()
            b = cupyx.empty_pinned((CHUNK,), np.uint8)
            t_pin.append(time.perf_counter() - t0)
            del b
            b = np.empty(CHUNK, np.uint8)
            b[:] = 0
            t0 = time.perf_counter()
            cp.cuda.runtime.hostRegister(b.ctypes.data, b.nbytes, 0)
            t_reg.append(time.perf_counter() - t0)
            cp.cuda.runtime.hostUnregister(b.ctypes.data)
        res["empty_pinned 16 MiB, ms"] = statistics.median(t_pin) * 1e3
        res["hostRegister 16 MiB, ms"] = statistics.median(t_reg) * 1e3
        # copies, 16 MiB chunks, 1 GiB through each
        dev = cp.empty(CHUNK, np.uint8)
        stream = cp.cuda.Stream(non_blocking=True)
        for kind, bufs in (("pinned", pinned), ("pageable", pageable), ("registered", registered)):
            for direction, code in (("h2d", 1), ("d2h", 2)):
                reps = 64
                stream.synchronize()
                t0 = time.perf_counter()
                for k in range(reps):
                    h = bufs[k % ring]
                    dst, src = (dev.data.ptr, h.ctypes.data) if code == 1 else (h.ctypes.data, dev.data.ptr)
                    cp.cuda.runtime.memcpyAsync(dst, src, CHUNK, code, stream.ptr)
                stream.synchronize()
                res[f"{direction} from {kind}" if code == 1 else f"{direction} to {kind}"] = (
                    reps * CHUNK / (time.perf_counter() - t0) / 1e9)
        # writes
        for t in threads_list[-1:]:
            for kind, bufs in (("pageable", pageable), ("pinned", pinned)):
                dst = path + f".write-{kind}"
                fo = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                os.ftruncate(fo, size)
                os.sync()
                res[f"write {t} threads from {kind}"] = size / _rw(os.pwritev, fo, lambda k: bufs[k % ring], size, t) / 1e9
                os.close(fo)
                os.remove(dst)
                os.sync()
    finally:
        for b in registered:
            cp.cuda.runtime.hostUnregister(b.ctypes.data)
    return res


def kvikio_io(path, size, cp):
    try:
        import kvikio
        import kvikio.defaults
    except Exception as exc:  # noqa: BLE001
        return {"kvikio": f"unavailable: {exc!r}"}
    def setting(name):
        get = getattr(kvikio.defaults, "get", None)  # KvikIO >= 25.04: defaults.get(name)
        try:
            return str(get(name) if get is not None else getattr(kvikio.defaults, name)())
        except Exception as exc:  # noqa: BLE001
            return f"? ({exc!r})"

    res = {"kvikio version": getattr(kvikio, "__version__", "?"),
           "kvikio compat mode": setting("compat_mode"), "kvikio threads (default)": setting("num_threads"),
           "kvikio bounce buffer bytes": setting("bounce_buffer_size")}
    dev = cp.empty(size, np.uint8)
    for threads in (None, 16):  # KvikIO's default thread pool, then as many threads as our staging
        if threads is not None:
            kvikio.defaults.set("num_threads", threads)
        label = f"{setting('num_threads')} thr"
        with kvikio.CuFile(path, "r") as f:
            f.pread(dev).get()  # warm
            t0 = time.perf_counter()
            f.pread(dev).get()
            res[f"kvikio pread {label} -> device GB/s"] = size / (time.perf_counter() - t0) / 1e9
        dst = path + ".kvikio-write"
        os.sync()
        with kvikio.CuFile(dst, "w") as f:
            t0 = time.perf_counter()
            f.pwrite(dev).get()
            res[f"kvikio pwrite {label} <- device GB/s"] = size / (time.perf_counter() - t0) / 1e9
        os.remove(dst)
        os.sync()
    # the same with our staging: 16 threads read into pinned chunks, each copied to the device
    import cupyx
    ring = [cupyx.empty_pinned((CHUNK,), np.uint8) for _ in range(32)]
    fd = os.open(path, os.O_RDONLY)
    stream = [cp.cuda.Stream(non_blocking=True) for _ in range(16)]

    def slot(k):  # chunk k's offset, length, pinned buffer and stream (its last copy done)
        lo = k * CHUNK
        s = stream[k % 16]
        s.synchronize()
        return lo, min(CHUNK, size - lo), memoryview(ring[k % 32]), s

    def timed(work):  # GB/s of work(k) over every chunk, on 16 threads
        t0 = time.perf_counter()
        with ThreadPoolExecutor(16) as pool:
            list(pool.map(work, range(-(-size // CHUNK))))
        return size / (time.perf_counter() - t0) / 1e9

    def one(k):
        lo, n, mv, s = slot(k)
        got = 0
        while got < n:
            got += os.preadv(fd, [mv[got:n]], lo + got)
        cp.cuda.runtime.memcpyAsync(dev.data.ptr + lo, ring[k % 32].ctypes.data, n, 1, s.ptr)
        s.synchronize()

    res["pread 16 thr -> pinned -> device GB/s"] = timed(one)
    os.close(fd)
    # and back: each chunk copied to a pinned buffer, then written by 16 threads to a new file
    dst = path + ".staged-write"
    fo = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.ftruncate(fo, size)

    def back(k):
        lo, n, mv, s = slot(k)
        cp.cuda.runtime.memcpyAsync(ring[k % 32].ctypes.data, dev.data.ptr + lo, n, 2, s.ptr)
        s.synchronize()
        put = 0
        while put < n:
            put += os.pwritev(fo, [mv[put:n]], lo + put)

    os.sync()
    res["device -> pinned -> pwrite 16 thr GB/s"] = timed(back)
    os.close(fo)
    os.remove(dst)
    os.sync()
    return res


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("json_out")
    p.add_argument("--gib", type=float, default=2.0)
    p.add_argument("--threads", default="4,8,16")
    p.add_argument("--launcher", default="mpirun --allow-run-as-root")
    p.add_argument("--dir", default=tempfile.gettempdir())
    a = p.parse_args(argv)
    import cupy as cp

    results = {"host": os.uname().nodename, "cpus": os.cpu_count(),
               "gpu": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
               "time_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    def dump():
        with open(a.json_out, "w") as f:
            json.dump(results, f, indent=1)

    results["startup_s"] = startup(shlex.split(a.launcher), sys.executable)
    dump()
    size = int(a.gib * (1 << 30)) // CHUNK * CHUNK
    path = os.path.join(a.dir, "probe_command_io.bin")
    rng = np.random.default_rng(0)
    with open(path, "wb") as f:
        for _ in range(size // (256 << 20)):
            f.write(rng.integers(0, 255, 256 << 20, dtype=np.uint8).tobytes())
    try:
        results["io_gbs"] = io(path, size, [int(t) for t in a.threads.split(",")], cp)
        dump()
        try:
            results["kvikio"] = kvikio_io(path, size, cp)
        except Exception as exc:  # noqa: BLE001 - the figures before it are kept
            results["kvikio"] = {"kvikio": f"failed: {exc!r}"}
    finally:
        os.remove(path)
    dump()
    print(f"{results['gpu']}, {results['cpus']} cores, {results['time_utc']}")
    for section in ("startup_s", "io_gbs", "kvikio"):
        print(f"-- {section}")
        for k, v in results[section].items():
            print(f"  {k:48s} {v:.3f}" if isinstance(v, float) else f"  {k:48s} {v}")


if __name__ == "__main__":
    main()
