#!/bin/bash
# For the next session (one H200, ~2 min): branch s48-transpose (the skinny transpose kernels in
# general.py's column-at-a-time scan) in s48/B against main's tree in s48/A: their GPU tests on B,
# then bench_columns.py at 2^27 float32 and float64 for 2-64 columns, alternating A, B, A, B.
#   git archive main distscan kernels benchmarks/bench_columns.py benchmarks/harness.py | tar -x -C s48/A
#   git archive s48-transpose distscan kernels tests benchmarks/bench_columns.py benchmarks/harness.py | tar -x -C s48/B
# run with carry ["s48"].
cd "$(dirname "$0")/../../.."
export DISTSCAN_PROGRESS=0 NCCL_NVLS_ENABLE=0
O=${OUT:-/tmp}
nvidia-smi --query-gpu=name --format=csv,noheader; date -u
(cd s48/B && PYTHONPATH=$PWD timeout 200 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_transpose.py \
   tests/gpu/test_numpy_semantics.py -k "transpose or columns or few_columns" 2>&1 | tail -4)
for r in 1 2; do
  for t in A B; do
    echo "--- $t round $r"
    (cd s48/$t && PYTHONPATH=$PWD timeout 60 python3 benchmarks/bench_columns.py $O/columns-$t$r.json --log2n 27 \
       --reps 5 --widths 2,3,4,8,16,32,33,64 --dtypes float32,float64 2>&1 | tail -18)
  done
done
