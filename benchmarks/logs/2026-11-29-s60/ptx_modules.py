"""PTX and ptxas registers of a tree's kernel modules, hashed, for comparing trees without a GPU
(no cuobjdump here: PTX is what nvcc emits).

    PATH=/usr/local/cuda-13.0/bin:$PATH python ptx_modules.py ROOT OUTDIR compensated|affine

compensated: the compensated sum's modules (float32, float64, complex64; look-back and look-ahead;
both directions).  affine: the recurrences' (float32, float64, complex64; look-ahead and look-back;
both directions; plain and segmented).  One line a module: lines of PTX, sha1, registers a kernel;
each module's PTX is written to OUTDIR.
"""
import hashlib
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT, OUTDIR, WHICH = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
sys.path.insert(0, str(ROOT))
from distscan._dtypes import scan_types  # noqa: E402
from distscan.backends.cuda import compile as cc, extended  # noqa: E402
from distscan.ops import affine, compensated, get_op  # noqa: E402


def cases():
    for dt in ("float32", "float64", "complex64"):
        for device in ("lookahead", "lookback"):
            for rev in (False, True):
                if WHICH == "compensated":
                    yield f"{dt}-{device}-{rev}", dt, compensated(get_op("sum")), device, rev
                else:
                    for seg in (False, True):
                        yield f"{dt}-{device}-{rev}-{seg}", dt, affine(seg, rev), device, rev


OUTDIR.mkdir(exist_ok=True)
with tempfile.TemporaryDirectory() as d:
    src, ptx = Path(d) / "k.cu", Path(d) / "k.ptx"
    for name, dt, op, device, rev in cases():
        key = extended.ext_module_key(np.dtype(dt), scan_types(op, np.dtype(dt)), op, device, rev, 0)
        table = ",\n".join(f"    (void *)&{e}" for e in cc.names(key).values())
        src.write_text(f'#include "scan_kernels.cu"\n{key.source}\nvoid *kernels[] = {{\n{table}\n}};\n')
        cmd = ["nvcc", "-arch=sm_90", *cc.options(key), f"-I{ROOT / 'kernels'}", "-ptx", str(src), "-o", str(ptx)]
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT / "kernels")
        if r.returncode:
            print(name, r.stderr[-3000:])
            continue
        text = ptx.read_text()
        r2 = subprocess.run(["ptxas", "-arch=sm_90", "-v", str(ptx), "-o", str(ptx) + ".o"], capture_output=True, text=True)
        regs = re.findall(r"Used (\d+) registers", r2.stderr)
        sha = hashlib.sha1(text.encode()).hexdigest()[:12]
        print(f"{name:32} lines={len(text.splitlines()):6} sha={sha} regs={regs}", flush=True)
        (OUTDIR / f"{name}.ptx").write_text(text)
