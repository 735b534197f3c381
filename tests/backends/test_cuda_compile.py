"""The host's view of kernels/, on the CPU.  The name expressions (skipped without nvcc): every
kernel that ``distscan.backends.cuda.compile.names()`` names, for keys of each block and each device algorithm
(float16 and complex items among them), instantiates under nvcc with the host's options, and
each scan kernel's launch bounds are the launch the host makes (``Tuning.launch_threads``
threads a block, ``min_blocks`` blocks an SM).  The GPU tests compile the same names with
NVRTC; this catches a mismatch between names() and the templates without a GPU.  And the
source hash that keys CuPy's disk cache covers the headers in kernels/'s folders."""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess

import numpy as np
import pytest

from distscan.ops.options import call_op
from distscan._dtypes import scan_types
from distscan.backends.cuda import compile as cc
from distscan.backends.cuda import extended
from distscan.backends import cuda as gpu
import distscan
from distscan.ops import ALL_OPS, OPS, affine, compensated, get_op, segmented

NVCC = shutil.which("nvcc")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")

# (operator, input dtype, algorithm=): each algorithm once at least; 1-, 2-, 4-, 8- and 16-byte
# items; float16 (compiled with -DDISTSCAN_HALF) and complex; both look-ahead shapes
CASES = [("sum", "int32", "auto"), ("prod", "complex128", "auto"), ("max", "float16", "auto"),
         ("sum", "float32", "lookahead"), ("sum", "int64", "lookahead"), ("bitwise_xor", "uint8", "lookahead"),
         ("logical_or", "float64", "domino"), ("min", "int16", "hierarchical"), ("sum", "float32", "kogge_stone"),
         ("prod", "uint32", "kogge_stone_double_buffer"), ("max", "float64", "brent_kung"),
         ("sum", "complex64", "blelloch")]

# Itanium mangling of the scan kernel's policy: LookaheadPolicy<TilePolicy<THREADS, ITEMS, WINDOW, MIN_BLOCKS, ...>, ...>
_POLICY = re.compile(r"(LookaheadPolicyI)?NS_10TilePolicyILi(\d+)ELi(\d+)ELi(\d+)ELi(\d+)E")


def _keys():
    keys = []
    for opname, dt, algorithm in CASES:
        op = OPS[opname]
        keys.append(gpu.module_key(np.dtype(dt), scan_types(op, np.dtype(dt)), op, algorithm))
    return keys


def _ptx_entries(ptx: str) -> dict:
    """{mangled entry name: {"maxntid": ..., "minnctapersm": ...}} of a PTX module."""
    entries, current = {}, None
    for line in ptx.splitlines():
        m = re.match(r"\.visible \.entry (\S+)\(", line)
        if m:
            current = entries.setdefault(m.group(1), {})
            continue
        m = re.match(r"\.(maxntid|minnctapersm) ([\d, ]+)$", line.strip())
        if m and current is not None:
            current[m.group(1)] = m.group(2).replace(" ", "")
    return entries


@pytest.fixture(scope="module")
def ptx_entries(tmp_path_factory):
    keys = _keys()
    assert {k.block for k in keys} == set(cc.BLOCK_ALGORITHMS)
    assert {k.device for k in keys} == set(cc.DEVICE_ALGORITHMS)
    exprs = list(dict.fromkeys(e for k in keys for e in cc.names(k).values()))
    half = next(k for k in keys if np.dtype(np.float16) in (k.in_dtype, k.out_dtype))
    opts = cc.options(half)  # the host's options, -DDISTSCAN_HALF included
    assert "-DDISTSCAN_HALF" in opts
    d = tmp_path_factory.mktemp("kernel_names")
    table = ",\n".join(f"    (void *)&{e}" for e in exprs)
    (d / "names.cu").write_text(f'#include "scan_kernels.cu"\nvoid *kernels[] = {{\n{table}\n}};\n')
    # PTX without optimisation: instantiation and launch bounds need no more, in a few seconds
    cmd = [NVCC, "-arch=sm_90", *opts, "-ptx", "-Xcicc", "-O0", str(d / "names.cu"), "-o", str(d / "names.ptx")]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"{' '.join(cmd)}\n{r.stderr[-4000:]}"
    entries = _ptx_entries((d / "names.ptx").read_text())
    assert len(entries) == len(exprs), "one kernel per distinct name expression"
    return keys, entries


