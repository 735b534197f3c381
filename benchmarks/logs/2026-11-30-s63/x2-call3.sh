#!/bin/bash
# nvidia-h200-x2, the sixty-third session, call 3 (carry [".whl"]): issue 30's tables at the final
# tree (2ca96a57, record BZ): (1) one H200 (GPU 0), bench_operators.py at 2^27 with the peers (CUB via
# cuda.compute 1.2.1, torch, JAX); (2) 2 H200s, bench_multi_gpu_operators.py at 2^28 a GPU;
# (3) where the 2-GPU call's time goes, step by step (probe_multi_gpu_steps.py), while time is left.
cd "$(dirname "$0")/../../.."
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0
T0=$(date +%s)
date -u; nvidia-smi -L
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/cuda_cccl*.whl > /tmp/pip.txt 2>&1
CUDA_VISIBLE_DEVICES=0 PYTHONPATH=/tmp/site:$PWD timeout 260 python3 benchmarks/bench_operators.py $OUT/ops.json --log2n 27 --reps 11 > $OUT/ops.txt 2>&1
echo "ops rc=$? after $(( $(date +%s) - T0 )) s"; grep -v Warning $OUT/ops.txt | tail -14 | cut -c1-170
PYTHONPATH=$PWD timeout 200 mpirun --allow-run-as-root -n 2 python3 benchmarks/bench_multi_gpu_operators.py $OUT/mgo.json \
    --log2n 28 --reps 9 > $OUT/mgo.txt 2>&1
echo "mgo rc=$? after $(( $(date +%s) - T0 )) s"; grep -v Warning $OUT/mgo.txt | tail -14
left=$(( 585 - ($(date +%s) - T0) ))
if [ $left -gt 40 ]; then
  PYTHONPATH=$PWD timeout $left mpirun --allow-run-as-root -n 2 python3 benchmarks/probe_multi_gpu_steps.py $OUT/steps.json \
      --log2n 28 --reps 9 > $OUT/steps.txt 2>&1
  echo "steps rc=$?"; grep -v Warning $OUT/steps.txt | tail -40 | cut -c1-170
fi
date -u
