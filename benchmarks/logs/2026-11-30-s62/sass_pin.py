"""SASS opcode counts of a segmented sum look-back module's exclusive and inclusive kernels (sixty-second
session): the main tree against the pinned-mask patch.  nvcc 13.0 and ptxas for sm_90, cuobjdump from
the nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm 13.5 wheels unzipped in /tmp/cutools (no GPU).

    PATH=/usr/local/cuda-13.0/bin:$PATH python sass_pin.py TREE int64|float64    (sass-pin.txt)
"""
import collections, re, subprocess, sys, tempfile
from pathlib import Path
import numpy as np
ROOT = Path(sys.argv[1]); DT = sys.argv[2]
sys.path.insert(0, str(ROOT))
from distscan._dtypes import scan_types
from distscan.backends.cuda import compile as cc
from distscan.backends.cuda.ext_states import ext_module_key
from distscan.ops import get_op
from distscan.ops.derive import segmented
op = segmented(get_op("sum"))
types = scan_types(op, np.dtype(DT))
key = ext_module_key(np.dtype(DT), types, op, "lookback", False, 0)
d = Path(tempfile.mkdtemp())
src, ptx, cub = d / "k.cu", d / "k.ptx", d / "k.cubin"
table = ",\n".join(f"    (void *)&{e}" for e in cc.names(key).values())
src.write_text(f'#include "scan_kernels.cu"\n{key.source}\nvoid *kernels[] = {{\n{table}\n}};\n')
subprocess.run(["nvcc", "-arch=sm_90", *cc.options(key), f"-I{ROOT / 'kernels'}", "-ptx", str(src), "-o", str(ptx)], check=True, cwd=ROOT / "kernels")
subprocess.run(["ptxas", "-arch=sm_90", str(ptx), "-o", str(cub)], check=True)
sass = subprocess.run(["/tmp/cutools/nvidia/cu13/bin/cuobjdump", "-sass", str(cub)], capture_output=True, text=True, check=True).stdout
funcs = re.split(r"\n\s+Function : ", sass)[1:]
for f in funcs:
    name = f.split("\n", 1)[0]
    if "scan_ext_kernel" not in name or "DeviceAlgorithmE0" not in name and "DeviceAlgorithm" not in name:
        continue
    ex = "excl" if re.search(r"E(Lb1)ELNS_15DeviceAlgorithm", name) else "incl"
    ops = collections.Counter(m.group(1).split(".")[0] for m in re.finditer(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]+)", f))
    total = sum(ops.values())
    print(ex, DT, "total", total, " ".join(f"{k}:{v}" for k, v in ops.most_common(22)))
