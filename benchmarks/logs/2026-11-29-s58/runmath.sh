#!/bin/bash
# One H200, the fifty-eighth session: how much of the compensated float32 sum's time is its math?
# Three trees (git archive of 93f3285, carry ["s58M", "s58P", "s58Q"]): M as is; P with a thread's
# run a plain addition (neumaier_add without its error terms); Q with every join (two_sum_renorm:
# the warp's, the block's, the look-back's) a plain addition of sums and of errors.  P and Q give
# wrong bits: timing only, each variant checked against its own tree's "auto".
# sweep_costly_tiles.py on the default shapes: "auto" (the look-back with its lead), the look-back
# without the overrides, the look-ahead, against the plain cumsum f32 of the same run.
cd "$(dirname "$0")/../../.."
export NCCL_NVLS_ENABLE=0 DISTSCAN_PROGRESS=0 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader; date -u
for round in 1 2; do for t in M P Q; do
  echo "== $t round $round"
  (cd s58$t && PYTHONPATH=$PWD timeout 150 python3 benchmarks/sweep_costly_tiles.py --scans "compensated f32" \
      --shapes '[]' --lookahead '[]' --reps 11 2>&1 | grep -v -E "Warning|^#")
done; done
date -u
