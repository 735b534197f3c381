#!/bin/bash
# The fifty-fourth session's first GPU call (one H200, the only kind lent): branch s54-next (main +
# "auto"'s look-ahead for the tame float32 EMA, the backends' astype, the caches' mends) as this
# tree, main's distscan/kernels/benchmarks in s54/M (carry ["s54"]).
#  1. the EMA through "auto" on the branch (N) against main (M), two rounds, GPU alone;
#  2. the cast probe on both trees (main: CuPy's astype flushes a float32 subnormal coefficient);
#  3. the branch's own GPU tests, then the whole suite, cut where the call ends (its logs come
#     back as they grow), to be run again warm for the runs the cut stopped.
cd "$(dirname "$0")/../../.."
O=${OUT:-/tmp}
export NCCL_NVLS_ENABLE=0 DISTSCAN_PROGRESS=0 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
for round in 1 2; do for t in N M; do
  d=$PWD; [ $t = M ] && d=$PWD/s54/M
  echo "== $t round $round"
  PYTHONPATH=$d timeout 90 python3 $d/benchmarks/bench_one_coefficient.py $O/one-$t-$round.json --reps 9 --widths 1 --no-jax 2>&1 | tail -5
done; done > $O/ab.txt 2>&1; cat $O/ab.txt
for t in N M; do d=$PWD; [ $t = M ] && d=$PWD/s54/M; echo "== casts $t"
  PYTHONPATH=$d timeout 60 python3 benchmarks/logs/2026-11-29-s54/cast_probe.py 2>&1 | tail -6; done | tee $O/casts.txt
PYTHONPATH=$PWD timeout 200 python3 -m pytest -q -p no:cacheprovider -rfEs --timeout 190 tests/backends/test_cuda_auto_device.py \
  tests/gpu/test_compile_cache.py tests/gpu/test_one_coefficient.py tests/gpu/test_numpy_semantics.py \
  -k "auto or cast or subnormal or tame or names or cache or device_module or test_cuda_auto_device" > $O/tests.txt 2>&1
echo "tests rc=$?" >> $O/tests.txt; grep -E "passed|failed|^FAILED|^E  |rc=" $O/tests.txt | head -30
date -u
bash tests/gpu/run_suite.sh $O/s > $O/suite.txt 2>&1; echo "suite rc=$?" >> $O/suite.txt
tail -40 $O/suite.txt
