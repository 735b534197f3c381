#!/bin/bash
# s44 call 4 (H200): the zero-absorption repair after the 1-D reductions (bench_products.py, the
# segmented prod rows of bench_segmented_device.py) and the GPU tests of products.
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0 PYTHONPATH=$PWD
nvidia-smi --query-gpu=name --format=csv,noheader; date -u
(cd distscan && find . ../kernels -type f \( -name '*.py' -o -name '*.cu*' \) | LC_ALL=C sort | xargs sha1sum | sha1sum)
timeout 150 python3 benchmarks/bench_products.py $OUT/prod.json --log2n 27 --reps 7 > $OUT/prod.txt 2>&1; echo "prod rc=$?"
timeout 80 python3 benchmarks/bench_segmented_device.py $OUT/seg.json --log2n 27 --reps 7 --cases "sum f32,prod f32" > $OUT/seg.txt 2>&1; echo "seg rc=$?"
date -u
timeout 250 python3 -m pytest -q -p no:cacheprovider tests/gpu -k "prod or absorb or zero" -x > $OUT/t.txt 2>&1; echo "tests rc=$?"
date -u
grep -v Warn $OUT/prod.txt | tail -9; tail -4 $OUT/seg.txt; tail -3 $OUT/t.txt
