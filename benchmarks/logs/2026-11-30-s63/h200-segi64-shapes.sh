#!/bin/bash
# nvidia-h200, the sixty-third session: the segmented int64 sum (issue 30's row at 0.76 of copy on
# the look-back, which is near the L2's bound) on the look-ahead in shapes not swept before
# (sweep_state_tiles.py --device lookahead; "auto", the look-back, in the same repetitions), 2^27
# twice.  (threads, items, window, blocks an SM, stages, depth, behind); stages - depth >= 2.
cd "$(dirname "$0")/../../.."
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0
T0=$(date +%s)
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; date -u
S='{"16": [[128,16,1024,2,6,4,2],[128,16,1024,2,5,3,2],[64,16,1024,4,6,4,2],[64,16,1024,4,5,3,2],[64,16,1024,3,8,6,2],[64,16,1024,3,6,4,2],[128,16,1024,1,12,10,2]]}'
for r in a b; do
  PYTHONPATH=$PWD timeout $(( 570 - ($(date +%s) - T0) )) python3 benchmarks/sweep_state_tiles.py $OUT/segi64-27-$r.json --log2n 27 --reps 15 \
      --device lookahead --scans "segmented sum i64" --shapes "$S" > $OUT/segi64-27-$r.txt 2>&1
  echo "== 2^27 ($r) rc $? after $(( $(date +%s) - T0 )) s"; grep -v Warning $OUT/segi64-27-$r.txt | tail -12 | cut -c1-160
done
date -u
