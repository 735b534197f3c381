#!/bin/bash
# nvidia-h200-x2, the sixty-fourth session, call 3 (after the suite; no change to distscan/):
# the seeded scan's launch kind on 2 GPUs again (call 1's run let its untimed warm call's kernels
# run into the timed one: fixed), and the GPU's pickup of a scan once the host knows its seed
# (benchmarks/probe_gate_pickup.py, GPU 0 alone and then GPU 1 alone).
cd "$(dirname "$0")/../../.."
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0 PYTHONPATH=$PWD
T0=$(date +%s)
date -u; nvidia-smi -L
timeout 150 mpirun --allow-run-as-root --bind-to none -n 2 python3 benchmarks/probe_seeded_launch_kind.py --log2n 28 --reps 41 \
  > $OUT/launch-kind.txt 2>&1
echo "probe rc $? after $(( $(date +%s) - T0 )) s"; grep -v Warning $OUT/launch-kind.txt | tail -5
for g in 0 1; do CUDA_VISIBLE_DEVICES=$g timeout 60 python3 benchmarks/probe_gate_pickup.py --rounds 60; done > $OUT/pickup.txt 2>&1
cat $OUT/pickup.txt
date -u; echo "call done after $(( $(date +%s) - T0 )) s"
