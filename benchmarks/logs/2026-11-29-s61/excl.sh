#!/bin/bash
# Session 61, one H200 (~200 s): do the exclusive segmented scans pay for their look-back kernels'
# spills (ptxas at main: exclusive segmented int64 look-back 168 registers, 332 bytes of spill
# stores, the inclusive one 149 and none; float32 128 and 216 bytes against 88 and none)?
# ab_scans.py, inclusive against exclusive, "auto" twice and the look-ahead once.
cd "$(dirname "$0")/../../.."
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0 PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader; date -u
S="segmented sum i64,segmented excl sum i64,segmented sum f32,segmented excl sum f32,segmented sum f64,segmented excl sum f64"
S="$S,segmented rev sum i64,segmented excl rev sum i64,segmented rev sum f32,segmented excl rev sum f32,cumsum f32,exclusive cumsum f32"
for r in 1 2; do
  timeout 240 python3 benchmarks/ab_scans.py auto-$r --log2n 27 --reps 9 --scans "$S" 2>&1 | grep -v Warning
  date -u
done
timeout 200 python3 benchmarks/ab_scans.py lookahead --log2n 27 --reps 9 --algorithm lookahead --scans "$S" 2>&1 | grep -v Warning
date -u
