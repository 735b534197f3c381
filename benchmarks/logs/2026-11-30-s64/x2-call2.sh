#!/bin/bash
# nvidia-h200-x2, the sixty-fourth session, call 2: the second half of the GPU suite at the tree
# (tests/gpu/run_suite.sh), the tests of arrays on another GPU (they need two visible), then the GPU
# fuzz harness with a GPU a rank (2 ranks) and 3 ranks on 2 GPUs (DISTSCAN_ALLOW_SHARED_GPU=1),
# while time is left (benchmarks/logs/2026-11-29-s60/hunt-gpu/run.sh, 58 s of cases each).
cd "$(dirname "$0")/../../.."
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0
T0=$(date +%s)
mkdir -p /tmp/s2
RUNS="api operators-rest mpi big" timeout 470 bash tests/gpu/run_suite.sh /tmp/s2 > $OUT/suite2.txt 2>&1
for f in /tmp/s2/suite-*.txt; do echo "=== $f"; tail -c 3000 $f; done > $OUT/live2.txt
cat $OUT/suite2.txt
PYTHONPATH=$PWD timeout 90 python3 -m pytest -q -p no:cacheprovider -rfEs tests/gpu/test_kinds.py tests/gpu/test_hotpath.py \
  -k "arrays_on_another_device or arrays_on_another_gpu or another_device_s_input or go_to_the_device_of_a_gpu_input" \
  > $OUT/other-gpu.txt 2>&1
tail -3 $OUT/other-gpu.txt
date -u; echo "GPU suite done after $(( $(date +%s) - T0 )) s"
left=$(( 585 - ($(date +%s) - T0) ))
if [ $left -gt 100 ]; then
  KS="2" WARM=12 timeout $(( left - 5 )) bash benchmarks/logs/2026-11-29-s60/hunt-gpu/run.sh > $OUT/fuzz2.txt 2>&1; cat $OUT/fuzz2.txt | tail -20
fi
left=$(( 585 - ($(date +%s) - T0) ))
if [ $left -gt 100 ]; then
  DISTSCAN_ALLOW_SHARED_GPU=1 KS="3" WARM=12 timeout $(( left - 5 )) bash benchmarks/logs/2026-11-29-s60/hunt-gpu/run.sh > $OUT/fuzz3.txt 2>&1; cat $OUT/fuzz3.txt | tail -20
fi
date -u; echo "call done after $(( $(date +%s) - T0 )) s"
