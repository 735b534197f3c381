#!/bin/bash
# 2 H200s (nvidia-h200-x2), the session's last call: the whole GPU suite at the final tree (one
# coefficient along the scanned axis, column tiles of at least 2 rows, for_tile_items).
cd "$(dirname "$0")/../../.."
O=${OUT:-/tmp}
bash tests/gpu/run_suite.sh /tmp/s > $O/suite.txt 2>&1; echo "suite rc=$?" >> $O/suite.txt
tar czf $O/s.tgz -C /tmp s
date -u >> $O/suite.txt
tail -34 $O/suite.txt
export NCCL_NVLS_ENABLE=0 PYTHONPATH=$PWD DISTSCAN_PROGRESS=0
timeout 50 python3 benchmarks/bench_one_coefficient.py $O/one-coefficient.json --reps 7 > $O/one-coefficient.txt 2>&1
echo "one coefficient rc=$?" >> $O/one-coefficient.txt; tail -12 $O/one-coefficient.txt
