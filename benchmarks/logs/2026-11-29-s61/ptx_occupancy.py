"""Registers, spills and blocks an SM of a tree's scan kernels, inclusive and exclusive, from
ptxas -v (no GPU: nvcc and ptxas for sm_90; the H200's 64K registers and 228 KB of shared memory
an SM; registers rounded to 256 a warp).  Sixty-first session.

    PATH=/usr/local/cuda-13.0/bin:$PATH python ptx_occupancy.py ROOT lookahead   (occupancy-after.txt)
    PATH=/usr/local/cuda-13.0/bin:$PATH python ptx_occupancy.py ROOT segmented   (ptxas-segmented-main.txt)

lookahead: every look-ahead module of the kinds tests/gpu/test_kernels_lookahead.py's blocks-an-SM
test builds, and the segmented product, max and nansum; a line says where its two kernels run
different blocks an SM (the persistent grid is the inclusive kernel's: plans.lookahead_grid).
segmented: the segmented sum, max and product over five dtypes and the compensated sums, on both
devices, forwards (and reversed for the segmented), registers and spill stores/loads of each kernel.
"""
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT, WHICH = Path(sys.argv[1]), sys.argv[2]
sys.path.insert(0, str(ROOT))
from distscan._dtypes import scan_types  # noqa: E402
from distscan.backends.cuda import compile as cc, extended, plans  # noqa: E402
from distscan.backends.cuda.ext_states import ext_module_key  # noqa: E402
from distscan.ops import get_op  # noqa: E402
from distscan.ops.derive import affine, compensated, segmented  # noqa: E402

PROPS = re.compile(r"Function properties for (\S+)\n\s+(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) "
                   r"bytes spill loads\nptxas info\s+: Used (\d+) registers, used \d+ barriers"
                   r"(?:, \d+ bytes cumulative stack size)?, (\d+) bytes smem")


def blocks_an_sm(regs: int, threads: int, smem: int) -> int:
    warps, per_warp = -(-threads // 32), -(-regs * 32 // 256) * 256
    return min(65536 // (warps * per_warp), (228 * 1024) // (smem + 1024), 2048 // threads, 32)


def kernels(key):
    """{"incl"|"excl": (registers, spill stores, spill loads, static shared bytes)} of the module's scan kernels."""
    with tempfile.TemporaryDirectory() as d:
        src, ptx = Path(d) / "k.cu", Path(d) / "k.ptx"
        table = ",\n".join(f"    (void *)&{e}" for e in cc.names(key).values())
        src.write_text(f'#include "scan_kernels.cu"\n{key.source}\nvoid *kernels[] = {{\n{table}\n}};\n')
        r = subprocess.run(["nvcc", "-arch=sm_90", *cc.options(key), f"-I{ROOT / 'kernels'}", "-ptx", str(src),
                            "-o", str(ptx)], capture_output=True, text=True, cwd=ROOT / "kernels")
        if r.returncode:
            raise RuntimeError(r.stderr[-400:])
        r = subprocess.run(["ptxas", "-arch=sm_90", "-v", str(ptx), "-o", str(ptx) + ".o"], capture_output=True,
                           text=True)
    out = {}
    for m in PROPS.finditer(r.stderr):
        if re.search(r"scan_(ext|tiles)_kernel", m.group(1)) and f"DeviceAlgorithmE{3 if key.device == 'lookahead' else ''}" in m.group(1):
            ex = "excl" if re.search(r"E(Lb1)ELNS_15DeviceAlgorithm", m.group(1)) else "incl"
            out[ex] = (int(m.group(5)), int(m.group(3)), int(m.group(4)), int(m.group(6)))
    return out


def ext_key(dt, op, device, rev=False, coef=0):
    types = scan_types(op, np.dtype(dt))
    key = ext_module_key(np.dtype(dt), types, op, device, rev, coef)
    return key, (key.tuning.lookahead_smem(np.dtype(dt), types.result, extended.staged_aux(op, types, coef))
                 if device == "lookahead" else 0)


def lookahead_cases():
    for dt in ("int8", "int32", "int64", "float32", "float64", "complex64", "complex128"):
        types = scan_types(get_op("sum"), np.dtype(dt))
        key = plans.module_key(np.dtype(dt), types, get_op("sum"), "lookahead")
        yield f"cumsum {dt}", key, key.tuning.lookahead_smem(np.dtype(dt), types.result)
    types = scan_types(get_op("max"), np.dtype("float32"))
    key = plans.module_key(np.dtype("float32"), types, get_op("max"), "lookahead")
    yield "max float32", key, key.tuning.lookahead_smem(np.dtype("float32"), types.result)
    for dt in ("float32", "float64", "complex64", "complex128"):
        yield (f"compensated {dt}", *ext_key(dt, compensated(get_op("sum")), "lookahead"))
        yield (f"segmented {dt}", *ext_key(dt, segmented(get_op("sum")), "lookahead"))
        yield (f"recurrence {dt}", *ext_key(dt, affine(False), "lookahead"))
        yield (f"recurrence {dt} one a", *ext_key(dt, affine(False), "lookahead", coef=1))
        yield (f"segmented recurrence {dt}", *ext_key(dt, affine(True), "lookahead"))
    for opn in ("prod", "max", "nansum"):
        yield (f"segmented {opn} float32", *ext_key("float32", segmented(get_op(opn)), "lookahead"))
    yield ("segmented max int32", *ext_key("int32", segmented(get_op("max")), "lookahead"))
    yield ("segmented int64", *ext_key("int64", segmented(get_op("sum")), "lookahead"))


def segmented_cases():
    for opn in ("sum", "max", "prod"):
        for dt in ("int32", "int64", "float32", "float64", "complex64"):
            if opn == "max" and dt == "complex64":
                continue
            for device in ("lookback", "lookahead"):
                for rev in (False, True):
                    yield (f"seg-{opn} {dt} {device} rev={rev}", *ext_key(dt, segmented(get_op(opn), rev), device, rev))
    for dt in ("float32", "float64"):
        for device in ("lookback", "lookahead"):
            yield (f"compensated {dt} {device}", *ext_key(dt, compensated(get_op("sum")), device))


for name, key, smem in (lookahead_cases() if WHICH == "lookahead" else segmented_cases()):
    try:
        ks = kernels(key)
    except RuntimeError as exc:
        print(name, exc)
        continue
    t = key.tuning
    shape = f"{t.block_threads}x{t.items}/{t.min_blocks}"
    if WHICH == "lookahead":
        runs = {ex: (regs, spill, blocks_an_sm(regs, t.launch_threads("lookahead"), smem + static))
                for ex, (regs, spill, _, static) in ks.items()}
        flag = "" if len({v[2] for v in runs.values()}) == 1 else "   <-- excl != incl"
        print(f"{name:32s} {shape} smem {smem:6d} {runs}{flag}", flush=True)
    else:
        print(f"{name:36s} {shape} " + ", ".join(f"{ex}: {r} regs spill {s}/{lo}" for ex, (r, s, lo, _) in ks.items()),
              flush=True)
