#!/bin/bash
# s41 experiment 2: tests of the RUN_BITS look-ahead, and the A/B sweep against main (s41/old), shapes with 3 blocks an SM
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0
nvidia-smi --query-gpu=name --format=csv,noheader; date -u
NEW=$PWD; OLD=$PWD/s41/old
SC="segmented sum f32,segmented sum i64,recurrence f32 segments"
SH='{"8": [[128, 16, 1024, 3, 6, 4, 2], [128, 32, 1024, 2, 5, 3, 2]], "16": [[64, 16, 1024, 3, 6, 4, 2]]}'
(cd $OLD && PYTHONPATH=$OLD timeout 250 python3 benchmarks/sweep_state_tiles.py $OUT/w-old.json --device lookahead --reps 1 --log2n 20 --scans "$SC" --shapes "$SH" > $OUT/w-old.txt 2>&1) &
(PYTHONPATH=$NEW timeout 250 python3 benchmarks/sweep_state_tiles.py $OUT/w-new.json --device lookahead --reps 1 --log2n 20 --scans "$SC" --shapes "$SH" > $OUT/w-new.txt 2>&1) &
PYTHONPATH=$NEW timeout 300 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_operators.py -k "ring or segment_starts" tests/gpu/test_segment_carries.py > $OUT/tests.txt 2>&1; echo "tests rc=$?" >> $OUT/tests.txt
wait
for r in 1 2; do
  for t in new old; do
    d=$NEW; [ $t = old ] && d=$OLD
    (cd $d && PYTHONPATH=$d timeout 100 python3 benchmarks/sweep_state_tiles.py $OUT/sw-$t-$r.json --device lookahead --reps 7 --scans "$SC" --shapes "$SH" > $OUT/sw-$t-$r.txt 2>&1)
  done
done
date -u
for f in $OUT/sw-*.txt; do echo "== $f"; grep -E "^\| (seg|rec)|copy" $f | cut -c1-110; done
echo; tail -4 $OUT/tests.txt; grep -E "FAIL|Error" $OUT/tests.txt | head -5