@needs_nvcc
def test_every_name_expression_instantiates(ptx_entries):
    _, entries = ptx_entries
    for name, e in entries.items():
        assert "maxntid" in e, f"{name} has no launch bounds"


@needs_nvcc
def test_scan_launch_bounds_are_the_hosts_launch(ptx_entries):
    keys, entries = ptx_entries
    bounds = {}
    for name, e in entries.items():
        if "scan_tiles_kernel" in name:
            m = _POLICY.search(name)
            assert m, name
            shape = (bool(m.group(1)),) + tuple(int(g) for g in m.group(2, 3, 4, 5))
            bounds.setdefault(shape, set()).add((e["maxntid"], e.get("minnctapersm")))
    for k in keys:
        t = k.tuning
        shape = (k.device == "lookahead", t.block_threads, t.items, t.window, t.min_blocks)
        want = (f"{t.launch_threads(k.device)},1,1", str(t.min_blocks))
        assert bounds.get(shape) == {want}, (k, bounds.get(shape))


def test_source_hash_covers_every_folder(tmp_path, monkeypatch):
    """A change to any header, in any folder of kernels/, changes the text handed to NVRTC (the
    key of CuPy's disk cache); the same files give the same text."""
    kdir = tmp_path / "kernels"
    shutil.copytree(cc.kernels_dir(), kdir, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(cc, "kernels_dir", lambda: kdir)

    def source_text():
        cc._source.cache_clear()
        return cc._source()[0]

    try:
        first = source_text()
        assert first == source_text()
        headers = sorted(kdir.rglob("*.cuh"))
        assert {h.parent.name for h in headers} >= {"util", "warp", "block", "tile", "agent"}
        seen = {first}
        for h in headers:
            text = h.read_text()
            h.write_text(text + "\n")
            seen.add(source_text())
            h.write_text(text)
        assert len(seen) == len(headers) + 1
        assert source_text() == first
    finally:
        cc._source.cache_clear()


# issue 30: the new functors in the plain module; reverse scans and state operators in the
# extended one (each state kind, real and complex, both directions, both device algorithms)
NEW_CASES = [("nansum", "float32"), ("nanprod", "complex64"), ("nanmax", "float64"), ("nanmin", "int16"),
             ("logaddexp", "float32"), ("logaddexp2", "float16"), ("gcd", "int64"), ("lcm", "uint32")]


def _ext_keys():
    keys = [gpu.module_key(np.dtype(dt), scan_types(ALL_OPS[o], np.dtype(dt)), ALL_OPS[o], "auto")
            for o, dt in NEW_CASES]
    ext = [(get_op("sum"), "int32", "lookahead", True), (get_op("max"), "float16", "lookback", True),
           (segmented(get_op("sum")), "int32", "lookback", False),
           (segmented(get_op("nansum"), True), "float32", "lookback", True),
           (segmented(get_op("prod")), "complex128", "lookback", False),
           (affine(), "float32", "lookback", False), (affine(True), "float64", "lookback", False),
           (affine(True, True), "complex128", "lookback", True), (affine(), "int64", "lookback", True),
           (segmented(get_op("sum")), "float32", "lookahead", False),
           (segmented(get_op("max"), True), "int64", "lookahead", True),
           (affine(), "float32", "lookahead", False), (affine(True), "complex64", "lookahead", False),
           # the tame runs (kernels/util/operators.cuh, tames): float32's, and integers' without them
           (affine(True), "float32", "lookahead", False), (affine(True), "int64", "lookahead", False),
           (affine(True, True), "float64", "lookahead", True),
           (compensated(get_op("sum")), "float32", "lookahead", False),
           (compensated(get_op("sum")), "complex64", "lookback", True),
           (distscan.Operator("hypot", np.hypot, identity=0.0, cuda="hypot(a, b)", commutative=True), "float64",
            "lookahead", False),
           (distscan.Operator("sat", lambda a, b: a, identity=0, kinds="i", cuda="return (a + b < 9) ? a + b : 9;"),
            "int32", "lookback", True)]
    for op, dt, device, reverse in ext:
        key = extended.ext_module_key(np.dtype(dt), scan_types(op, np.dtype(dt)), op, device, reverse)
        keys.append(key)
        if device == "lookback":  # the columns kernels of (n, w) rows (compile.COLUMN_ROLES)
            keys.append(dataclasses.replace(key, columns=True))
        if op.source and not reverse:  # a declared operator's plain module (forward scans) carries its functor too
            plain = gpu.module_key(np.dtype(dt), scan_types(op, np.dtype(dt)), op, "auto")
            assert plain.source == op.source
            keys.append(plain)
    return keys


@needs_nvcc
def test_new_operators_and_extended_kernels_instantiate(tmp_path):
    keys = _ext_keys()
    exprs = list(dict.fromkeys(e for k in keys for e in cc.names(k).values()))
    opts = cc.options(next(k for k in keys if np.dtype(np.float16) in (k.in_dtype, k.out_dtype)))
    table = ",\n".join(f"    (void *)&{e}" for e in exprs)
    declared = "".join(dict.fromkeys(k.source for k in keys))  # declared operators' functors, as the host appends them
    (tmp_path / "names.cu").write_text(f'#include "scan_kernels.cu"\n{declared}\nvoid *kernels[] = {{\n{table}\n}};\n')
    cmd = [NVCC, "-arch=sm_90", *opts, "-ptx", "-Xcicc", "-O0", str(tmp_path / "names.cu"), "-o",
           str(tmp_path / "names.ptx")]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, f"{' '.join(cmd)}\n{r.stderr[-4000:]}"
    entries = _ptx_entries((tmp_path / "names.ptx").read_text())
    assert len(entries) == len(exprs), "one kernel per distinct name expression"


def _nvrtc_library():
    """libnvrtc, as CuPy would load it: DISTSCAN_NVRTC_LIB, else the pip package's (nvidia-cuda-nvrtc,
    the newest, which .ci/run installs), else the system's; None where there is none."""
    import ctypes.util
    import importlib.util
    import os
    from pathlib import Path

    path = os.environ.get("DISTSCAN_NVRTC_LIB")
    spec = importlib.util.find_spec("nvidia")
    if path is None and spec is not None:
        found = sorted(p for root in spec.submodule_search_locations for p in Path(root).glob("*/lib/libnvrtc.so.*"))
        path = str(found[-1]) if found else None
    path = path or ctypes.util.find_library("nvrtc")
    return ctypes.CDLL(path) if path else None


def _nvrtc_compile(lib, key) -> str:
    """NVRTC's log of compiling ``key``'s module with its name expressions ("" where it compiled)."""
    import ctypes

    src, _ = cc._source()
    # the options CuPy adds to ours (cupy/cuda/compiler.py, without jitify): unannotated functions
    # and lambdas are device functions there, which NVRTC 13.0 refuses without the flag
    opts = [*cc.options(key), "-ftz=true", "-arch=compute_90", "--device-as-default-execution-space"]
    prog = ctypes.c_void_p()
    assert lib.nvrtcCreateProgram(ctypes.byref(prog), (src + key.source).encode(), b"scan_kernels.cu", 0, None,
                                  None) == 0
    for expr in dict.fromkeys(cc.names(key).values()):
        assert lib.nvrtcAddNameExpression(prog, expr.encode()) == 0
    rc = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts]))
    log = ""
    if rc != 0:
        n = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
        buf = ctypes.create_string_buffer(n.value)
        lib.nvrtcGetProgramLog(prog, buf)
        log = buf.value.decode(errors="replace") or f"NVRTC error {rc}"
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return log


