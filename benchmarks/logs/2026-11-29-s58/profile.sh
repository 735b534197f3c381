#!/bin/bash
# One H200, the fifty-eighth session (tree: main at 73d2da5 + the two benchmark scripts' new cases).
# 1. The 32-byte segmented tile (tuning.choose_tuning: 64 x 32, 2 blocks an SM, measured for the
#    segmented complex128 sum only) on the other scans that take it: segmented cumprod complex128,
#    forward and reversed; the segmented sum beside them as the control.
# 2. Nsight Compute on three scans at 2^27 (the third call's kernel): the compensated float32 sum
#    (issue 30's 1.15x row), the plain float32 cumsum, segmented int64 (0.76-0.78 of copy).
cd "$(dirname "$0")/../../.."
export NCCL_NVLS_ENABLE=0 PYTHONPATH=$PWD DISTSCAN_PROGRESS=0 PYTHONUNBUFFERED=1
O=${OUT:-/tmp}
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader; date -u
timeout 300 python3 benchmarks/sweep_state_tiles.py $O/tiles.json --log2n 27 --reps 9 --leads auto \
    --scans "segmented prod c128,segmented prod c128 reverse,segmented sum c128" > $O/tiles.txt 2>&1
echo "tiles rc=$?"; grep -v Warning $O/tiles.txt | grep -E "^\||compiled|lead" | cut -c1-160
date -u
for w in "compensated auto float32" "plain auto float32" "segmented auto int64"; do
  echo "== ncu $w"
  timeout 120 ncu --clock-control none --kernel-name regex:"scan_ext_kernel|scan_tiles_kernel|lookahead" \
      --launch-skip 2 --launch-count 1 --section SpeedOfLight --section Occupancy --section WarpStateStats \
      --section SchedulerStats --section LaunchStats --section MemoryWorkloadAnalysis \
      python3 benchmarks/profile_state_scans.py $w > "$O/ncu-${w// /-}.txt" 2>&1
  echo "ncu rc=$?"
  grep -E "  [a-z_]+kernel|Duration|Memory Throughput|DRAM Throughput|L2 Cache Throughput|Compute \(SM\)|L2 Hit|Achieved Occupancy|Registers Per|Issued Warp|Eligible Warps|Active Warps Per|No Eligible|Warp Cycles Per Issued|Block Limit|Executed Ipc A" \
      "$O/ncu-${w// /-}.txt" | cut -c1-140 | head -30
done
date -u
