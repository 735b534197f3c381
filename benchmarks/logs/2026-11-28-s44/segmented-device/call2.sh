#!/bin/bash
# s44 call 2 (H200): which kernel for forward segmented scans (bench_segmented_device.py), then
# issue 30's one-GPU table (bench_operators.py, with CUB, torch, JAX) at this tree.
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/cuda_cccl*.whl > $OUT/pip.txt 2>&1
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name --format=csv,noheader; date -u
(cd distscan && find . ../kernels -type f \( -name '*.py' -o -name '*.cu*' \) | LC_ALL=C sort | xargs sha1sum | sha1sum)
timeout 230 python3 benchmarks/bench_segmented_device.py $OUT/seg.json --log2n 24,27,29 --reps 7 > $OUT/seg.txt 2>&1; echo "seg rc=$?"
date -u
timeout 300 python3 benchmarks/bench_operators.py $OUT/ops.json --log2n 27 --reps 11 --png $OUT/operators.png > $OUT/ops.txt 2>&1; echo "ops rc=$?"
date -u
tail -40 $OUT/seg.txt | cut -c1-150
grep -v Warning $OUT/ops.txt | tail -14 | cut -c1-170
