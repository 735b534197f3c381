#!/bin/bash
# One H200, the fifty-sixth session: the run-state operators (compensated sum, logaddexp) on the
# look-ahead's RESCAN path (the working tree, N) against main (s56M/: git archive of HEAD 8ade3d5,
# with N's sweep script), then their GPU tests on N.  carry ["s56M", ".whl"].
cd "$(dirname "$0")/../../../.."
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0
O=${OUT:-/tmp}
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader; date -u
S="compensated f32,compensated f64,logcumsumexp f32"
LA='[[128,16,1024,3,7,5,2],[128,32,1024,2,5,3,2],[64,32,1024,3,7,5,2],[128,16,1024,2,9,7,2],[256,16,1024,1,7,5,2],[64,16,1024,4,9,7,2]]'
PYTHONPATH=$PWD timeout 200 python3 benchmarks/sweep_costly_tiles.py --scans "$S" --shapes '[]' --leads auto --lookahead "$LA" --reps 9 --json $O/sweepN.json 2>&1 | grep -v Warning
date -u
(cd s56M && PYTHONPATH=$PWD timeout 120 python3 benchmarks/sweep_costly_tiles.py --scans "$S" --shapes '[]' --leads auto --lookahead '[]' --reps 9 2>&1 | grep -v Warning)
date -u
PYTHONPATH=$PWD timeout 200 python3 -m pytest -q -p no:cacheprovider -x tests/gpu/test_operators.py tests/gpu/test_one_coefficient.py -k "run_state_operators or compensated or logaddexp or look_ahead_sizes or lean_route or auto_looks_ahead" 2>&1 | tail -5
date -u
