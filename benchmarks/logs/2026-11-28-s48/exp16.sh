#!/bin/bash
# exp16 (one H200): scans along axis 0 of a few columns (bench_columns.py) at 2^27 items, float32
# and float64, and the product of 4 float64 columns' pieces (bench_products.py's row, for the record).
cd "$(dirname "$0")/../../.."
export DISTSCAN_PROGRESS=0 NCCL_NVLS_ENABLE=0 PYTHONPATH=$PWD
O=${OUT:-/tmp}
nvidia-smi --query-gpu=name --format=csv,noheader; date -u
timeout 200 python3 benchmarks/bench_columns.py $O/columns.json --log2n 27 --reps 7 2>&1 | tail -25
echo "total ${SECONDS}s"
