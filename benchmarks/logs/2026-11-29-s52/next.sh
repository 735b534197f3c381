#!/bin/bash
# NOT RUN (for the next session's first GPU call, one H200, about 250 s): branch s52-next (main with
# s52-no-ftz and s52-numpy1-kinds) checked out as this tree, main's distscan/kernels/benchmarks in
# s52/M.  The new compile's tests, the subnormal test, the kinds and one-coefficient tests, then an
# A/B of the float32 scans with and without -ftz (FADD/FFMA/FMNMX issue alike on Hopper: check).
# Before: git checkout s52-next; rm -rf s52 && mkdir -p s52/M && git archive main distscan kernels
# benchmarks | tar -x -C s52/M; carry ["s52"].  Then the whole suite on the kind lent (run_suite.sh
# on one GPU needs a warm kernel cache: run it twice, or its slow runs again, as record BK did).
cd "$(dirname "$0")/../../.."
O=${OUT:-/tmp}
export NCCL_NVLS_ENABLE=0 DISTSCAN_PROGRESS=0 PYTHONUNBUFFERED=1
PYTHONPATH=$PWD timeout 200 python3 -m pytest -q -p no:cacheprovider -rfEs --timeout 190 tests/gpu/test_compile_cache.py \
  "tests/gpu/test_numpy_semantics.py::test_float32_subnormals_are_kept_as_numpy_keeps_them" \
  tests/gpu/test_one_coefficient.py > $O/tests.txt 2>&1
echo "tests rc=$?" >> $O/tests.txt; grep -E "passed|failed|^FAILED|^E  " $O/tests.txt | head -20
PYTHONPATH=$PWD timeout 60 python3 benchmarks/logs/2026-11-29-s52/ftz_probe.py 2>&1 | tail -12
S="cumsum f32,nancumsum f32,reverse cumsum f32,segmented sum f32,recurrence f32,compensated f32"
for round in 1 2; do for t in N M; do
  d=$PWD; [ $t = M ] && d=$PWD/s52/M
  PYTHONPATH=$d timeout 70 python3 $d/benchmarks/ab_scans.py $t --scans "$S" --reps 9 2>&1 | tail -6
done; done > $O/ab.txt 2>&1; cat $O/ab.txt
