#!/bin/bash
# One H200, the fifty-eighth session: the compensated float sum's warp joins (the working tree W:
# kernels/warp/warp_scan.cuh warp_scan_join / warp_close, Compensated::join_warp / close_warp in
# kernels/util/states.cuh) against main (s58M, git archive of f689675).  carry ["s58M"].
# 1. W's compensated tests, called directly (test_operators.py's module fixture would compile some
#    hundred modules first): correctly rounded or within the bound at every size on "auto", the
#    look-back and the look-ahead; overflows and infinities as NumPy's on all three; the 4-byte
#    look-ahead sizes; the compensated columns; then pytest on the negative zeros.
# 2. Time: sweep_costly_tiles.py (auto, look-back, look-ahead) and ab_compensated.py, M and W
#    alternating, two rounds.
cd "$(dirname "$0")/../../.."
export NCCL_NVLS_ENABLE=0 DISTSCAN_PROGRESS=0 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader; date -u
PYTHONPATH=$PWD timeout 300 python3 -c "
import numpy as np
from tests.gpu import test_operators as t
gpu = t._gpu
for alg in ('auto', 'lookback', 'lookahead'):
    t._gpu = lambda f, *a, **kw: gpu(f, *a, algorithm=alg, **kw)
    for n in t.SIZES + [t.LARGE]:
        t._compensated_checked(n, np.random.default_rng(n))
        t.test_compensated_sums_that_overflow_or_meet_infinities_are_numpys(n, np.random.default_rng(n + 1))
    print(alg, 'compensated: correctly rounded or within the bound; infinities as NumPy', flush=True)
t._gpu = gpu
t.test_look_ahead_sizes_of_4_byte_items(np.random.default_rng(7))
print('4-byte look-ahead sizes: passed')
from tests.gpu import test_state_columns as c
for reverse in (False, True):
    c.test_compensated_float32_columns_are_within_the_compensated_bound(reverse, np.random.default_rng(3))
print('compensated columns: within the bound')
" 2>&1 | grep -v Warning | tail -8
echo "direct tests rc=${PIPESTATUS[0]}"; date -u
PYTHONPATH=$PWD timeout 200 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_promises.py \
    -k "compensated or start_from_the_bits" 2>&1 | tail -3
date -u
for round in 1 2; do for t in M W; do
  d=$([ $t = M ] && echo s58M || echo .)
  echo "== $t round $round"
  (cd $d && PYTHONPATH=$PWD timeout 150 python3 benchmarks/sweep_costly_tiles.py --scans "compensated f32" \
      --shapes '[]' --lookahead '[]' --reps 11 2>&1 | grep -v -E "Warning|^#" | tail -5
   PYTHONPATH=$PWD timeout 100 python3 benchmarks/ab_compensated.py $t-$round --reps 15 2>&1 | grep -v Warning)
done; done
date -u
