#!/bin/bash
# nvidia-h200-x2, the sixty-fourth session, call 7 (carry ["s64M"]): call 6 again on the mended branch
# (CuPy has no runtime.hostGetDevicePointer: the mapped word's host pointer, under unified
# addressing), tests first and nothing else where they fail; then one A/B round, M then P.
cd "$(dirname "$0")/../../.."
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0
T0=$(date +%s)
PYTHONPATH=$PWD timeout 110 python3 -m pytest -q -p no:cacheprovider -rfEs tests/gpu/test_reduce_once.py -x \
  -k "float32-sum or int64-sum or complex128-sum or int8-sum or int64-gcd or int32-prod or row or threads" > $OUT/tests.txt 2>&1
rc=$?; tail -4 $OUT/tests.txt; echo "tests rc $rc after $(( $(date +%s) - T0 )) s"
[ $rc = 0 ] || exit 1
tree() { if [ $1 = M ]; then echo $PWD/s64M; else echo $PWD; fi; }
for t in M P; do for k in 20 24 28; do
  PYTHONPATH=$(tree $t) timeout 40 mpirun --allow-run-as-root --bind-to none -n 2 python3 $(tree $t)/benchmarks/probe_seeded_launch_kind.py \
    --log2n $k --reps 41 > /tmp/ab-$t-$k.txt 2>&1
  echo "== $t 2^$k rc $? $(date -u +%T)"; grep -v Warning /tmp/ab-$t-$k.txt | tail -3 | cut -c1-60
done; done
date -u; echo "call done after $(( $(date +%s) - T0 )) s"
