#!/bin/bash
# For the next session, one H200 (~150 s): next/starts-pinned.patch (the exclusive scans' segment
# mask pinned after the lift; NOTES-gpu.md, the sixty-first session) against main.  Before the call,
# in the repository root:
#   git archive HEAD distscan kernels | (mkdir -p s62M && tar -x -C s62M)     # main, carried
#   git apply benchmarks/logs/2026-11-29-s61/next/starts-pinned.patch        # the working tree = P
# run with carry ["s62M"]; afterwards `git checkout -- kernels` (or commit, if it gains, and run the
# whole GPU suite after it).  ptxas at the patch (logs/2026-11-29-s61/segmented-pinned.txt against
# ptxas-segmented-main.txt) says: exclusive look-back spills int64 332 -> 32 bytes, float64 344 -> 0,
# float32 216 -> 52; reversed complex64 32 -> 80 (worse); the inclusive kernels unchanged.
cd "$(dirname "$0")/../../../.."
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0
nvidia-smi --query-gpu=name --format=csv,noheader; date -u
# the same bits: segmented GPU tests with exclusive cases on the patched tree (cut at 150 s)
PYTHONPATH=$PWD timeout 150 python3 -m pytest -q -p no:cacheprovider -x tests/gpu/test_operators.py \
  -k "segmented_matches_the_cpu or segment_starts_at_warp or gcd_and_lcm_exclusive" 2>&1 | tail -2
S="segmented sum i64,segmented excl sum i64,segmented sum f64,segmented excl sum f64"
S="$S,segmented rev sum i64,segmented excl rev sum i64,segmented rev sum f32,segmented excl rev sum f32"
B="segmented sum f32,segmented excl sum f32"   # forward float32 on the look-back (auto: the look-ahead)
for r in 1 2; do for t in P M; do
  if [ $t = P ]; then T=$PWD; else T=$PWD/s62M; fi
  PYTHONPATH=$T timeout 100 python3 benchmarks/ab_scans.py $t-$r --log2n 27 --reps 9 --scans "$S" 2>&1 | grep -v Warning
  PYTHONPATH=$T timeout 60 python3 benchmarks/ab_scans.py $t-$r-lb --log2n 27 --reps 9 --algorithm lookback --scans "$B" 2>&1 | grep -v Warning
done; done
date -u
