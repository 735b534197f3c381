#!/bin/bash
# s44 final call (2 GPUs): the whole GPU suite at the final tree, then bench_products.py on GPU 0.
bash tests/gpu/run_suite.sh /tmp/s > $OUT/suite.txt 2>&1; echo "suite rc=$?" >> $OUT/suite.txt
date -u >> $OUT/suite.txt
CUDA_VISIBLE_DEVICES=0 PYTHONPATH=$PWD timeout 75 python3 benchmarks/bench_products.py $OUT/prod.json --log2n 27 --reps 5 > $OUT/prod.txt 2>&1
echo "prod rc=$?" >> $OUT/prod.txt
tar czf $OUT/s.tgz -C /tmp s
tail -45 $OUT/suite.txt; grep -v Warn $OUT/prod.txt | tail -9
