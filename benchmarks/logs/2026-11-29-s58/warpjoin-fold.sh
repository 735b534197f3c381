#!/bin/bash
# One H200, the fifty-eighth session's last call: the block's fold of the warp totals with the warps'
# joins too.  Trees (git archive of 63cafaa, carry ["s58M", "s58W", "s58X"]): M main; W with
# next/warp-joins.patch; X = W + block_scan_coarsened.cuh's scan_down folding the warp totals by
# warp_scan_join and closing the aggregate and the warp's exclusive prefix (warp_close).
# ab_compensated.py checks each tree's float32 sums within 2 ulp of the exact prefix first.
cd "$(dirname "$0")/../../.."
export NCCL_NVLS_ENABLE=0 DISTSCAN_PROGRESS=0 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader; date -u
for round in 1 2; do for t in M W X; do
  echo "== $t round $round"
  (cd s58$t && PYTHONPATH=$PWD timeout 60 python3 benchmarks/ab_compensated.py $t-$round --reps 15 2>&1 | grep -v Warning | grep float32)
done; done
date -u
