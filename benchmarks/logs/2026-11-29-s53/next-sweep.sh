#!/bin/bash
# NOT RUN (for a later GPU call of the next session, about 250 s; on main or s53-next alike): the
# tile shapes of the state scans still on choose_tuning's fallback (256, 8, 1): the segmented
# complex128 sums (32-byte states) and maps (48); and, on an H100, the fifty-third session's
# shapes of the 24- and 32-byte maps (measured on the H200 only: exp2, exp3).
cd "$(dirname "$0")/../../.."
O=${OUT:-/tmp}
export NCCL_NVLS_ENABLE=0 DISTSCAN_PROGRESS=0 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
PYTHONPATH=$PWD timeout 240 python3 benchmarks/sweep_state_tiles.py $O/c128.json --reps 7 --leads auto \
  --scans "segmented sum c128,recurrence c128 segments" > $O/c128.txt 2>&1
echo "c128 rc=$?" >> $O/c128.txt; grep -E "^\|.*c128|rc=|Error" $O/c128.txt | head -24
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H100; then
  SH='{"24": [[128,32,1024,1],[128,32,1024,2],[128,16,1024,2],[128,16,1024,3],[64,32,1024,2]]}'
  PYTHONPATH=$PWD timeout 300 python3 benchmarks/sweep_state_tiles.py $O/h100.json --reps 7 --leads auto --shapes "$SH" \
    --scans "recurrence f64 segments,recurrence c64 segments,recurrence c64 segments reverse,recurrence c128" > $O/h100.txt 2>&1
  echo "h100 rc=$?" >> $O/h100.txt; grep -E "^\|.*(segments|c128)|rc=|Error" $O/h100.txt | head -40
fi
