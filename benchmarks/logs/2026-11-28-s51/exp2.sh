#!/bin/bash
# One H200: one coefficient along the scanned axis (ModuleKey.coef_one): its tests, the 48-byte
# column tiles' test, the plain columns' tests (columns._geometry changed), mpi_check's
# one_coefficient_checks on 2 ranks sharing the GPU; then bench_one_coefficient.py on this tree
# (N) and on the tree before it (O: s51/O, 98fbc1d's distscan and kernels), alternating.
# Before: rm -rf s51/O && mkdir -p s51/O/benchmarks && git archive 98fbc1d distscan kernels | tar -x -C s51/O
#   && cp benchmarks/bench_one_coefficient.py benchmarks/harness.py s51/O/benchmarks/; carry ["s51"].
cd "$(dirname "$0")/../../.."
O=${OUT:-/tmp}
export NCCL_NVLS_ENABLE=0 PYTHONPATH=$PWD DISTSCAN_PROGRESS=0 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 300 python3 -m pytest -q -p no:cacheprovider -rfEs --timeout 280 --durations=5 tests/gpu/test_one_coefficient.py \
  tests/gpu/test_columns.py "tests/gpu/test_state_columns.py::test_segmented_complex128_recurrence_columns_past_the_carry_tiles" > $O/tests.txt 2>&1
echo "tests rc=$?" >> $O/tests.txt; tail -15 $O/tests.txt
timeout 150 mpirun --allow-run-as-root -n 2 python3 tests/gpu/mpi_check.py --expect-shared --only one_coefficient_checks > $O/mpi.txt 2>&1
echo "mpi rc=$?" >> $O/mpi.txt; tail -5 $O/mpi.txt
for round in 1 2; do for t in N O; do
  d=.; [ $t = O ] && d=s51/O
  echo "== $t round $round"
  (cd $d && PYTHONPATH=$PWD timeout 90 python3 benchmarks/bench_one_coefficient.py $O/bench-$t-$round.json --reps 7 $([ $round = 2 ] && echo --no-jax) | tail -8)
done; done > $O/bench.txt 2>&1
(PYTHONPATH=$PWD timeout 60 python3 benchmarks/bench_one_coefficient.py $O/bench-N-f64.json --reps 7 --dtype float64 --widths 1,16 | tail -8) >> $O/bench.txt 2>&1
cat $O/bench.txt
