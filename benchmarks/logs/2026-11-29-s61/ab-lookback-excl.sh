#!/bin/bash
# Session 61's last call (~150 s, one H200): the 16-byte segmented look-back asking for 2 blocks an SM
# (X: s61X, carried: its exclusive kernels then take 182-207 registers and no spill, against 168
# and 332-344 bytes of spill at 3) against main (M: this tree), ab_scans.py, GPU time.  An
# experiment for the next session, not a change.
cd "$(dirname "$0")/../../.."
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0
nvidia-smi --query-gpu=name --format=csv,noheader; date -u
S="segmented sum i64,segmented excl sum i64,segmented excl sum f64,segmented sum f64,segmented rev sum i64,segmented excl rev sum i64"
for r in 1 2; do for t in X M; do
  if [ $t = X ]; then P=$PWD/s61X; else P=$PWD; fi
  PYTHONPATH=$P timeout 80 python3 benchmarks/ab_scans.py $t-$r --log2n 27 --reps 9 --scans "$S" 2>&1 | grep -v Warning
done; done
date -u
