#!/bin/bash
# s43 experiment 2: the affine store compiled once for each value of has_param (PARAM_READS_MORE):
# (a) GPU tests of the change on GPU 1; (b) recurrences at 2^27, old tree (s43/old = HEAD's) against
# this tree, alternating, GPU 0, auto and the look-ahead's default.
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0
nvidia-smi --query-gpu=name --format=csv,noheader; date -u
NEW=$PWD; OLD=$PWD/s43/old
SC="recurrence f32,recurrence f64,recurrence c64,recurrence f32 segments"
SH='{"8": [], "16": []}'
(CUDA_VISIBLE_DEVICES=1 PYTHONPATH=$NEW timeout 400 python3 -m pytest -q -p no:cacheprovider -x tests/gpu/test_recurrence_initial.py tests/gpu/test_seeded_scans.py tests/gpu/test_operators.py -k "recurrence_with_and_without or constant_decay or linear_recurrence or infinite_or_nan or complex_coefficient or ring_stages or out_overlapping or columns_views or seeded" > $OUT/tests.txt 2>&1; echo "tests rc=$?" >> $OUT/tests.txt) &
(CUDA_VISIBLE_DEVICES=0 PYTHONPATH=$NEW timeout 200 python3 benchmarks/sweep_state_tiles.py $OUT/w-new.json --device lookahead --reps 1 --log2n 20 --scans "$SC" --shapes "$SH" > $OUT/w-new.txt 2>&1
 cd $OLD && CUDA_VISIBLE_DEVICES=0 PYTHONPATH=$OLD timeout 200 python3 benchmarks/sweep_state_tiles.py $OUT/w-old.json --device lookahead --reps 1 --log2n 20 --scans "$SC" --shapes "$SH" > $OUT/w-old.txt 2>&1)
for r in 1 2; do for t in old new; do
  d=$NEW; [ $t = old ] && d=$OLD
  (cd $d && CUDA_VISIBLE_DEVICES=0 PYTHONPATH=$d timeout 100 python3 benchmarks/sweep_state_tiles.py $OUT/sw-$t-$r.json --device lookahead --reps 7 --log2n 27 --scans "$SC" --shapes "$SH" > $OUT/sw-$t-$r.txt 2>&1)
done; done
date -u
wait
date -u
for f in $OUT/sw-*.txt; do echo "== $(basename $f)"; grep -E "^\| rec|copy" $f | cut -c1-100; done
tail -3 $OUT/tests.txt; grep -E "FAIL|Error" $OUT/tests.txt | head -5; tail -2 $OUT/w-new.txt $OUT/w-old.txt
