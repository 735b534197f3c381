#!/bin/bash
# exp14 (one H200): branch s47-absorb (s47/A: absorb_zeros column by column from the first zero)
# against main ($PWD): bench_products.py at 2^27 (float products that reach 0, one and 4 columns,
# the segmented ones without a zero), then the GPU tests of products with zeros on A.
cd "$(dirname "$0")/../../.."
export DISTSCAN_PROGRESS=0 NCCL_NVLS_ENABLE=0
A=$PWD/s47/A
O=${OUT:-/tmp}
nvidia-smi --query-gpu=name --format=csv,noheader; date -u
PYTHONPATH=$PWD timeout 70 python3 benchmarks/bench_products.py $O/prod-main.json --log2n 27 --reps 5 2>&1 | tail -8
(cd $A && PYTHONPATH=$A timeout 70 python3 benchmarks/bench_products.py $O/prod-A.json --log2n 27 --reps 5 2>&1 | tail -8)
echo "--- tests (A) at ${SECONDS}s"
(cd $A && PYTHONPATH=$A timeout $((190 - SECONDS)) python3 -m pytest -q -p no:cacheprovider tests/gpu/test_numpy_semantics.py \
   -k "prod or zero" 2>&1 | tail -4)
echo "total ${SECONDS}s"
