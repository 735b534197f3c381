#!/bin/bash
# One H200: the merged tree (s51-nvrtc, s51-tame-one, the cache's side-stream fill, NumPy scalar and
# 0-d coefficients in call kinds): their GPU tests, the host time by coefficient form, and the
# one-coefficient recurrence by device algorithm now that it composes tamely.
cd "$(dirname "$0")/../../.."
O=${OUT:-/tmp}
export NCCL_NVLS_ENABLE=0 PYTHONPATH=$PWD DISTSCAN_PROGRESS=0 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader; date -u
timeout 230 python3 -m pytest -q -p no:cacheprovider -rfEs --timeout 220 tests/gpu/test_one_coefficient.py \
  tests/gpu/test_kinds.py tests/backends/test_cuda_compile.py > $O/tests.txt 2>&1
echo "tests rc=$?" >> $O/tests.txt; grep -E "passed|failed|Error|assert" $O/tests.txt | tail -15
timeout 60 python3 benchmarks/logs/2026-11-29-s52/host_forms.py > $O/host_forms.txt 2>&1; cat $O/host_forms.txt
B=benchmarks/bench_one_coefficient.py
for alg in lookback lookahead; do
  echo "== $alg"
  timeout 45 python3 $B $O/f32-$alg.json --reps 7 --no-jax --widths 1,64 --algorithm $alg 2>&1 | tail -5
  timeout 35 python3 $B $O/f64-$alg.json --reps 7 --no-jax --widths 1 --dtype float64 --algorithm $alg 2>&1 | tail -3
done > $O/bench.txt
echo "== auto with JAX" >> $O/bench.txt
timeout 60 python3 $B $O/f32-auto.json --reps 7 --widths 1,64 2>&1 | tail -6 >> $O/bench.txt
cat $O/bench.txt; date -u
