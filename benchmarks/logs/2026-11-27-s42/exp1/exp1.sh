#!/bin/bash
# s42 experiment 1: (a) the H200 question: RUN_BITS look-ahead vs look-back ("auto"), forward segmented sums;
# (b) the ends-bits patch (s42/eb): its tests, and reverse segmented f32 A/B against main
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0
nvidia-smi --query-gpu=name --format=csv,noheader; date -u
NEW=$PWD; EB=$PWD/s42/eb
SC="segmented sum f32,segmented sum i64"
SR="segmented sum f32 reverse"
SH='{"8": [[128, 16, 1024, 3, 6, 4, 2], [128, 32, 1024, 2, 5, 3, 2]], "16": [[64, 16, 1024, 3, 6, 4, 2], [128, 16, 1024, 2, 6, 4, 2]]}'
(PYTHONPATH=$NEW timeout 200 python3 benchmarks/sweep_state_tiles.py $OUT/w-new.json --device lookahead --reps 1 --log2n 20 --scans "$SC,$SR" --shapes "$SH" > $OUT/w-new.txt 2>&1) &
(cd $EB && PYTHONPATH=$EB timeout 200 python3 benchmarks/sweep_state_tiles.py $OUT/w-eb.json --device lookahead --reps 1 --log2n 20 --scans "$SR" --shapes "$SH" > $OUT/w-eb.txt 2>&1) &
(cd $EB && PYTHONPATH=$EB timeout 280 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_operators.py -k "ring or segment_starts or any_nonzero_flag_byte" tests/gpu/test_segment_carries.py > $OUT/eb-tests.txt 2>&1; echo "tests rc=$?" >> $OUT/eb-tests.txt)
wait
for r in 1 2; do
  PYTHONPATH=$NEW timeout 60 python3 benchmarks/sweep_state_tiles.py $OUT/fw-27-$r.json --device lookahead --reps 7 --log2n 27 --scans "$SC" --shapes "$SH" > $OUT/fw-27-$r.txt 2>&1
  for t in new eb; do
    d=$NEW; [ $t = eb ] && d=$EB
    (cd $d && PYTHONPATH=$d timeout 50 python3 benchmarks/sweep_state_tiles.py $OUT/rv-$t-$r.json --device lookahead --reps 7 --log2n 27 --scans "$SR" --shapes "$SH" > $OUT/rv-$t-$r.txt 2>&1)
  done
done
date -u
for f in $OUT/fw-*.txt $OUT/rv-*.txt; do echo "== $(basename $f)"; grep -E "^\| seg|copy" $f | cut -c1-100; done
echo; tail -3 $OUT/eb-tests.txt; grep -E "FAIL|Error" $OUT/eb-tests.txt | head -5
