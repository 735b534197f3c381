"""PTX and ptxas registers of the affine (recurrence) kernels of a tree: ROOT OUTDIR."""
import hashlib, re, subprocess, sys, tempfile
from pathlib import Path
import numpy as np
ROOT = Path(sys.argv[1]); sys.path.insert(0, str(ROOT))
from distscan._dtypes import scan_types
from distscan.backends.cuda import compile as cc, extended
from distscan.ops import affine
Path(sys.argv[2]).mkdir(exist_ok=True)
with tempfile.TemporaryDirectory() as d:
    src, ptx = Path(d) / "k.cu", Path(d) / "k.ptx"
    for dt in ("float32", "float64", "complex64"):
        for device in ("lookahead", "lookback"):
            for rev in (False, True):
                for seg in (False, True):
                    op = affine(seg, rev)
                    key = extended.ext_module_key(np.dtype(dt), scan_types(op, np.dtype(dt)), op, device, rev, 0)
                    exprs = list(cc.names(key).values())
                    table = ",\n".join(f"    (void *)&{e}" for e in exprs)
                    src.write_text(f'#include "scan_kernels.cu"\n{key.source}\nvoid *kernels[] = {{\n{table}\n}};\n')
                    cmd = ["nvcc", "-arch=sm_90", *cc.options(key), f"-I{ROOT / 'kernels'}", "-ptx", str(src), "-o", str(ptx)]
                    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT / "kernels")
                    if r.returncode: print(dt, device, rev, seg, r.stderr[-3000:]); continue
                    s = ptx.read_text()
                    r2 = subprocess.run(["ptxas", "-arch=sm_90", "-v", str(ptx), "-o", str(ptx) + ".o"], capture_output=True, text=True)
                    regs = re.findall(r"Used (\d+) registers", r2.stderr)
                    h = hashlib.sha1(s.encode()).hexdigest()[:12]
                    print(f"{dt:10} {device:10} rev={rev!s:5} seg={seg!s:5} lines={len(s.splitlines()):6} sha={h} regs={regs}", flush=True)
                    Path(sys.argv[2], f"{dt}-{device}-{rev}-{seg}.ptx").write_text(s)
