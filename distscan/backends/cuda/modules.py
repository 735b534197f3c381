"""CUDA modules compiled from source with NVRTC, without CuPy's -ftz=true, kept on disk: the
kernels of ``kernels/`` (``compile.get_functions``) and the zero search's (``zero_search``)."""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

from ..._caches import write_whole


# CuPy compiles a RawModule given as source with -ftz=true after the caller's options
# (cupy/cuda/compiler.py, _compile_with_cache_cuda), and NVRTC takes the last: float32 subnormal
# inputs and results became 0 (a cumsum of float32's smallest subnormals was 0, NumPy's 1.4e-42:
# s52's ftz_probe.py, one H200), and a subnormal compared with 0 was a zero.  So the kernels are
# compiled through CuPy's compile_using_nvrtc, which adds the architecture and
# --device-as-default-execution-space but no -ftz, with RawModule's include folders
# (assemble_cupy_compiler_options) and -ftz=false said outright; the binary and
# its lowered names are kept in a disk cache of distscan's own (the same folder as CuPy's) and
# loaded with RawModule(path=...).  Assumption: a file of the cache is whole once its name exists
# (written to a temporary name, then renamed), and its name covers everything that changes the
# binary: the source (which starts with a hash of every kernels/ file), the options, NVRTC's
# version, the device's architecture and CuPy's version.  A folder that cannot be written (read-only,
# full, not a folder) or CUPY_CACHE_IN_MEMORY=1 (CuPy's "write no cache files") sends the files to a
# folder of this process's own, removed at its exit: RawModule(path=...) loads a module again from
# its file on each device it meets, so the file must stay while the process runs.
NO_FTZ = ("-ftz=false",)


def cache_dir() -> Path:
    """Where the compiled modules are kept: a ``cuda`` folder in ``DISTSCAN_CACHE_DIR`` (beside the
    CPU's loops, ``ops/jit.cache_dir``), else a ``distscan`` folder in CuPy's kernel cache
    (``CUPY_CACHE_DIR``, else ``~/.cupy/kernel_cache``)."""
    own = os.environ.get("DISTSCAN_CACHE_DIR")
    if own:
        return Path(own) / "cuda"
    return Path(os.environ.get("CUPY_CACHE_DIR") or os.path.expanduser("~/.cupy/kernel_cache")) / "distscan"


_private: list = []  # this process's own folder, once made (see above)


def _private_dir() -> Path:
    if not _private:
        import atexit
        import shutil
        import tempfile

        folder = tempfile.mkdtemp(prefix="distscan-cuda-")
        atexit.register(shutil.rmtree, folder, True)
        _private.append(Path(folder))
    return _private[0]


def _in_memory() -> bool:
    """CuPy's ``CUPY_CACHE_IN_MEMORY=1`` (its test of the variable: an int, 1)."""
    try:
        return int(os.environ.get("CUPY_CACHE_IN_MEMORY") or 0) == 1
    except ValueError:
        return False


def _folders(folder: Path) -> list:
    """Where a module may be kept, in order: ``folder`` (not under ``CUPY_CACHE_IN_MEMORY=1``),
    then this process's own folder where it was made."""
    return ([] if _in_memory() else [folder]) + _private


def find(folder: Path, stem: str, name_expressions: tuple):
    """``(binary path, lowered names)`` of a module kept earlier, or None.  A names file is trusted
    only where it is a mapping that names every one of ``name_expressions`` (a file cut short, or
    written by something else, is compiled again: a lookup of a missing name would fail a scan)."""
    import json

    for where in _folders(folder):
        binary = where / f"{stem}.module"
        if binary.exists():
            try:
                names = json.loads((where / f"{stem}.names").read_text())
            except (OSError, ValueError):
                continue  # a binary without its names (a names file is written first): compiled again
            if isinstance(names, dict) and all(isinstance(names.get(e), str) for e in name_expressions):
                return binary, names
    return None


def keep(folder: Path, stem: str, names: bytes, binary: bytes) -> Path:
    """Write a module's lowered names and binary to ``folder`` (the names first: the binary's
    name says both are whole) and return the binary's path; where ``folder`` cannot be written,
    or CuPy was told to keep its cache in memory, to this process's own folder."""
    if not _in_memory():
        try:
            return _write_module(folder, stem, names, binary)
        except OSError:
            pass  # (read-only, full, not a folder: this process's own folder, below)
    return _write_module(_private_dir(), stem, names, binary)


def _write_module(where: Path, stem: str, names: bytes, binary: bytes) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    write_whole(where / f"{stem}.names", names)
    write_whole(where / f"{stem}.module", binary)
    return where / f"{stem}.module"


def raw_module(code: str, opts, name_expressions: tuple):
    """``get(name_expression) -> cupy.RawKernel`` of ``code`` compiled with NVRTC for the current
    device, without CuPy's -ftz=true (see above), from the disk cache where it is there."""
    import json

    import cupy
    from cupy._core.core import assemble_cupy_compiler_options
    from cupy.cuda import compiler, nvrtc

    # (what RawModule's compile adds to the caller's options: the bundled CCCL's, CuPy's and the
    # CUDA toolkit's include folders (cuda_fp16.h), and the C++ standard where none is given)
    opts = assemble_cupy_compiler_options(tuple(opts)) + NO_FTZ
    arch = "".join(str(v) for v in cupy.cuda.Device().compute_capability)
    tag = repr((code, opts, name_expressions, nvrtc.getVersion(), arch, cupy.__version__)).encode()
    folder, stem = cache_dir(), hashlib.sha256(tag).hexdigest()
    found = find(folder, stem, name_expressions)
    if found is None:
        obj, mapping = compiler.compile_using_nvrtc(code, opts, arch=arch, name_expressions=name_expressions)
        binary = keep(folder, stem, json.dumps(mapping).encode(), obj.encode() if isinstance(obj, str) else obj)
    else:
        binary, mapping = found
    mod = cupy.RawModule(path=str(binary))
    return lambda expr: mod.get_function(mapping[expr])


_DEVICE_MODULES: dict = {}  # (code, opts, name expressions, device) -> raw_module's get
_DEVICE_LOCK = threading.Lock()


def device_module(code: str, opts, name_expressions: tuple):
    """:func:`raw_module` of ``code`` for the current device, made once per device and process (a
    binary is for one architecture).  Two threads that meet a device at once wait for one build.
    Assumption: ``code`` and ``opts`` are a caller's constants (the key holds them whole)."""
    import cupy

    key = (code, tuple(opts), tuple(name_expressions), cupy.cuda.runtime.getDevice())
    get = _DEVICE_MODULES.get(key)
    if get is None:
        with _DEVICE_LOCK:
            get = _DEVICE_MODULES.get(key)
            if get is None:
                get = _DEVICE_MODULES[key] = raw_module(code, opts, name_expressions)
    return get
