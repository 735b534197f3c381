#!/bin/bash
# Session 53, second call (one H200): tile shapes of the linear recurrences whose kernel state is
# over 16 bytes (segmented float64 and complex64 maps: 24 bytes; complex128 maps: 32), which take
# choose_tuning's fallback (256, 8, 1) on the look-back; exp1 read the segmented float64 and
# complex64 one-coefficient recurrences at 0.18 and 0.15 of copy.
cd "$(dirname "$0")/../../.."
O=${OUT:-/tmp}
export NCCL_NVLS_ENABLE=0 DISTSCAN_PROGRESS=0 PYTHONUNBUFFERED=1
PYTHONPATH=$PWD timeout 330 python3 benchmarks/sweep_state_tiles.py $O/back.json --reps 7 --leads auto \
  --scans "recurrence f64 segments,recurrence c64 segments,recurrence c128" > $O/back.txt 2>&1
echo "back rc=$?" >> $O/back.txt; grep -E "^\|.*(segments|c128)|rc=|Error|error" $O/back.txt | head -40
PYTHONPATH=$PWD timeout 220 python3 benchmarks/sweep_state_tiles.py $O/ahead.json --reps 7 --device lookahead \
  --scans "recurrence f64 segments,recurrence c64 segments" > $O/ahead.txt 2>&1
echo "ahead rc=$?" >> $O/ahead.txt; grep -E "^\|.*(segments|c128)|rc=|Error|error" $O/ahead.txt | head -40
