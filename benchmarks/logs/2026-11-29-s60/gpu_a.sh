#!/bin/bash
# nvidia-h200, the sixtieth session's first call: the compensated sum before (s60old: the tree of
# e02fbf1, carried) and after the split of two_sum_renorm (0805b3f), two rounds each in its own
# process; then the GPU fuzz harness at 1, 2 and 3 ranks (hunt-gpu/run.sh).
cd "$(dirname "$0")/../../.."
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0
date -u; nvidia-smi -L
for r in 1 2; do
  PYTHONPATH=$PWD/s60old timeout 120 python3 benchmarks/ab_compensated.py before --reps 15
  PYTHONPATH=$PWD timeout 120 python3 benchmarks/ab_compensated.py after --reps 15
done > $OUT/ab.txt 2>&1
grep -v Warn $OUT/ab.txt | tail -12
bash benchmarks/logs/2026-11-29-s60/hunt-gpu/run.sh
