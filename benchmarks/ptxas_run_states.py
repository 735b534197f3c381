"""What registers and static shared memory do the run-state operators' look-ahead kernels take, and
do their slots (RESCAN, kernels/agent/agent_lookahead.cuh) still let the shape's blocks fit an SM?

    PATH=/usr/local/cuda/bin:$PATH python3 benchmarks/ptxas_run_states.py [--arch sm_90]

No GPU needed: each kernel is compiled with nvcc and the host's options (compile.options), and
ptxas reports its registers and static shared memory.  Printed beside each: the tile shape, its
blocks an SM (``min_blocks``), the ring's dynamic shared memory, and whether min_blocks blocks of
ring + static + the 1 KB the system reserves a block fit the 228 KB of an sm_90 SM.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from distscan._dtypes import scan_types  # noqa: E402
from distscan.backends import cuda as gpu  # noqa: E402
from distscan.backends.cuda import compile as cc, extended  # noqa: E402
from distscan.ops import compensated, get_op  # noqa: E402

SM_SHARED = 228 * 1024
RESERVED = 1024


def cases():
    for dt in ("float32", "float64", "complex64", "complex128"):
        op = compensated(get_op("sum"))
        yield f"compensated {dt}", extended.ext_module_key(np.dtype(dt), scan_types(op, np.dtype(dt)), op,
                                                           "lookahead", False, 0)
    for dt in ("float32", "float64"):
        for name in ("logaddexp", "logaddexp2"):
            op = get_op(name)
            yield f"{name} {dt}", gpu.module_key(np.dtype(dt), scan_types(op, np.dtype(dt)), op, "lookahead")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", default="sm_90")
    arch = ap.parse_args().arch
    print(f"{'kernel':22} {'shape':>7} {'blocks':>6} {'ring':>7} {'regs':>5} {'static':>7}  fits")
    with tempfile.TemporaryDirectory() as d:
        src, cubin = Path(d) / "k.cu", Path(d) / "k.cubin"
        for name, key in cases():
            exprs = [e for role, e in cc.names(key).items() if role in ("scan_incl", "ext_incl")]
            table = ",\n".join(f"    (void *)&{e}" for e in exprs)
            src.write_text(f'#include "scan_kernels.cu"\n{key.source}\nvoid *kernels[] = {{\n{table}\n}};\n')
            cmd = ["nvcc", f"-arch={arch}", *cc.options(key), f"-I{ROOT / 'kernels'}", "-cubin", "-Xptxas", "-v",
                   str(src), "-o", str(cubin)]
            r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT / "kernels")
            if r.returncode:
                print(name, r.stderr[-2000:])
                continue
            regs, static = map(int, re.findall(r"Used (\d+) registers.*?(\d+) bytes smem", r.stderr)[0])
            t = key.tuning
            ring = t.lookahead_smem(key.in_dtype, key.out_dtype)
            fits = t.min_blocks * (ring + static + RESERVED) <= SM_SHARED
            print(f"{name:22} {t.block_threads:>3}x{t.items:<3} {t.min_blocks:6} {ring:7} {regs:5} {static:7}  {fits}")


if __name__ == "__main__":
    main()
