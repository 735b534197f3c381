"""PTX and ptxas registers of every compensated-sum kernel (all roles, look-back and look-ahead, both directions), hashed.
No GPU, no cuobjdump here: PTX is what nvcc emits for the tree; usage: ptx_compensated.py OUTDIR lookback,lookahead"""
import hashlib, re, subprocess, sys, tempfile
from pathlib import Path
import numpy as np
ROOT = Path("/work/main"); sys.path.insert(0, str(ROOT))
from distscan._dtypes import scan_types
from distscan.backends.cuda import compile as cc, extended
from distscan.ops import compensated, get_op
out = {}
with tempfile.TemporaryDirectory() as d:
    src, cubin = Path(d) / "k.cu", Path(d) / "k.cubin"
    for dt in ("float32", "float64", "complex64"):
        for device in sys.argv[2].split(","):
            for rev in (False, True):
                op = compensated(get_op("sum"))
                key = extended.ext_module_key(np.dtype(dt), scan_types(op, np.dtype(dt)), op, device, rev, 0)
                exprs = list(cc.names(key).values())
                table = ",\n".join(f"    (void *)&{e}" for e in exprs)
                src.write_text(f'#include "scan_kernels.cu"\n{key.source}\nvoid *kernels[] = {{\n{table}\n}};\n')
                cmd = ["nvcc", "-arch=sm_90", *cc.options(key), f"-I{ROOT / 'kernels'}", "-ptx", str(src), "-o", str(cubin)]
                r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT / "kernels")
                if r.returncode: print(dt, device, rev, r.stderr[-1500:]); continue
                s = cubin.read_text()
                r2 = subprocess.run(["ptxas", "-arch=sm_90", "-v", str(cubin), "-o", str(cubin) + ".o"], capture_output=True, text=True)
                regs = re.findall(r"Used (\d+) registers", r2.stderr)
                n = len(s.splitlines())
                h = hashlib.sha1(s.encode()).hexdigest()[:12]
                print(f"{dt:10} {device:10} rev={rev!s:5} instr-lines={n:6} sha={h} regs={regs}")
                Path(sys.argv[1]).mkdir(exist_ok=True)
                Path(sys.argv[1], f"{dt}-{device}-{rev}.ptx").write_text(s)
