#!/bin/bash
# One H200, the fifty-fifth session: the H200 rule for the forward float32 recurrence with an array a
# (applied to the working tree, not yet committed: the same tree as 61cbc20, sha1 e6f54503) against main (s55M/: git archive
# of main's HEAD, carried), then the rule's GPU test and issue 30's table with JAX, torch and CUB on
# the patched tree.  carry ["s55M", ".whl"].
cd "$(dirname "$0")/../../../.."
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0
O=${OUT:-/tmp}
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader; date -u
PYTHONPATH=$PWD python3 -c "
from distscan.backends.cuda import plans, device
print('device_info', device.device_info(0), 'fast_dram', plans.fast_dram(0))"
S="recurrence f32,recurrence rev f32"
for l in 27 24 29 27; do for t in N M; do
  if [ $t = N ]; then P=$PWD; else P=$PWD/s55M; fi
  PYTHONPATH=$P timeout 60 python3 benchmarks/ab_scans.py $t-2^$l --log2n $l --reps 9 --scans "$S" 2>&1 | grep -v Warning
done; done
date -u
PYTHONPATH=$PWD timeout 150 python3 -m pytest -q -p no:cacheprovider tests/backends/test_cuda_auto_device.py tests/gpu/test_one_coefficient.py -k "auto_looks_ahead or fast_dram or array_a_looks_ahead" 2>&1 | tail -4
date -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/cuda_cccl*.whl > /tmp/pip.txt 2>&1
PYTHONPATH=/tmp/site:$PWD timeout 240 python3 benchmarks/bench_operators.py $O/ops.json --log2n 27 --reps 11 > $O/ops.txt 2>&1; echo "ops rc=$?"
grep -v Warning $O/ops.txt | tail -16 | cut -c1-170
date -u
