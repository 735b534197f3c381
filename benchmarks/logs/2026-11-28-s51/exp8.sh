#!/bin/bash
# One H200: branch s51-tame-one (this tree, T: one coefficient with |a| <= 1 composes without the
# zero rule, DISTSCAN_COEF_TAME) against main (s51/N): the one-coefficient tests on T, then
# bench_one_coefficient.py alternating T and N (float32 1-D and 64 columns; float64, complex64 1-D).
# Before: rm -rf s51/N && mkdir -p s51/N && git archive main distscan kernels benchmarks/*.py | tar -x -C s51/N; carry ["s51"].
cd "$(dirname "$0")/../../.."
O=${OUT:-/tmp}
export NCCL_NVLS_ENABLE=0 PYTHONPATH=$PWD DISTSCAN_PROGRESS=0 PYTHONUNBUFFERED=1
timeout 200 python3 -m pytest -q -p no:cacheprovider -rfEs --timeout 190 tests/gpu/test_one_coefficient.py > $O/tests.txt 2>&1
echo "tests rc=$?" >> $O/tests.txt; grep -E "passed|failed|Error|assert" $O/tests.txt | tail -12
for round in 1 2; do for t in T N; do
  d=.; [ $t = N ] && d=s51/N
  echo "== $t round $round"
  (cd $d && PYTHONPATH=$PWD timeout 40 python3 benchmarks/bench_one_coefficient.py $O/f32-$t-$round.json --reps 7 --no-jax --widths 1,64 | tail -6)
  for dt in float64 complex64; do
    (cd $d && PYTHONPATH=$PWD timeout 30 python3 benchmarks/bench_one_coefficient.py $O/$dt-$t-$round.json --reps 7 --no-jax --widths 1 --dtype $dt | tail -3)
  done
done; done > $O/bench.txt 2>&1
cat $O/bench.txt
