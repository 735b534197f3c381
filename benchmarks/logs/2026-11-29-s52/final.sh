#!/bin/bash
# One H200 (nvidia-h200; the 2-GPU kind was not lent this session), the session's last call: the
# whole GPU suite at the final tree, then the one-coefficient recurrence ("auto", tame on every route).
cd "$(dirname "$0")/../../.."
O=${OUT:-/tmp}
bash tests/gpu/run_suite.sh /tmp/s > $O/suite.txt 2>&1; echo "suite rc=$?" >> $O/suite.txt
tar czf $O/s.tgz -C /tmp s
date -u >> $O/suite.txt
tail -34 $O/suite.txt
export NCCL_NVLS_ENABLE=0 PYTHONPATH=$PWD DISTSCAN_PROGRESS=0
timeout 40 python3 benchmarks/bench_one_coefficient.py $O/one-coefficient.json --reps 7 --widths 1,64 > $O/one-coefficient.txt 2>&1
echo "one coefficient rc=$?" >> $O/one-coefficient.txt; tail -9 $O/one-coefficient.txt
