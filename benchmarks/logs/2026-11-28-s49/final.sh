#!/bin/bash
# 2 H200s (nvidia-h200-x2), the session's last call: the whole GPU suite at the final tree (the
# tiled columns), then bench_columns.py and bench_products.py (few-column products) on GPU 0.
cd "$(dirname "$0")/../../.."
O=${OUT:-/tmp}
bash tests/gpu/run_suite.sh /tmp/s > $O/suite.txt 2>&1; echo "suite rc=$?" >> $O/suite.txt
tar czf $O/s.tgz -C /tmp s
date -u >> $O/suite.txt
tail -32 $O/suite.txt
export NCCL_NVLS_ENABLE=0 PYTHONPATH=$PWD DISTSCAN_PROGRESS=0
timeout 50 python3 benchmarks/bench_columns.py $O/columns.json --log2n 27 --reps 5 > $O/columns.txt 2>&1
echo "columns rc=$?" >> $O/columns.txt; cat $O/columns.txt
timeout 30 python3 benchmarks/bench_products.py $O/products.json --log2n 27 --reps 5 > $O/products.txt 2>&1
echo "products rc=$?" >> $O/products.txt; cat $O/products.txt
