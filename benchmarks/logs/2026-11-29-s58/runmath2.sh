#!/bin/bash
# One H200, the fifty-eighth session, after runmath.sh: the compensated float32 sum with a sloppy
# join.  Trees (git archive of f689675, carry ["s58M", "s58S"]): M as is; S with two_sum_renorm<float>
# TwoSum of the sums, the errors added (lo + (e + te)), no renormalisation and no infinity select
# (wrong bits in general: timing only, each variant checked against its own tree's "auto").
cd "$(dirname "$0")/../../.."
export NCCL_NVLS_ENABLE=0 DISTSCAN_PROGRESS=0 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader; date -u
for round in 1 2; do for t in M S; do
  echo "== $t round $round"
  (cd s58$t && PYTHONPATH=$PWD timeout 150 python3 benchmarks/sweep_costly_tiles.py --scans "compensated f32" \
      --shapes '[]' --lookahead '[]' --reps 11 2>&1 | grep -v -E "Warning|^#")
done; done
date -u
