#!/bin/bash
# NOT RUN: for the next session's first GPU call (one H200 or H100; about 3-4 minutes), on main as
# the fifty-fourth session left it (tree 26b46bb9), before any change to distscan/ or kernels/:
#  1. the ring experiment (benchmarks/probe_affine_ceiling.py --rings: written and compiled, never
#     run; a hang would be the ring's bug, the timeout stops it): does a persistent ring take the
#     chained single-read recurrence from 0.74 of copy towards 0.9 (NOTES-gpu, fifty-fourth session)?
#  2. the segmented complex128 tiles again, beside shapes that may not spill (the patch's 64 x 32 and
#     128 x 16 spill at 255 registers under nvcc): then apply next/c128-tiles.patch with the best
#     shape, run the whole suite (tests/gpu/run_suite.sh, its logs gathered into one file of $OUT:
#     the device tool brings back 8 files at most), record, merge on main the same session.
cd "$(dirname "$0")/../../../.."
O=${OUT:-/tmp}
export NCCL_NVLS_ENABLE=0 DISTSCAN_PROGRESS=0 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
PYTHONPATH=$PWD timeout 150 python3 benchmarks/probe_affine_ceiling.py $O/ring.json --reps 9 --log2n 27,29 --shapes 128x17 \
  --rings 128x17x2x2,128x17x1x2,128x17x1x1,256x17x1x2,128x25x1x1,128x17x2x3 > $O/ring.txt 2>&1
echo "ring rc=$?" >> $O/ring.txt; grep -v -e Warning -e "mode [0-9] sleep" $O/ring.txt | tail -30
SH='{"32": [[64,32,1024,2],[64,16,1024,3],[64,16,1024,4],[128,16,1024,2],[128,8,1024,3]]}'
PYTHONPATH=$PWD timeout 240 python3 benchmarks/sweep_state_tiles.py $O/c128.json --reps 7 --leads auto --shapes "$SH" \
  --scans "segmented sum c128,recurrence c128 segments" > $O/c128.txt 2>&1
echo "c128 rc=$?" >> $O/c128.txt; grep -E "^\|.*c128|rc=|Error" $O/c128.txt | head -20
