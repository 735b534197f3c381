#!/bin/bash
# exp12 (one H200): the speculative tame launch with its rule-keeping fallback (s46/S: the
# s46-speculative branch's kernels, distscan and tests; kernels/scan_kernels.cu, scan_spec_kernel)
# against main ($PWD): (a) "auto" and the look-ahead, 2^27, two rounds, the float32 recurrence
# forwards and reversed (bounded data: the speculation holds, the fallback returns at once), float64,
# and "f32 inf" (infinite coefficients: the speculation fails, both launches run: its worst case);
# (b) S's recurrence and zero-rule GPU tests, the speculative ones among them.  Under 450 s in all:
# the tests get what is left of 440 s, 250 at most.
cd "$(dirname "$0")/../../.."
export DISTSCAN_PROGRESS=0
S=$PWD/s46/S
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader; date -u
tree() { if [ $1 = M ]; then echo $PWD; else echo $S; fi; }
SCANS="recurrence f32,recurrence rev f32,recurrence f64,recurrence f32 inf"
for t in M S; do for alg in auto lookahead; do
  PYTHONPATH=$(tree $t) timeout 150 python3 benchmarks/ab_scans.py warm --log2n 20 --reps 1 --scans "$SCANS" --algorithm $alg > /tmp/warm-$t-$alg.txt 2>&1 &
done; done; wait; tail -qn 1 /tmp/warm-*.txt; date -u; echo "warm done at ${SECONDS}s"
for r in 1 2; do for t in M S; do for alg in auto lookahead; do
  PYTHONPATH=$(tree $t) timeout 40 python3 benchmarks/ab_scans.py $t-$alg --log2n 27 --reps 9 --scans "$SCANS" --algorithm $alg
done; done; done
date -u; echo "timing done at ${SECONDS}s"
LEFT=$((400 - SECONDS)); [ $LEFT -gt 230 ] && LEFT=230
echo "--- tests (S), timeout ${LEFT}s"
(cd $S && PYTHONPATH=$S NCCL_NVLS_ENABLE=0 timeout $LEFT python3 -m pytest -q -p no:cacheprovider -x tests/gpu/test_operators.py \
   -k "recurrence or zero or affine or speculat" 2>&1 | tail -25; echo "pytest rc=${PIPESTATUS[0]}")
date -u; echo "total ${SECONDS}s"
