#!/bin/bash
# Session 61, one nvidia-h200-x2 call (~260 s): the GPU fuzz harness with a GPU a rank (2 ranks),
# then 3 ranks on 2 GPUs (ranks 0 and 2 share GPU 0, DISTSCAN_ALLOW_SHARED_GPU=1), and the
# other-GPU tests of test_kinds.py/test_hotpath.py (fed43bf rewrote two of them after the last record).
cd "$(dirname "$0")/../../.."
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0 PYTHONPATH=$PWD
nvidia-smi -L; date -u
PYTHONPATH=$PWD timeout 120 python3 -m pytest -q -p no:cacheprovider -rfEs tests/gpu/test_kinds.py tests/gpu/test_hotpath.py \
  -k "arrays_on_another_device or arrays_on_another_gpu or another_device_s_input or go_to_the_device_of_a_gpu_input" 2>&1 | tail -4
date -u
KS="2" WARM=12 bash benchmarks/logs/2026-11-29-s60/hunt-gpu/run.sh
DISTSCAN_ALLOW_SHARED_GPU=1 KS="3" WARM=12 bash benchmarks/logs/2026-11-29-s60/hunt-gpu/run.sh
date -u
