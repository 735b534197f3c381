"""Which libnvrtc does this machine have, which does CuPy load, and which of them compile
distscan's modules?  Prints each library's version and the first errors of a plain and an
extended module (tests/backends/test_cuda_compile.py's compile)."""
import ctypes, glob, importlib.util, os, sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
import numpy as np
import cupy
from cupy.cuda import nvrtc
print("cupy", cupy.__version__, "its nvrtc", nvrtc.getVersion())
from tests.backends import test_cuda_compile as t
keys = [k for k in t._ext_keys() if np.dtype(np.float16) not in (k.in_dtype, k.out_dtype)]
picks = [keys[0], next(k for k in keys if k.ext)]
libs = set()
spec = importlib.util.find_spec("nvidia")
if spec:
    for root in spec.submodule_search_locations:
        libs |= set(glob.glob(f"{root}/*/lib/libnvrtc.so*"))
for d in ("/usr/local/cuda*/lib64", "/usr/local/cuda*/targets/*/lib", "/usr/lib/x86_64-linux-gnu"):
    libs |= set(glob.glob(f"{d}/libnvrtc.so*"))
libs |= {p for p in open(f"/proc/{os.getpid()}/maps").read().split() if "libnvrtc.so" in p}
print("the test picks:", t._nvrtc_library()._name)
for path in sorted(libs):
    if "builtins" in path or "alt" in path:
        continue
    try:
        lib = ctypes.CDLL(path)
        major, minor = ctypes.c_int(), ctypes.c_int()
        lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    except OSError as e:
        print(path, "cannot load:", e); continue
    print(f"== {path}: NVRTC {major.value}.{minor.value}")
    for k in picks:
        log = t._nvrtc_compile(lib, k)
        print("  ", "compiles" if not log else "FAILS", repr(k)[:90])
        if log:
            print("    " + "\n    ".join(log.splitlines()[:12]))
