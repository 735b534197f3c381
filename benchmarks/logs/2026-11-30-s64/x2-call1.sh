#!/bin/bash
# nvidia-h200-x2, the sixty-fourth session, call 1: the seeded scan's launch kind after the exchange
# (benchmarks/probe_seeded_launch_kind.py: the dependent launch against a plain one, 2 ranks a GPU
# each, 2^28 float32 a GPU), then the first half of the GPU suite at the tree (tests/gpu/run_suite.sh).
cd "$(dirname "$0")/../../.."
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0 PYTHONPATH=$PWD
T0=$(date +%s)
date -u; nproc; nvidia-smi -L
timeout 100 mpirun --allow-run-as-root --bind-to none -n 2 python3 benchmarks/probe_seeded_launch_kind.py --log2n 28 --reps 15 \
  > $OUT/launch-kind.txt 2>&1
echo "probe rc $? after $(( $(date +%s) - T0 )) s"; grep -v Warning $OUT/launch-kind.txt | tail -6
mkdir -p /tmp/s
RUNS="kernels operators-starts operators-cpu command" timeout $(( 588 - ($(date +%s) - T0) )) bash tests/gpu/run_suite.sh /tmp/s > $OUT/suite1.txt 2>&1
for f in /tmp/s/suite-*.txt; do echo "=== $f"; tail -c 3000 $f; done > $OUT/live1.txt
cat $OUT/suite1.txt
date -u; echo "call done after $(( $(date +%s) - T0 )) s"