def test_the_modules_compile_with_nvrtc():
    """The host compiles the kernels with NVRTC (CuPy's RawModule), which needs no GPU: the plain,
    extended and columns modules of _ext_keys compile with the NVRTC found (the pip package's, the
    newest, where .ci/run installed it), with the options CuPy gives it.  (Without CuPy's
    ``--device-as-default-execution-space`` NVRTC 13.5 refused three unannotated constexpr helpers
    and 13.0 the generic lambdas: found 2026-11-28 and -29 by calls without it; CuPy's own
    compiles never met either.)  float16 modules need cuda_fp16.h: left out."""
    lib = _nvrtc_library()
    if lib is None:
        pytest.skip("no libnvrtc (pip install nvidia-cuda-nvrtc)")
    keys = [k for k in _ext_keys() if np.dtype(np.float16) not in (k.in_dtype, k.out_dtype)]
    failed = {repr(k)[:160]: log[:1500] for k in keys[::3] if (log := _nvrtc_compile(lib, k))}
    assert not failed, f"{len(failed)} modules failed with {lib._name}: {next(iter(failed.items()))}"  # (its first errors)


def test_state_structs_match_the_host_layout():
    """The C structs of kernels/util/states.cuh, as the host lays them out (ops.state.c_struct):
    the sizes the status words and the seeds' bytes assume."""
    for op, value, size in [(segmented(get_op("sum")), "float32", 8), (segmented(get_op("sum"), True), "int8", 3),
                            (affine(), "complex64", 16), (affine(True), "float32", 12),
                            (affine(True, True), "complex128", 48), (compensated(get_op("sum")), "float64", 16)]:
        assert op.state.dtype(np.dtype(value)).itemsize == size, (op.name, value)
    # a segmented float product's host state holds zero absorption's fields; its kernels' struct
    # (extended.kernel_state) is SegState / SegEndsState all the same
    for reverse, value, size in [(False, "float32", 8), (False, "float64", 16), (True, "float32", 8),
                                 (True, "complex128", 32)]:
        op = segmented(get_op("prod"), reverse)
        assert op.state.kernel_dtype(np.dtype(value)).itemsize == size, (op.name, value)
        assert extended.kernel_state(op, scan_types(op, np.dtype(value))) == op.state.kernel_dtype(np.dtype(value))
        assert op.state.dtype(np.dtype(value)).itemsize > size


