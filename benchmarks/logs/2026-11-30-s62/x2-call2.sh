#!/bin/bash
# nvidia-h200-x2, the sixty-second session, call 2: the second half of the GPU suite at the tree
# (tests/gpu/run_suite.sh), then the tests of arrays on another GPU, which need two visible.
cd "$(dirname "$0")/../../.."
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0
mkdir -p /tmp/s2
RUNS="api operators-rest mpi big" timeout 470 bash tests/gpu/run_suite.sh /tmp/s2 > $OUT/suite2.txt 2>&1
for f in /tmp/s2/suite-*.txt; do echo "=== $f"; tail -c 3000 $f; done > $OUT/live2.txt
cat $OUT/suite2.txt
PYTHONPATH=$PWD timeout 90 python3 -m pytest -q -p no:cacheprovider -rfEs tests/gpu/test_kinds.py tests/gpu/test_hotpath.py \
  -k "arrays_on_another_device or arrays_on_another_gpu or another_device_s_input or go_to_the_device_of_a_gpu_input" \
  > $OUT/other-gpu.txt 2>&1
tail -3 $OUT/other-gpu.txt
date -u
