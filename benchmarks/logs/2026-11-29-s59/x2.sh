#!/bin/bash
# nvidia-h200-x2, the fifty-ninth session: the 2-GPU tests at the tree with the compensated sum's
# warp joins and the look-ahead's shared-memory structs (sha1 892bd4a9), then issue 30's 2-GPU rows.
cd "$(dirname "$0")/../../.."
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0
date -u; nvidia-smi -L
mkdir -p /tmp/s
RUNS="mpi" bash tests/gpu/run_suite.sh /tmp/s > $OUT/suite.txt 2>&1
for f in /tmp/s/suite-*.txt; do echo "=== $f"; tail -c 3000 $f; done > $OUT/live.txt
cat $OUT/suite.txt
PYTHONPATH=$PWD timeout 120 python3 -m pytest -q -p no:cacheprovider -rfEs tests/gpu/test_kinds.py tests/gpu/test_hotpath.py \
    -k "arrays_on_another_device or arrays_on_another_gpu" > $OUT/other-gpu.txt 2>&1
echo "other-gpu rc=$?"; tail -3 $OUT/other-gpu.txt
PYTHONPATH=$PWD timeout 150 mpirun --allow-run-as-root -n 2 python3 benchmarks/bench_multi_gpu_operators.py $OUT/mgo.json \
    --log2n 28 --reps 9 > $OUT/mgo.txt 2>&1
echo "mgo rc=$?"; grep -v Warning $OUT/mgo.txt | tail -14
date -u
