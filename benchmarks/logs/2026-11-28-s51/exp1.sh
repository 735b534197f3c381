#!/bin/bash
# One H200 (fifty-first session, first call): branch s50-flag-rows (a tile's segment flags staged in
# shared memory) against main: its column tests, probe_state_columns.py alternating M (main, this
# tree) and F (the branch, s51/F) twice at 4 columns and once at 256; Nsight Compute on the forward
# and reverse float32 recurrence kernels (main); then the run-length sweep on the branch.
# Before: mkdir -p s51/F && git archive s50-flag-rows distscan kernels benchmarks/*.py tests | tar -x -C s51/F
# carry ["s51"].
cd "$(dirname "$0")/../../.."
O=${OUT:-/tmp}
export NCCL_NVLS_ENABLE=0 DISTSCAN_PROGRESS=0 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader
(cd s51/F && PYTHONPATH=$PWD timeout 150 python3 -m pytest -q -p no:cacheprovider -rfEs --timeout 140 tests/gpu/test_state_columns.py) > $O/tests.txt 2>&1
echo "tests rc=$?" >> $O/tests.txt; tail -4 $O/tests.txt
for round in 1 2 3; do w=4; [ $round = 3 ] && w=256; for t in M F; do
  d=.; [ $t = F ] && d=s51/F
  echo "== $t round $round w=$w"; (cd $d && PYTHONPATH=$PWD timeout 70 python3 benchmarks/probe_state_columns.py --w $w --reps 7)
done; done > $O/probe.txt 2>&1
cat $O/probe.txt
PYTHONPATH=$PWD timeout 100 ncu --clock-control none -k regex:state_column_tiles --section SpeedOfLight --section WarpStateStats \
  --metrics sm__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,launch__registers_per_thread,launch__occupancy_limit_registers \
  python3 benchmarks/probe_state_columns.py --w 2 --once --only recurrence > $O/ncu.txt 2>&1
echo "ncu rc=$?" >> $O/ncu.txt
grep -E "state_column_tiles|Duration|Instructions Executed|inst_executed|issue_active|bank_conflicts|registers_per|DRAM Throughput|Memory Throughput|Compute \(SM\)|rc=" $O/ncu.txt | cut -c1-400
(cd s51/F && PYTHONPATH=$PWD timeout 250 python3 benchmarks/sweep_column_runs.py $O/runs.json --log2n 27 --reps 5) > $O/runs.txt 2>&1
echo "sweep rc=$?" >> $O/runs.txt; cat $O/runs.txt
