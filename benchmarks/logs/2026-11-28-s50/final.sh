#!/bin/bash
# 2 H200s (nvidia-h200-x2), the session's last call: the whole GPU suite at the final tree (the
# column-tile kernels of reverse and state scans), then bench_state_columns.py on GPU 0.
cd "$(dirname "$0")/../../.."
O=${OUT:-/tmp}
bash tests/gpu/run_suite.sh /tmp/s > $O/suite.txt 2>&1; echo "suite rc=$?" >> $O/suite.txt
tar czf $O/s.tgz -C /tmp s
date -u >> $O/suite.txt
tail -34 $O/suite.txt
export NCCL_NVLS_ENABLE=0 PYTHONPATH=$PWD DISTSCAN_PROGRESS=0
timeout 60 python3 benchmarks/bench_state_columns.py $O/state-columns.json --log2n 27 --reps 5 > $O/state-columns.txt 2>&1
echo "state columns rc=$?" >> $O/state-columns.txt; tail -28 $O/state-columns.txt
