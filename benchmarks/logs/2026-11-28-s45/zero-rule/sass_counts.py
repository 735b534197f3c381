"""Static SASS of the recurrences' scan kernels in a tree: registers and instruction counts.

    PATH=CUDA_BIN:$PATH DISTSCAN_NVRTC_LIB=libnvrtc.so python3 sass_counts.py TREE OUT
"""
import collections
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

tree, out = Path(sys.argv[1]), Path(sys.argv[2])
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # benchmarks/
import sass_compare  # noqa: E402

sys.path.insert(0, str(tree))
from distscan._dtypes import scan_types  # noqa: E402
from distscan.backends.cuda import compile as cc, extended  # noqa: E402
from distscan.ops.derive import affine  # noqa: E402

for segments in (False, True):
    for dt in ("float32", "float64", "complex64"):
        if segments and dt != "float32":
            continue
        for device in ("lookback", "lookahead"):
            op = affine(segments)
            key = extended.ext_module_key(np.dtype(dt), scan_types(op, np.dtype(dt)), op, device, False)
            d = out / f"{'seg-' if segments else ''}{dt}-{device}"
            sass_compare.compile_nvcc(cc, key, d)  # NVRTC 13.1 refuses the sources without -default-device
            text = subprocess.run(["cuobjdump", "-sass", str(d / "module.cubin")], check=True, capture_output=True,
                                  text=True).stdout
            usage = subprocess.run(["cuobjdump", "-res-usage", str(d / "module.cubin")], check=True,
                                   capture_output=True, text=True).stdout
            funcs = sass_compare._sections(text, r"\s*Function : (\S+)")
            name = max((f for f in funcs if "scan_ext" in f), key=lambda f: len(funcs[f]))  # the inclusive scan
            res = {"sass": funcs[name], "res": re.search(re.escape(name) + r":\n\s*(.*)", usage).group(1)}
            ops = collections.Counter(m.group(1).split(".")[0] for m in
                                      re.finditer(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", res["sass"]))
            total = sum(ops.values())
            top = ", ".join(f"{k} {v}" for k, v in ops.most_common(8))
            regs = re.search(r"REG:(\d+)", res["res"]).group(1)
            print(f"{d.name:24s} regs {regs:>4s} instr {total:6d}  {top}", flush=True)
