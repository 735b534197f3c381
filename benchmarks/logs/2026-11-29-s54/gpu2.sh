#!/bin/bash
# One H200, the fifty-fourth session's last GPU call, at the final tree (26b46bb9): issue 30's one-GPU
# table (bench_operators.py, with CUB via cuda.compute 1.2.1, torch and JAX in the same run), then
# the EMA against JAX (bench_one_coefficient.py, 1 and 64 columns).  carry [".whl"].
cd "$(dirname "$0")/../../.."
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0
O=${OUT:-/tmp}
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/cuda_cccl*.whl > /tmp/pip.txt 2>&1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader; date -u
(cd distscan && find . ../kernels -type f \( -name '*.py' -o -name '*.cu*' \) | LC_ALL=C sort | xargs sha1sum | sha1sum)
PYTHONPATH=/tmp/site:$PWD timeout 330 python3 benchmarks/bench_operators.py $O/ops.json --log2n 27 --reps 11 --png $O/operators.png > $O/ops.txt 2>&1; echo "ops rc=$?"
date -u
grep -v Warning $O/ops.txt | tail -16 | cut -c1-170
PYTHONPATH=$PWD timeout 150 python3 benchmarks/bench_one_coefficient.py $O/one.json --reps 9 --widths 1,64 > $O/one.txt 2>&1; echo "one rc=$?"
tail -8 $O/one.txt
date -u
