#!/bin/bash
# exp15 (one H200): the products' repair searched by one kernel a question (backends/cuda/zero_search.py,
# this tree) against the array operations (s48/A: 10e87ec), bench_products.py at 2^27 alternating
# twice, then the GPU tests of products and the fused search on this tree.
cd "$(dirname "$0")/../../.."
export DISTSCAN_PROGRESS=0 NCCL_NVLS_ENABLE=0
A=$PWD/s48/A
O=${OUT:-/tmp}
nvidia-smi --query-gpu=name --format=csv,noheader; date -u
for r in 1 2; do
  echo "--- A (array operations), round $r"
  (cd $A && PYTHONPATH=$A timeout 80 python3 benchmarks/bench_products.py $O/prod-A$r.json --log2n 27 --reps 5 2>&1 | tail -7)
  echo "--- new (fused search), round $r"
  PYTHONPATH=$PWD timeout 80 python3 benchmarks/bench_products.py $O/prod-new$r.json --log2n 27 --reps 5 2>&1 | tail -7
done
echo "--- tests (new) at ${SECONDS}s"
PYTHONPATH=$PWD timeout $((420 - SECONDS)) python3 -m pytest -q -p no:cacheprovider tests/gpu/test_numpy_semantics.py \
   tests/gpu/test_operators.py -k "prod or zero or absorb" -x 2>&1 | tail -6
echo "total ${SECONDS}s"
