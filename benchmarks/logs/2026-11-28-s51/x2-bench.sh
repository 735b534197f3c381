#!/bin/bash
# 2 H200s (nvidia-h200-x2): issue 30's rows on 2 GPUs, with the new EMA row (one coefficient),
# 2^28 items a GPU, with phases; then the EMA at 2^27 on GPU 0 alone.
cd "$(dirname "$0")/../../.."
O=${OUT:-/tmp}
export NCCL_NVLS_ENABLE=0 PYTHONPATH=$PWD DISTSCAN_PROGRESS=0 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 300 mpirun --allow-run-as-root -n 2 python3 benchmarks/bench_multi_gpu_operators.py $O/mgo.json --log2n 28 --reps 9 --phases > $O/mgo.txt 2>&1
echo "mgo rc=$?" >> $O/mgo.txt; tail -30 $O/mgo.txt
