#!/bin/bash
# s43 bench 1: issue 30's one-GPU table at this tree (bench_operators.py, GPU 0, with CUB/torch/JAX),
# then the same scans over 2 GPUs (bench_multi_gpu_operators.py, 2^28 a GPU).
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/cuda_cccl*.whl > $OUT/pip.txt 2>&1
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name --format=csv,noheader; date -u
(cd distscan && find . ../kernels -type f \( -name '*.py' -o -name '*.cu*' \) | LC_ALL=C sort | xargs sha1sum | sha1sum)
python3 -c "import cuda.compute; print('cuda.compute', cuda.compute.__file__)" 2>&1 | tail -1
CUDA_VISIBLE_DEVICES=0 timeout 330 python3 benchmarks/bench_operators.py $OUT/ops.json --log2n 27 --reps 11 --png $OUT/operators.png > $OUT/ops.txt 2>&1; echo "ops rc=$?"
date -u
timeout 200 mpirun --allow-run-as-root -n 2 python3 benchmarks/bench_multi_gpu_operators.py $OUT/mgo.json --log2n 28 --reps 9 > $OUT/mgo.txt 2>&1; echo "mgo rc=$?"
date -u
cat $OUT/ops.txt | grep -v Warning | tail -16 | cut -c1-170
tail -16 $OUT/mgo.txt | cut -c1-150
