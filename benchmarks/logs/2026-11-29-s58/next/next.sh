#!/bin/bash
# For the next session: land the compensated float sum's warp joins (next/warp-joins.patch, measured
# and partly tested in the fifty-eighth session: RESULTS.md, "The compensated float sum's warp joins").
# Plan, from the repository root:
#   git apply benchmarks/logs/2026-11-29-s58/next/warp-joins.patch   (kernels/, two docs paragraphs
#       and a GPU test; sha1 a89d3bfb of distscan/ and kernels/ with it, as run_suite.sh prints it)
#   The patch's new test, test_compensated_float32_ties_at_every_warp_join_are_rounded_to_even
#       (tests/gpu/test_operators.py: a tie at every warp join, correctly rounded on both kernels),
#       was written after the last GPU call and passed on the CPU backend only: the suite runs it.
#   GPU suite on the uncommitted tree: two calls on a fresh nvidia-h200 (about 580 + 280 s):
#       bash tests/gpu/run_suite.sh /tmp/s, then RUNS="api kernels operators-rest" on the warm machine
#       (the gathering of logs: benchmarks/logs/2026-11-29-s57/note.md and tests/gpu/run_suite.sh).
#   Commit with record BT in benchmarks/logs/gpu-tests.txt; then issue 30's table (this script's
#   second part, about 60 s, carry [".whl"]) and, on nvidia-h200-x2, the 2-GPU tests and rows.
# Already run on the patched tree (one H200, 2026-11-29 17:30-17:36 UTC; logs/2026-11-29-s58/):
#   every compensated test of test_operators.py on "auto", the look-back and the look-ahead, the
#   4-byte look-ahead sizes, the compensated columns, test_promises.py's zeros (warpjoin.txt);
#   test_seeded_scans.py and test_kinds.py whole: 38 passed, 1 skipped (warpjoin-pre-tests.txt).
cd "$(dirname "$0")/../../../.."
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0
O=${OUT:-/tmp}
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader; date -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/cuda_cccl*.whl > /tmp/pip.txt 2>&1
PYTHONPATH=$PWD timeout 100 python3 benchmarks/ab_compensated.py W --reps 15 2>&1 | grep -v Warning
PYTHONPATH=/tmp/site:$PWD timeout 250 python3 benchmarks/bench_operators.py $O/ops.json --log2n 27 --reps 11 > $O/ops.txt 2>&1
echo "ops rc=$?"; grep -v Warning $O/ops.txt | tail -18 | cut -c1-170
date -u
