#!/bin/bash
# s43 experiment 1 (H200 only): the RUN_BITS look-ahead against the look-back ("auto") for the
# segmented sums forward and reversed and the f32/c64 recurrences; compensated f32 against cumsum f32.
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0 PYTHONPATH=$PWD
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "$name"; date -u
case "$name" in *H200*) ;; *) echo "not an H200: stop"; exit 3;; esac
SC="segmented sum f32,segmented sum i64,segmented sum f32 reverse,recurrence f32"
SH='{"8": [[128, 16, 1024, 3, 6, 4, 2]], "16": [[64, 16, 1024, 3, 6, 4, 2]]}'
timeout 200 python3 benchmarks/sweep_state_tiles.py $OUT/w.json --device lookahead --reps 1 --log2n 20 --scans "$SC" --shapes "$SH" > $OUT/w.txt 2>&1
timeout 100 python3 benchmarks/sweep_costly_tiles.py --log2n 20 --reps 1 --scans "cumsum f32,compensated f32" --shapes '[]' --leads auto > $OUT/wc.txt 2>&1
for r in 1 2; do
  timeout 100 python3 benchmarks/sweep_state_tiles.py $OUT/sw-$r.json --device lookahead --reps 7 --log2n 27 --scans "$SC" --shapes "$SH" > $OUT/sw-$r.txt 2>&1
  timeout 100 python3 benchmarks/sweep_costly_tiles.py --log2n 27 --reps 9 --scans "cumsum f32,compensated f32" --shapes '[]' --leads auto --json $OUT/co-$r.json > $OUT/co-$r.txt 2>&1
done
date -u
for f in $OUT/sw-*.txt $OUT/co-*.txt; do echo "== $(basename $f)"; grep -E "^(\| )?(seg|rec|cumsum f32|comp)|copy" $f | cut -c1-110; done
tail -2 $OUT/w.txt $OUT/wc.txt
