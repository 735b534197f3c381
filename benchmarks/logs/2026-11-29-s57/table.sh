#!/bin/bash
# One H200, the fifty-seventh session: issue 30's table (bench_operators.py, with JAX, torch and CUB)
# at the final tree of the session (376821c, sha1 565aa87c).  carry [".whl"].
cd "$(dirname "$0")/../../.."
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0
O=${OUT:-/tmp}
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader; date -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/cuda_cccl*.whl > /tmp/pip.txt 2>&1
PYTHONPATH=/tmp/site:$PWD timeout 250 python3 benchmarks/bench_operators.py $O/ops.json --log2n 27 --reps 11 > $O/ops.txt 2>&1; echo "ops rc=$?"
grep -v Warning $O/ops.txt | tail -18 | cut -c1-170
date -u
