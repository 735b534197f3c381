#!/bin/bash
# One H200: the columns kernels of states with the plain kernels' loop shape (k < count, unrolled;
# a TileWalk beside k; contiguous tiles indexed by k): their tests, the probe, the bench.
cd "$(dirname "$0")/../../.."
O=${OUT:-/tmp}
export NCCL_NVLS_ENABLE=0 PYTHONPATH=$PWD DISTSCAN_PROGRESS=0 PYTHONUNBUFFERED=1
timeout 200 python3 -m pytest --maxfail=6 -q -p no:cacheprovider -rfEs --timeout 180 --durations=4 tests/gpu/test_state_columns.py > $O/tests.txt 2>&1
echo "tests rc=$?" >> $O/tests.txt; tail -12 $O/tests.txt
for w in 4 256; do timeout 60 python3 benchmarks/probe_state_columns.py --w $w --reps 7; done > $O/probe.txt 2>&1
cat $O/probe.txt
timeout 120 python3 benchmarks/bench_state_columns.py $O/new.json --log2n 27 --reps 5 > $O/new.txt 2>&1
echo "new rc=$?" >> $O/new.txt; tail -27 $O/new.txt
