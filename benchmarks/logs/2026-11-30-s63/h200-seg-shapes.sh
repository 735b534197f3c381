#!/bin/bash
# nvidia-h200, the sixty-third session: the forward segmented float32 sum's look-ahead shapes (issue
# 30's row at 0.844-0.858 of copy, on the 0.85 line).  sweep_state_tiles.py --device lookahead, the
# default (128 x 16, 3 blocks an SM, 6 stages, depth 4, behind 2) against seven others in the same
# repetitions, among them the default before 161c90d (2 blocks an SM), at 2^27 twice and 2^29 once.
cd "$(dirname "$0")/../../.."
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0
T0=$(date +%s)
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; date -u
S='{"8": [[128,16,1024,2,6,4,2],[128,16,1024,3,7,5,2],[128,16,1024,3,6,4,3],[64,16,1024,5,7,5,2],[64,16,1024,6,6,4,2],[128,16,1024,2,9,7,2],[128,16,1024,3,5,3,2]]}'
for r in "27 a" "29 b" "27 c"; do set -- $r
  PYTHONPATH=$PWD timeout $(( 570 - ($(date +%s) - T0) )) python3 benchmarks/sweep_state_tiles.py $OUT/seg-$1-$2.json --log2n $1 --reps 15 \
      --device lookahead --scans "segmented sum f32" --shapes "$S" > $OUT/seg-$1-$2.txt 2>&1
  echo "== 2^$1 ($2) rc $? after $(( $(date +%s) - T0 )) s"; grep -v Warning $OUT/seg-$1-$2.txt | tail -14 | cut -c1-160
done
date -u
