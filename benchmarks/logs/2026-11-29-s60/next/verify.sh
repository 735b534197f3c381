#!/bin/bash
# For the next session, one H200 (~200 s): the verify-after patch (next/verify-after.patch,
# NOTES-gpu.md, sixtieth session) against main.  Before the call, in /work/main:
#   git archive HEAD distscan kernels | (mkdir -p s61M && tar -x -C s61M)      # main, carried
#   git apply benchmarks/logs/2026-11-29-s60/next/verify-after.patch           # the working tree = V
# run with carry ["s61M"]; afterwards `git checkout -- kernels` (or commit, if it gains, and run
# the whole GPU suite after it).
cd "$(dirname "$0")/../../../.."
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader; date -u
# 1. the guards of the zero rule on the patched tree (bits against the look-back and the CPU,
#    rare non-finite coefficients, products that overflow, every lane, thread and tile)
PYTHONPATH=$PWD timeout 200 python3 -m pytest -q -p no:cacheprovider -x tests/gpu/test_operators.py \
  -k "coefficient or overflow or recurrence" 2>&1 | tail -3
date -u
# 1b. the same bits as main: forward and reverse float32 recurrences, 2^24, on the look-ahead and
#     "auto", with coefficients finite, rarely infinite or NaN, with |a| > 1, and overflowing
BITS='
import sys, numpy as np, cupy as cp, distscan
from mpi4py import MPI
rs = np.random.default_rng(7); n = 1 << 24
b = cp.asarray(rs.standard_normal(n).astype(np.float32))
a = {"tame": rs.uniform(0.5, 1.0, n), "wide": rs.uniform(-1.25, 1.25, n), "big": rs.uniform(1.5, 3.0, n)}
rare = rs.uniform(0.5, 1.0, n); rare[rs.random(n) < 1e-5] = np.inf; rare[rs.random(n) < 1e-5] = np.nan
a["rare"] = rare
out = {}
for name, coef in a.items():
    c = cp.asarray(coef.astype(np.float32))
    for alg in ("auto", "lookahead"):
        for rev in (False, True):
            y = distscan.linear_recurrence(c, b, reverse=rev, algorithm=alg, comm=MPI.COMM_SELF)
            out[f"{name}-{alg}-{rev}"] = cp.asnumpy(y)
np.savez(sys.argv[1], **out)
'
PYTHONPATH=$PWD timeout 120 python3 -c "$BITS" /tmp/V.npz && PYTHONPATH=$PWD/s61M timeout 120 python3 -c "$BITS" /tmp/M.npz
python3 -c "
import numpy as np
v, m = np.load('/tmp/V.npz'), np.load('/tmp/M.npz')
for k in v.files:
    same = v[k].view(np.uint32).tobytes() == m[k].view(np.uint32).tobytes()
    print(k, 'same bits' if same else 'DIFFERENT: %d items' % int((v[k].view(np.uint32) != m[k].view(np.uint32)).sum()))
"
date -u
# 2. A/B: "auto" (the look-ahead for the forward float32 recurrence on the H200), the reverse one,
#    and the look-ahead forced, with rare infinities (f32 inf) and |a| > 1 (f32 wide) as controls
S="recurrence f32,recurrence rev f32,recurrence f32 inf,recurrence f32 wide,recurrence f32 late"
for r in 1 2; do for t in V M; do
  if [ $t = V ]; then P=$PWD; else P=$PWD/s61M; fi
  PYTHONPATH=$P timeout 60 python3 benchmarks/ab_scans.py $t-auto --log2n 27 --reps 9 --scans "$S" 2>&1 | grep -v Warning
  PYTHONPATH=$P timeout 60 python3 benchmarks/ab_scans.py $t-la --log2n 27 --reps 9 --algorithm lookahead \
    --scans "recurrence rev f32" 2>&1 | grep -v Warning
done; done
date -u
