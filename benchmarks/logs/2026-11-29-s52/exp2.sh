#!/bin/bash
# One H200: this tree (N: float32's a*y + b one explicit FMA in every path; coefficient_row tame on
# Part's (n, 1) rows) against s52/O (the commit before the FMA): the tests that failed in exp1,
# the NVRTC libraries here, an A/B of the float32 recurrences, and the one-coefficient recurrence
# by device algorithm (now tame on the Part route too).
# Before: rm -rf s52 && mkdir -p s52/O && git archive HEAD distscan kernels benchmarks | tar -x -C s52/O; carry ["s52"].
cd "$(dirname "$0")/../../.."
O=${OUT:-/tmp}
export NCCL_NVLS_ENABLE=0 DISTSCAN_PROGRESS=0 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader; date -u
PYTHONPATH=$PWD timeout 200 python3 -m pytest -q -p no:cacheprovider -rfEs --timeout 190 tests/gpu/test_one_coefficient.py \
  tests/gpu/test_kinds.py > $O/tests.txt 2>&1
echo "tests rc=$?" >> $O/tests.txt; grep -E "passed|failed|^FAILED|^E  " $O/tests.txt | head -30
PYTHONPATH=$PWD timeout 60 python3 benchmarks/logs/2026-11-29-s52/nvrtc_probe.py > $O/nvrtc.txt 2>&1; head -60 $O/nvrtc.txt
S="recurrence f32,recurrence seg f32,recurrence rev f32,recurrence f32 late,recurrence f32 inf"
for round in 1 2; do for t in N O; do
  d=$PWD; [ $t = O ] && d=$PWD/s52/O
  PYTHONPATH=$d timeout 60 python3 $d/benchmarks/ab_scans.py $t --scans "$S" --reps 9 2>&1 | tail -5
done; done > $O/ab.txt 2>&1; cat $O/ab.txt
B=benchmarks/bench_one_coefficient.py
for alg in lookback lookahead; do
  echo "== $alg"
  PYTHONPATH=$PWD timeout 40 python3 $B $O/f32-$alg.json --reps 7 --no-jax --widths 1 --algorithm $alg 2>&1 | tail -2
  PYTHONPATH=$PWD timeout 40 python3 $B $O/f64-$alg.json --reps 7 --no-jax --widths 1 --dtype float64 --algorithm $alg 2>&1 | tail -2
done > $O/bench.txt 2>&1; cat $O/bench.txt; date -u
