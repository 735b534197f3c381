#!/bin/bash
# One H200: (1) branch s46-bounded-flag (H, carried as s46/H: one bounded flag a thread, from its
# items at the lift, for the float32 look-ahead's runs, warp scans, block fold and store) against
# main (G, this tree), 2^27, "auto" and the look-ahead, two rounds; the recurrence tests on H;
# (2) issue 30's one-GPU table at this tree (bench_operators.py, with CUB, torch, JAX).
cd "$(dirname "$0")/../../.."
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/cuda_cccl*.whl > /tmp/pip.txt 2>&1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader; date -u
tree() { if [ $1 = G ]; then echo $PWD; else echo $PWD/s46/$1; fi; }
SCANS="cumsum f32,recurrence f32,recurrence seg f32,recurrence rev f32,recurrence f32 inf,recurrence f64,recurrence c64"
for t in G H; do for alg in auto lookahead; do
  PYTHONPATH=$(tree $t) python3 benchmarks/ab_scans.py warm --log2n 20 --reps 1 --scans "$SCANS" --algorithm $alg > /tmp/warm-$t-$alg.txt 2>&1 &
done; done; wait; tail -qn 1 /tmp/warm-*.txt; date -u
for r in 1 2; do for t in G H; do for alg in auto lookahead; do
  PYTHONPATH=$(tree $t) python3 benchmarks/ab_scans.py $t-$alg --log2n 27 --reps 9 --scans "$SCANS" --algorithm $alg
done; done; done
date -u
(cd s46/H && PYTHONPATH=$PWD timeout 200 python3 $OLDPWD/benchmarks/logs/2026-11-28-s45/lookback/tests.py 2>&1 | tail -30)
date -u
(cd distscan && find . ../kernels -type f \( -name '*.py' -o -name '*.cu*' \) | LC_ALL=C sort | xargs sha1sum | sha1sum)
PYTHONPATH=/tmp/site:$PWD timeout 300 python3 benchmarks/bench_operators.py ${OUT:-/tmp}/ops.json --log2n 27 --reps 11 --png ${OUT:-/tmp}/operators.png > ${OUT:-/tmp}/ops.txt 2>&1; echo "ops rc=$?"
date -u
grep -v Warning ${OUT:-/tmp}/ops.txt | tail -16 | cut -c1-170
