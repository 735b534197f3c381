#!/bin/bash
# Where the zero rule's cost lies, 3 (exp5 on an H100): this tree (A), WL (levels.py: the runs, the warp scans, the
# block fold without the tests; WL the look-back too) and B (no rule anywhere: no-rule.sh), timing-only
# variants; "auto" and the look-ahead, 2^27, one GPU, two rounds.
cd "$(dirname "$0")/../../../.."
D=benchmarks/logs/2026-11-28-s45
for v in WL B; do rm -rf /tmp/$v && mkdir /tmp/$v && cp -r distscan kernels /tmp/$v/ || exit 1; done
python3 $D/where/levels.py /tmp/WL WL && $D/zero-rule/no-rule.sh /tmp/B || exit 1
SCANS="cumsum f32,recurrence f32,recurrence f64,recurrence c64"
export CUDA_VISIBLE_DEVICES=0
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader; date -u
for t in A WL B; do for alg in auto lookahead; do
  if [ $t = A ]; then P=$PWD; else P=/tmp/$t; fi
  PYTHONPATH=$P python3 benchmarks/ab_scans.py warm --log2n 20 --reps 1 --scans "$SCANS" --algorithm $alg > /tmp/warm-$t-$alg.txt 2>&1 &
done; done; wait; tail -qn 1 /tmp/warm-*.txt; date -u
for r in 1 2; do for t in A WL B; do for alg in auto lookahead; do
  if [ $t = A ]; then P=$PWD; else P=/tmp/$t; fi
  PYTHONPATH=$P python3 benchmarks/ab_scans.py $t-$alg --log2n 27 --reps 9 --scans "$SCANS" --algorithm $alg
done; done; done
date -u
