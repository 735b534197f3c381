#!/bin/bash
# One H200: mpi_check's one_coefficient_checks on 2 ranks sharing the GPU (exp2's lacked
# DISTSCAN_ALLOW_SHARED_GPU), then which device algorithm one coefficient's recurrences want:
# bench_one_coefficient.py at --algorithm lookback and lookahead, float32, float64, complex64, 1-D.
cd "$(dirname "$0")/../../.."
O=${OUT:-/tmp}
export NCCL_NVLS_ENABLE=0 PYTHONPATH=$PWD DISTSCAN_PROGRESS=0 PYTHONUNBUFFERED=1
DISTSCAN_ALLOW_SHARED_GPU=1 timeout 200 mpirun --allow-run-as-root -n 2 python3 tests/gpu/mpi_check.py --expect-shared \
  --only one_coefficient_checks > $O/mpi.txt 2>&1
echo "mpi rc=$?" >> $O/mpi.txt; tail -4 $O/mpi.txt
for dt in float32 float64 complex64; do for alg in lookback lookahead auto; do
  echo "== $dt $alg"
  timeout 80 python3 benchmarks/bench_one_coefficient.py $O/alg-$dt-$alg.json --reps 7 --dtype $dt --widths 1 --no-jax --algorithm $alg | tail -3
done; done > $O/alg.txt 2>&1
cat $O/alg.txt
