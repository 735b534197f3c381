#!/bin/bash
# The tame look-back with the data warps' part (branch s45-tame-lookback, its second commit): main (M:
# s45/M = `git archive main kernels distscan`, carried) against this tree (L),
# "auto" and the look-ahead, 2^27, one GPU, two rounds; then the recurrence tests on L.
cd "$(dirname "$0")/../../../.."
SCANS="cumsum f32,recurrence f32,recurrence f64,recurrence c64,recurrence seg f32,recurrence f32 inf,recurrence rev f32"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader; date -u
for t in M L; do for alg in auto lookahead; do
  if [ $t = M ]; then P=$PWD/s45/M; else P=$PWD; fi
  PYTHONPATH=$P python3 benchmarks/ab_scans.py warm --log2n 20 --reps 1 --scans "$SCANS" --algorithm $alg > /tmp/warm-$t-$alg.txt 2>&1 &
done; done; wait; tail -qn 1 /tmp/warm-*.txt; date -u
for r in 1 2; do for t in M L; do for alg in auto lookahead; do
  if [ $t = M ]; then P=$PWD/s45/M; else P=$PWD; fi
  PYTHONPATH=$P python3 benchmarks/ab_scans.py $t-$alg --log2n 27 --reps 9 --scans "$SCANS" --algorithm $alg
done; done; done
date -u
export NCCL_NVLS_ENABLE=0 DISTSCAN_PROGRESS=0 PYTHONPATH=$PWD
timeout 200 python3 benchmarks/logs/2026-11-28-s45/lookback/tests.py 2>&1 | tail -40
date -u
