#!/bin/bash
# Tame runs (kernels/util/operators.cuh, tames): the tree before (A: s45/A, carried) against this
# one (T), "auto" and the look-ahead, 2^27, two rounds; then the no-rule variant's NaN count on the
# overflow test's data (the test must see it), then the recurrence tests on T.
cd "$(dirname "$0")/../../../.."
D=benchmarks/logs/2026-11-28-s45
rm -rf /tmp/B && mkdir /tmp/B && cp -r distscan kernels /tmp/B/ && $D/zero-rule/no-rule.sh /tmp/B || exit 1
SCANS="cumsum f32,recurrence f32,recurrence f64,recurrence c64,recurrence seg f32,recurrence f32 inf"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader; date -u
for t in A T; do for alg in auto lookahead; do
  if [ $t = A ]; then P=$PWD/s45/A; else P=$PWD; fi
  PYTHONPATH=$P python3 benchmarks/ab_scans.py warm --log2n 20 --reps 1 --scans "$SCANS" --algorithm $alg > /tmp/warm-$t-$alg.txt 2>&1 &
done; done; wait; tail -n 3 /tmp/warm-*.txt; date -u
for r in 1 2; do for t in A T; do for alg in auto lookahead; do
  if [ $t = A ]; then P=$PWD/s45/A; else P=$PWD; fi
  PYTHONPATH=$P python3 benchmarks/ab_scans.py $t-$alg --log2n 27 --reps 9 --scans "$SCANS" --algorithm $alg
done; done; done
date -u
cat > /tmp/sens.py <<'PY'
import numpy as np, cupy as cp, distscan
from mpi4py import MPI
rng = np.random.default_rng(1)
n = (1 << 21) + 7
for dt, big in (("float32", 2.0**70), ("float64", 2.0**600), ("complex64", 2.0**70)):
    a = cp.asarray(rng.choice(np.array([0, 1, big]), n, p=[0.1, 0.5, 0.4]).astype(dt))
    b = cp.zeros(n, dt)
    for alg in ("lookback", "lookahead"):
        y = distscan.linear_recurrence(a, b, comm=MPI.COMM_SELF, algorithm=alg)
        print(dt, alg, "nonzero outputs:", int(cp.count_nonzero(y)), "NaN:", int(cp.count_nonzero(cp.isnan(y))))
PY
echo "--- no-rule variant (B) on the overflow test's data"; PYTHONPATH=/tmp/B python3 /tmp/sens.py
echo "--- this tree (T)"; PYTHONPATH=$PWD python3 /tmp/sens.py
date -u
export NCCL_NVLS_ENABLE=0 DISTSCAN_PROGRESS=0
timeout 330 python3 -m pytest -q -p no:cacheprovider -x tests/gpu/test_operators.py -k "zero or overflow or linear_recurrence or ring_stages or sizes_of_4" 2>&1 | tail -15
date -u
