#!/bin/bash
# 2 H200s (nvidia-h200-x2): the whole GPU suite at this tree, then issue 30's rows on 2 GPUs
# (bench_multi_gpu_operators.py, 2^28 a GPU) in what is left of the call.
cd "$(dirname "$0")/../../.."
O=${OUT:-/tmp}
bash tests/gpu/run_suite.sh /tmp/s > $O/suite.txt 2>&1; echo "suite rc=$?" >> $O/suite.txt
tar czf $O/s.tgz -C /tmp s
date -u >> $O/suite.txt
export NCCL_NVLS_ENABLE=0 PYTHONPATH=$PWD DISTSCAN_PROGRESS=0
timeout 100 mpirun --allow-run-as-root -n 2 python3 benchmarks/bench_multi_gpu_operators.py $O/mgo.json --log2n 28 --reps 9 > $O/mgo.txt 2>&1; echo "mgo rc=$?" >> $O/mgo.txt
date -u >> $O/mgo.txt
