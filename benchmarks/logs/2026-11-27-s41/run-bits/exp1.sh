#!/bin/bash
# s41 experiment 1: RUN_BITS look-ahead for segmented scans: tests + A/B sweep against main (s41/old)
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0
nvidia-smi --query-gpu=name --format=csv,noheader; date -u
NEW=$PWD; OLD=$PWD/s41/old
SC="segmented sum f32,segmented sum i64,recurrence f32 segments"
SH='{"8": [[128, 32, 1024, 2, 5, 3, 2]], "16": [[64, 16, 1024, 3, 6, 4, 2], [128, 16, 1024, 2, 6, 4, 2]]}'
# precompile both trees' sweep kernels in the background of the tests
(cd $OLD && PYTHONPATH=$OLD timeout 250 python3 benchmarks/sweep_state_tiles.py $OUT/warm-old.json --device lookahead --reps 1 --log2n 20 --scans "$SC" --shapes "$SH" > $OUT/warm-old.txt 2>&1) &
(PYTHONPATH=$NEW timeout 250 python3 benchmarks/sweep_state_tiles.py $OUT/warm-new.json --device lookahead --reps 1 --log2n 20 --scans "$SC" --shapes "$SH" > $OUT/warm-new.txt 2>&1) &
PYTHONPATH=$NEW timeout 280 python3 -m pytest -q -p no:cacheprovider -x tests/gpu/test_operators.py -k "ring or segment_starts" > $OUT/tests.txt 2>&1; echo "tests rc=$?" >> $OUT/tests.txt
wait
tail -3 $OUT/tests.txt; tail -2 $OUT/warm-*.txt
for r in 1 2; do
  for t in new old; do
    d=$NEW; [ $t = old ] && d=$OLD
    (cd $d && PYTHONPATH=$d timeout 120 python3 benchmarks/sweep_state_tiles.py $OUT/sw-$t-$r.json --device lookahead --reps 7 --scans "$SC" --shapes "$SH" > $OUT/sw-$t-$r.txt 2>&1)
    echo "== $t round $r"; grep -E "copy|segmented|recurrence" $OUT/sw-$t-$r.txt | tail -14
  done
done
date -u
