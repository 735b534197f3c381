#!/bin/bash
# s41 experiment 4 (short exp3): the RUN_BITS look-ahead against the look-back, 2^27, forward segmented sums
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0 PYTHONPATH=$PWD
nvidia-smi --query-gpu=name --format=csv,noheader; date -u
SC="segmented sum f32,segmented sum i64"
SH='{"8": [[128, 16, 1024, 3, 6, 4, 2]], "16": []}'
timeout 100 python3 benchmarks/sweep_state_tiles.py $OUT/w.json --device lookahead --reps 1 --log2n 18 --scans "$SC" --shapes "$SH" > $OUT/w.txt 2>&1
for r in 1 2; do
  timeout 45 python3 benchmarks/sweep_state_tiles.py $OUT/sw-27-$r.json --device lookahead --reps 5 --log2n 27 --scans "$SC" --shapes "$SH" > $OUT/sw-27-$r.txt 2>&1
done
date -u
for f in $OUT/sw-*.txt; do echo "== $f"; grep -E "^\| seg|copy" $f | cut -c1-110; done
