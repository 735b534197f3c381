#!/bin/bash
# s42 experiment 2: AffineEnds by the bits (this tree) against without (s42/off), reverse segmented recurrence f32;
# the tests of the reverse runs by bits (ring with the f32 segmented recurrence, starts, flag bytes)
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0
nvidia-smi --query-gpu=name --format=csv,noheader; date -u
NEW=$PWD; OFF=$PWD/s42/off
SR="recurrence f32 segments reverse,recurrence f32 segments"
SH='{"8": [], "16": [[64, 16, 1024, 3, 6, 4, 2], [128, 16, 1024, 2, 6, 4, 2]]}'
(PYTHONPATH=$NEW timeout 200 python3 benchmarks/sweep_state_tiles.py $OUT/w-new.json --device lookahead --reps 1 --log2n 20 --scans "$SR" --shapes "$SH" > $OUT/w-new.txt 2>&1) &
(cd $OFF && PYTHONPATH=$OFF timeout 200 python3 benchmarks/sweep_state_tiles.py $OUT/w-off.json --device lookahead --reps 1 --log2n 20 --scans "$SR" --shapes "$SH" > $OUT/w-off.txt 2>&1) &
(PYTHONPATH=$NEW timeout 330 python3 -m pytest -q -p no:cacheprovider -rfE tests/gpu/test_operators.py -k "ring_stages_flags or segment_starts or any_nonzero_flag_byte or linear_recurrence_matches" > $OUT/tests.txt 2>&1; echo "tests rc=$?" >> $OUT/tests.txt) &
wait
for r in 1 2; do
  for t in new off; do
    d=$NEW; [ $t = off ] && d=$OFF
    (cd $d && PYTHONPATH=$d timeout 50 python3 benchmarks/sweep_state_tiles.py $OUT/rv-$t-$r.json --device lookahead --reps 7 --log2n 27 --scans "$SR" --shapes "$SH" > $OUT/rv-$t-$r.txt 2>&1)
  done
done
date -u
for f in $OUT/rv-*.txt; do echo "== $(basename $f)"; grep -E "^\| rec|copy" $f | cut -c1-100; done
echo; tail -3 $OUT/tests.txt; grep -E "FAIL|Error" $OUT/tests.txt | head -5
