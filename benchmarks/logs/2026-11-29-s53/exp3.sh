#!/bin/bash
# Session 53, third call (one H200): around exp2's best look-back shapes of the recurrences with
# kernel states over 16 bytes ((128, 32, 1) segmented, (128, 16, 2) complex128), the reversed
# segmented complex64 too; the look-ahead's segmented shapes of 16 items (exp2's 8-item ring
# shapes do not compile with flags).
cd "$(dirname "$0")/../../.."
O=${OUT:-/tmp}
export NCCL_NVLS_ENABLE=0 DISTSCAN_PROGRESS=0 PYTHONUNBUFFERED=1
SH='{"24": [[128,32,1024,1],[128,32,1024,2],[64,32,1024,2],[64,32,1024,3],[256,32,1024,1],[128,16,1024,2],[128,16,1024,3],[64,16,1024,4]]}'
PYTHONPATH=$PWD timeout 300 python3 benchmarks/sweep_state_tiles.py $O/back.json --reps 7 --leads auto --shapes "$SH" \
  --scans "recurrence f64 segments,recurrence c64 segments,recurrence c64 segments reverse,recurrence c128" > $O/back.txt 2>&1
echo "back rc=$?" >> $O/back.txt; grep -E "^\|.*(segments|c128)|rc=|Error|error" $O/back.txt | head -40
SH='{"24": [[64,16,1024,2,5,3,2],[64,16,1024,2,4,2,2],[128,16,1024,1,7,5,2],[64,32,1024,1,5,3,2]]}'
PYTHONPATH=$PWD timeout 180 python3 benchmarks/sweep_state_tiles.py $O/ahead.json --reps 7 --device lookahead --shapes "$SH" \
  --scans "recurrence f64 segments,recurrence c64 segments" > $O/ahead.txt 2>&1
echo "ahead rc=$?" >> $O/ahead.txt; grep -E "^\|.*(segments|c128)|rc=|Error|error" $O/ahead.txt | head -40
