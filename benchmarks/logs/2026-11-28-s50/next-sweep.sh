#!/bin/bash
# NOT RUN (prepared for the next session, one H200, about 3 min): the run lengths of the column-tile
# kernels by accumulator size (benchmarks/sweep_column_runs.py), to set columns.RUNS for the state
# sizes that take a formula today (12 bytes: segmented float32 recurrences) and to check 16 bytes'
# 5 (float64 and complex64 maps, float64 segmented sums: 1.3-1.4x slower from 256 columns, exp6).
cd "$(dirname "$0")/../../.."
O=${OUT:-/tmp}
export NCCL_NVLS_ENABLE=0 PYTHONPATH=$PWD DISTSCAN_PROGRESS=0 PYTHONUNBUFFERED=1
timeout 400 python3 benchmarks/sweep_column_runs.py $O/runs.json --log2n 27 --reps 5 > $O/runs.txt 2>&1
echo "sweep rc=$?" >> $O/runs.txt; cat $O/runs.txt
