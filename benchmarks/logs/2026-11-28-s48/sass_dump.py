"""Dump nvcc SASS of the state-scan modules of TREE into OUT (one dir per module)."""
import sys, subprocess
from pathlib import Path
tree, out = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
sys.path.insert(0, str(tree)); sys.path.insert(0, "/work/main/benchmarks")
import numpy as np
from distscan._dtypes import scan_types
from distscan.backends.cuda import compile as cc, extended
from distscan.ops import get_op
from distscan.ops import affine, segmented
import sass_compare as sc
from concurrent.futures import ProcessPoolExecutor
cases = [("aff-f32-lb", affine(), "float32", "lookback", False), ("aff-f32-la", affine(), "float32", "lookahead", False),
         ("aff-f64-lb", affine(), "float64", "lookback", False), ("aff-f64-la", affine(), "float64", "lookahead", False),
         ("aff-c64-lb", affine(), "complex64", "lookback", False), ("aff-c64-la", affine(), "complex64", "lookahead", False),
         ("segaff-f32-la", affine(True), "float32", "lookahead", False),
         ("segsum-f32-la", segmented(get_op("sum")), "float32", "lookahead", False),
         ("aff-f32-lb-rev", affine(), "float32", "lookback", True),
         ("sum-f32-plain", None, "float32", "auto", False),
         ("revseg-f32-lb", segmented(get_op("sum"), True), "float32", "lookback", True),
         ("revseg-i64-la", segmented(get_op("max"), True), "int64", "lookahead", True),
         ("revsegaff-f64-lb", affine(True, True), "float64", "lookback", True)]
def one(i):
    c = cases[i]
    label, op, dt, device, rev = c
    from distscan.backends import cuda as gpu
    if op is None:
        key = gpu.module_key(np.dtype(dt), scan_types(get_op("sum"), np.dtype(dt)), get_op("sum"), device)
    else:
        key = extended.ext_module_key(np.dtype(dt), scan_types(op, np.dtype(dt)), op, device, rev)
    d = out / label
    sc.compile_nvcc(cc, key, d)
    sass = subprocess.run(["cuobjdump", "-sass", str(d / "module.cubin")], capture_output=True, text=True, check=True).stdout
    (d / "sass.txt").write_text(sass)
    return label
with ProcessPoolExecutor(2) as ex:
    for l in ex.map(one, range(len(cases))): print("done", l, flush=True)
