#!/bin/bash
# s43: GPU tests of bdb26da (the affine store by has_param; the complex128 look-ahead ring)
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0 PYTHONPATH=$PWD
nvidia-smi --query-gpu=name --format=csv,noheader; date -u
P="python3 -m pytest -q -p no:cacheprovider -rfEs --timeout 500"
(CUDA_VISIBLE_DEVICES=1 timeout 500 $P tests/gpu/test_recurrence_initial.py tests/gpu/test_seeded_scans.py > /tmp/t1a.txt 2>&1; echo "exit $?" >> /tmp/t1a.txt) &
(CUDA_VISIBLE_DEVICES=0 timeout 500 $P tests/gpu/test_operators.py -k "linear_recurrence or infinite_or_nan or complex_coefficient or ring_stages or out_overlapping or columns_views or carries or one_row" > /tmp/t1b.txt 2>&1; echo "exit $?" >> /tmp/t1b.txt) &
wait; date -u
cp /tmp/t1a.txt /tmp/t1b.txt $OUT/
for f in /tmp/t1a.txt /tmp/t1b.txt; do echo "== $f"; grep -E "passed|failed|FAILED|ERROR|^exit" $f | tail -8; done
