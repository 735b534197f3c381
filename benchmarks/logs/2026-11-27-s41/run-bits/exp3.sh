#!/bin/bash
# s41 experiment 3: the RUN_BITS look-ahead against the look-back ("auto") for the forward segmented sums, same run
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0
nvidia-smi --query-gpu=name --format=csv,noheader; date -u
SC="segmented sum f32,segmented sum i64"
SH='{"8": [[128, 16, 1024, 3, 6, 4, 2], [128, 32, 1024, 2, 5, 3, 2]], "16": [[64, 16, 1024, 3, 6, 4, 2], [128, 16, 1024, 2, 6, 4, 2]]}'
export PYTHONPATH=$PWD
CUDA_VISIBLE_DEVICES=0 timeout 200 python3 benchmarks/sweep_state_tiles.py $OUT/w.json --device lookahead --reps 1 --log2n 20 --scans "$SC" --shapes "$SH" > $OUT/w.txt 2>&1
for r in 1 2; do for l in 27 29; do
  CUDA_VISIBLE_DEVICES=0 timeout 100 python3 benchmarks/sweep_state_tiles.py $OUT/sw-$l-$r.json --device lookahead --reps 7 --log2n $l --scans "$SC" --shapes "$SH" > $OUT/sw-$l-$r.txt 2>&1
done; done
date -u
for f in $OUT/sw-*.txt; do echo "== $f"; grep -E "^\| seg|copy" $f | cut -c1-110; done
tail -3 $OUT/w.txt
