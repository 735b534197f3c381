#!/bin/bash
# NOT RUN (for the next session's first GPU call; on an H100 first if one is lent, else the H200,
# about 200 s): branch s53-next (main + s53-auto-tame + s53-casts) checked out as this tree, main's
# distscan/kernels/benchmarks in s53/M.  The branches' tests (auto's device for the float32 EMA and
# its bits; the casts and subnormal coefficients; the plans on the CPU), the cast probe (on the
# branch: every row equal), probe_one_coefficient_device.py (look-back against look-ahead, as exp1
# on the H200), then the EMA through "auto" on the branch (N) against main (M), two rounds.
# Before: git checkout s53-next; rm -rf s53 && mkdir -p s53/M && git archive main distscan
# kernels benchmarks | tar -x -C s53/M; carry ["s53"].  Then the suite, merge, record.
cd "$(dirname "$0")/../../.."
O=${OUT:-/tmp}
export NCCL_NVLS_ENABLE=0 DISTSCAN_PROGRESS=0 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
PYTHONPATH=$PWD timeout 200 python3 -m pytest -q -p no:cacheprovider -rfEs --timeout 190 tests/backends/test_cuda_auto_device.py \
  tests/gpu/test_one_coefficient.py tests/gpu/test_numpy_semantics.py -k "auto or cast or subnormal or one_coefficient or coefficient" \
  > $O/tests.txt 2>&1
echo "tests rc=$?" >> $O/tests.txt; grep -E "passed|failed|^FAILED|^E  " $O/tests.txt | head -20
PYTHONPATH=$PWD timeout 200 python3 benchmarks/probe_one_coefficient_device.py --log2n 24,27,29 --reps 9 > $O/probe.txt 2>&1
echo "probe rc=$?" >> $O/probe.txt; tail -22 $O/probe.txt
for t in N M; do d=$PWD; [ $t = M ] && d=$PWD/s53/M; echo "== casts $t"
  PYTHONPATH=$d timeout 60 python3 benchmarks/logs/2026-11-29-s54/cast_probe.py (moved there; never run from here) 2>&1 | tail -6; done
for round in 1 2; do for t in N M; do
  d=$PWD; [ $t = M ] && d=$PWD/s53/M
  echo "== $t round $round"
  PYTHONPATH=$d timeout 60 python3 $d/benchmarks/bench_one_coefficient.py $O/one-$t-$round.json --reps 9 --widths 1 --no-jax 2>&1 | tail -4
done; done > $O/ab.txt 2>&1; cat $O/ab.txt
