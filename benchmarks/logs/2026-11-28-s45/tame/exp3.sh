#!/bin/bash
# The tame runs as kept (float32 maps only): the tree before (A: s45/A, carried) against this one
# (T), "auto" and the look-ahead, 2^27, GPU 0, two rounds; then issue 30's rows on 2 GPUs.
cd "$(dirname "$0")/../../../.."
SCANS="cumsum f32,recurrence f32,recurrence f64,recurrence c64,recurrence seg f32,recurrence f32 inf,recurrence rev f32,recurrence seg rev f32"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader; date -u
export CUDA_VISIBLE_DEVICES=0
for t in A T; do for alg in auto lookahead; do
  if [ $t = A ]; then P=$PWD/s45/A; else P=$PWD; fi
  PYTHONPATH=$P python3 benchmarks/ab_scans.py warm --log2n 20 --reps 1 --scans "$SCANS" --algorithm $alg > /tmp/warm-$t-$alg.txt 2>&1 &
done; done; wait; tail -n 2 /tmp/warm-*.txt; date -u
for r in 1 2; do for t in A T; do for alg in auto lookahead; do
  if [ $t = A ]; then P=$PWD/s45/A; else P=$PWD; fi
  PYTHONPATH=$P python3 benchmarks/ab_scans.py $t-$alg --log2n 27 --reps 9 --scans "$SCANS" --algorithm $alg
done; done; done
date -u
unset CUDA_VISIBLE_DEVICES
export NCCL_NVLS_ENABLE=0 PYTHONPATH=$PWD
timeout 240 mpirun --allow-run-as-root -n 2 python3 benchmarks/bench_multi_gpu_operators.py ${OUT:-/tmp}/mgo.json --log2n 28 --reps 9
date -u
