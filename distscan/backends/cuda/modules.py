"""CUDA modules compiled from source with NVRTC, without CuPy's -ftz=true, kept on disk: the
kernels of ``kernels/`` (``compile.get_functions``) and the zero search's (``zero_search``)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


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
# version, the device's architecture and CuPy's version.
NO_FTZ = ("-ftz=false",)


def cache_dir() -> Path:
    """Where the compiled modules are kept: ``DISTSCAN_CACHE_DIR``, else a ``distscan`` folder in
    CuPy's kernel cache (``CUPY_CACHE_DIR``, else ``~/.cupy/kernel_cache``)."""
    own = os.environ.get("DISTSCAN_CACHE_DIR")
    if own:
        return Path(own)
    return Path(os.environ.get("CUPY_CACHE_DIR") or os.path.expanduser("~/.cupy/kernel_cache")) / "distscan"


def raw_module(code: str, opts, name_expressions: tuple):
    """``get(name_expression) -> cupy.RawKernel`` of ``code`` compiled with NVRTC for the current
    device, without CuPy's -ftz=true (see above), from the disk cache where it is there."""
    import json
    import tempfile

    import cupy
    from cupy._core.core import assemble_cupy_compiler_options
    from cupy.cuda import compiler, nvrtc

    # (what RawModule's compile adds to the caller's options: the bundled CCCL's, CuPy's and the
    # CUDA toolkit's include folders (cuda_fp16.h), and the C++ standard where none is given)
    opts = assemble_cupy_compiler_options(tuple(opts)) + NO_FTZ
    arch = "".join(str(v) for v in cupy.cuda.Device().compute_capability)
    tag = repr((code, opts, name_expressions, nvrtc.getVersion(), arch, cupy.__version__)).encode()
    folder = cache_dir()
    binary = folder / f"{hashlib.sha256(tag).hexdigest()}.module"
    names_file = binary.with_suffix(".names")
    mapping = None
    if binary.exists():
        try:
            mapping = json.loads(names_file.read_text())
        except (OSError, ValueError):
            mapping = None
    if mapping is None:
        obj, mapping = compiler.compile_using_nvrtc(code, opts, arch=arch, name_expressions=name_expressions)
        folder.mkdir(parents=True, exist_ok=True)
        for path, data in ((names_file, json.dumps(mapping).encode()),
                           (binary, obj.encode() if isinstance(obj, str) else obj)):
            with tempfile.NamedTemporaryFile(dir=folder, delete=False) as f:
                f.write(data)
            os.replace(f.name, path)  # (the names first: a binary's name says both are whole)
    mod = cupy.RawModule(path=str(binary))
    return lambda expr: mod.get_function(mapping[expr])
