#!/bin/bash
# Session 61 (~80 s, GPU 0): the segmented look-ahead of 8-byte states asking for three blocks an SM
# (F, the working tree) against main (M: s61M, carried), two rounds alternating, ab_scans.py:
# "auto" (the look-ahead forward), and the look-ahead forced for the reverse scans (also changed).
cd "$(dirname "$0")/../../.."
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0 CUDA_VISIBLE_DEVICES=0
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader -i 0; date -u
S="segmented sum f32,segmented excl sum f32,cumsum f32"
R="segmented rev sum f32,segmented excl rev sum f32"
for r in 1 2; do for t in F M; do
  if [ $t = F ]; then P=$PWD; else P=$PWD/s61M; fi
  PYTHONPATH=$P timeout 100 python3 benchmarks/ab_scans.py $t-auto --log2n 27 --reps 9 --scans "$S" 2>&1 | grep -v Warning
  PYTHONPATH=$P timeout 100 python3 benchmarks/ab_scans.py $t-la --log2n 27 --reps 9 --algorithm lookahead --scans "$R" 2>&1 | grep -v Warning
done; done
date -u
