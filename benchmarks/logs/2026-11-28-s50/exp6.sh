#!/bin/bash
# One H200, after record BI (the final tree's kernels): bench_state_columns.py in float64 and
# complex64 (a state-space model's dtype), the widths of the float32 runs.
cd "$(dirname "$0")/../../.."
O=${OUT:-/tmp}
export NCCL_NVLS_ENABLE=0 PYTHONPATH=$PWD DISTSCAN_PROGRESS=0 PYTHONUNBUFFERED=1
for dt in float64 complex64; do
  timeout 100 python3 benchmarks/bench_state_columns.py $O/$dt.json --dtype $dt --log2n 26 --reps 5 > $O/$dt.txt 2>&1
  echo "$dt rc=$?" >> $O/$dt.txt; tail -27 $O/$dt.txt
done
