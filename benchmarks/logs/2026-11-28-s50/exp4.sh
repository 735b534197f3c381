#!/bin/bash
# One H200: where a columns scan of states spends its time (probe_state_columns.py: each kernel
# alone against the plain module's, inputs left out), then Nsight Compute on the same kernels.
cd "$(dirname "$0")/../../.."
O=${OUT:-/tmp}
export NCCL_NVLS_ENABLE=0 PYTHONPATH=$PWD DISTSCAN_PROGRESS=0 PYTHONUNBUFFERED=1
for w in 4 256; do timeout 60 python3 benchmarks/probe_state_columns.py --w $w --reps 7; done > $O/probe.txt 2>&1
cat $O/probe.txt
timeout 200 ncu --clock-control none --section SpeedOfLight --section Occupancy --section WarpStateStats \
    --section LaunchStats --section MemoryWorkloadAnalysis -k regex:column_tiles \
    python3 benchmarks/probe_state_columns.py --once --log2n 26 --w 4 > $O/ncu.txt 2>&1
echo "ncu rc=$?" >> $O/ncu.txt
grep -E "column_tiles_kernel|Duration|Memory Throughput|DRAM Throughput|Achieved Occupancy|Registers Per|Stall|Issued Ipc|Warp Cycles Per Issued|L1/TEX Hit|Theoretical Occ|Block Limit" $O/ncu.txt | cut -c1-150 | head -150
