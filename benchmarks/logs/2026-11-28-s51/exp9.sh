#!/bin/bash
# NOT RUN (too little device time was left to start a machine): branch s51-nvrtc (s51/V) on the
# device's NVRTC: a few GPU tests, the nvrtc test.  Before: git archive s51-nvrtc distscan kernels
# tests | tar -x -C s51/V; carry ["s51"].
cd "$(dirname "$0")/../../.."
export NCCL_NVLS_ENABLE=0 DISTSCAN_PROGRESS=0 PYTHONUNBUFFERED=1
cd s51/V && PYTHONPATH=$PWD timeout 120 python3 -m pytest -q -p no:cacheprovider -x --timeout 110 \
  "tests/gpu/test_one_coefficient.py::test_one_coefficient_is_the_array_s_bits" tests/backends/test_cuda_compile.py -k "bits or nvrtc" 2>&1 | tail -3
python3 -c "import cupy, cupy.cuda.nvrtc as n; print('cupy', cupy.__version__, 'nvrtc', n.getVersion())"
