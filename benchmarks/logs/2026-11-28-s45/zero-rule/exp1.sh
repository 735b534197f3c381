#!/bin/bash
# The zero rule's cost: recurrences with the rule (A, this tree) and without it (B: no-rule.sh, a
# timing-only variant), on "auto" (the look-back) and the look-ahead, 2^27, GPU time, two rounds.
cd "$(dirname "$0")/../../../.."
D=benchmarks/logs/2026-11-28-s45/zero-rule
rm -rf /tmp/B && mkdir /tmp/B && cp -r distscan kernels benchmarks /tmp/B/ && $D/no-rule.sh /tmp/B || exit 1
SCANS="cumsum f32,recurrence f32,recurrence f64,recurrence c64,recurrence seg f32"
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader
date -u
# fill CuPy's kernel cache in parallel (each tree and algorithm one process, one rep)
for t in A B; do for alg in auto lookahead; do
  if [ $t = A ]; then P=$PWD; else P=/tmp/B; fi
  PYTHONPATH=$P python3 $P/benchmarks/ab_scans.py warm --log2n 20 --reps 1 --scans "$SCANS" --algorithm $alg > /dev/null 2>&1 &
done; done; wait
date -u
for r in 1 2; do for t in A B; do for alg in auto lookahead; do
  if [ $t = A ]; then P=$PWD; else P=/tmp/B; fi
  PYTHONPATH=$P python3 $P/benchmarks/ab_scans.py $t-$alg --log2n 27 --reps 9 --scans "$SCANS" --algorithm $alg
done; done; done
date -u
