#!/bin/bash
# One H200: the columns kernels of the extended module (reverse scans, state operators over (n, w)
# rows), third run (loads batched: eight a thread before their stores): tests, then bench_state_columns.py (at 654c7c0 in exp1, s50/A:
# a scan_ext_kernel launch a column between transposed copies).
cd "$(dirname "$0")/../../.."
O=${OUT:-/tmp}
export NCCL_NVLS_ENABLE=0 PYTHONPATH=$PWD DISTSCAN_PROGRESS=0 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 300 python3 -m pytest --maxfail=6 -q -p no:cacheprovider -rfEs --timeout 280 --durations=6 tests/gpu/test_state_columns.py > $O/tests.txt 2>&1
echo "tests rc=$?" >> $O/tests.txt; tail -40 $O/tests.txt
timeout 120 python3 benchmarks/bench_state_columns.py $O/new.json --log2n 27 --reps 5 > $O/new.txt 2>&1
echo "new rc=$?" >> $O/new.txt; tail -30 $O/new.txt
