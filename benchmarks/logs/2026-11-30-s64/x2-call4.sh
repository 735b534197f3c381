#!/bin/bash
# nvidia-h200-x2, the sixty-fourth session, call 4: the pickup probe (call 3's used a RawKernel's
# missing .ptr), then issue 30's 2-GPU table at the tree (bench_multi_gpu_operators.py, 2^28 a GPU).
cd "$(dirname "$0")/../../.."
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0 PYTHONPATH=$PWD
T0=$(date +%s)
for g in 0 1; do CUDA_VISIBLE_DEVICES=$g timeout 60 python3 benchmarks/probe_gate_pickup.py --rounds 60; done > $OUT/pickup.txt 2>&1
cat $OUT/pickup.txt
timeout 200 mpirun --allow-run-as-root -n 2 python3 benchmarks/bench_multi_gpu_operators.py $OUT/mgo.json --log2n 28 --reps 9 > $OUT/mgo.txt 2>&1
echo "mgo rc $?"; grep -v Warning $OUT/mgo.txt | tail -16
date -u; echo "call done after $(( $(date +%s) - T0 )) s"
