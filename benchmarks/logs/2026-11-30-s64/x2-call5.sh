#!/bin/bash
# nvidia-h200-x2, the sixty-fourth session, call 5 (no change to distscan/): how host-bound a
# multi-GPU call is by size, for a GPU lean call's plan (NOTES-gpu.md, sixty-fourth session):
# the 2-GPU cumsum at 2^20, 2^24 and 2^28 a GPU (probe_seeded_launch_kind.py: whole calls, warm),
# and the steps of the cumsum at 2^20 and 2^28 (probe_multi_gpu_steps.py).
cd "$(dirname "$0")/../../.."
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0 PYTHONPATH=$PWD
T0=$(date +%s)
date -u
for k in 20 24 28; do
  timeout 100 mpirun --allow-run-as-root --bind-to none -n 2 python3 benchmarks/probe_seeded_launch_kind.py --log2n $k --reps 41 \
    > $OUT/launch-kind-$k.txt 2>&1
  grep -v Warning $OUT/launch-kind-$k.txt | tail -4
done
for k in 20 28; do
  timeout 100 mpirun --allow-run-as-root -n 2 python3 benchmarks/probe_multi_gpu_steps.py $OUT/steps-$k.json --log2n $k --reps 9 \
    --only "cumsum f32" > $OUT/steps-$k.txt 2>&1
  grep -v Warning $OUT/steps-$k.txt | tail -6
done
date -u; echo "call done after $(( $(date +%s) - T0 )) s"