def _state_scans():
    """(dtype, types, op, reverse) of every built-in state scan and reverse scan the GPU runs."""
    for base in ("sum", "prod", "max", "min", "logaddexp", "nansum", "gcd"):
        for options in ({"segments": True}, {"coefficients": True}, {"segments": True, "coefficients": True},
                        {"compensated": True}, {}):
            if "coefficients" in options and base != "sum":
                continue
            for reverse in (False, True):
                for name in ("int8", "int64", "uint32", "float16", "float32", "float64", "complex64", "complex128"):
                    dt = np.dtype(name)
                    try:
                        op = call_op(base, reverse=reverse, **options)
                        types = scan_types(op, dt)
                    except (TypeError, ValueError):  # not defined there (compensated integers, gcd of floats)
                        continue
                    yield dt, types, op, reverse


def test_every_state_scan_s_look_ahead_ring_fits_an_h100_block():
    """The look-ahead's ring (its stages of items, flags and coefficients: Tuning.lookahead_smem)
    of every state scan that ``algorithm="lookahead"`` may run, at most the 227 KB of dynamic shared
    memory an H100 or H200 gives a block.  The complex128 recurrences' took 330 KB, and the driver
    refused the size with a raw CUDA_ERROR_INVALID_VALUE (2026-11-28); now 3 stages (198 KB)."""
    over = []
    for dt, types, op, reverse in _state_scans():
        key = extended.ext_module_key(dt, types, op, "lookahead", reverse)
        smem = key.tuning.lookahead_smem(dt, types.result, extended.staged_aux(op, types))
        if smem > 227 * 1024:
            over.append((op.name, reverse, dt.name, smem))
    assert not over, over


def test_every_state_scan_s_column_tiles_shrink_and_fit():
    """The column-tile kernels' tiles (``columns._geometry``) of every state scan at any width: at
    least 2 rows, so that each level of tile folds scanned again as rows is smaller than the last,
    and within a launch's 48 KB of shared memory.  The segmented complex128 recurrence's 48-byte
    states took runs of 1 row, so from 129 columns on a tile was one row and past CARRY_TILES rows
    the levels never shrank (2026-11-28)."""
    from distscan.backends.cuda import columns

    sizes = {extended.kernel_state(op, types).itemsize for dt, types, op, reverse in _state_scans()}
    assert max(sizes) == 48
    for size in sorted(sizes):
        for w in (1, 2, 3, 128, 129, 200, 256, 257, 4096):
            run, tiles, slabs, smem = columns._geometry(10**6, w, size)
            assert columns.tile_rows(w, size) >= 2 and tiles < 10**6 and smem <= 48 * 1024, (size, w, run, smem)
