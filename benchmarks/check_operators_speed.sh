#!/usr/bin/env bash
# Issue 30's scans on one GPU: the correctness tests that cover the kernels changed on branch
# kernels-speed, then bench_operators.py (API and GPU-only GB/s per row), in one call of about
# 4 minutes on an H200 (NVRTC compiles included: the kernels' source changed, so nothing is cached).
#
#   PYTHONPATH=$PWD bash benchmarks/check_operators_speed.sh [OUT.json]
#
# Tests (tests/gpu/test_operators.py; its fixture compiles the file's modules in parallel):
#   new_functors        nanmax/nanmin (FMax/FMin as selects), logaddexp/logaddexp2 (selects),
#                       forward and reverse, n up to 2^22 + 1 (the look-ahead's interleaved chains)
#   reverse             max (Max as a select) and the others, both directions of the look-ahead
#   segmented, linear_recurrence
#                       the flags and coefficients loaded with the items (tile_agent.cuh, load_aux)
#   compensated, look_ahead_sizes
#                       state operators on the look-ahead's interleaved chains, past 2^23 items
#   ordered_reductions  reduce_tiles through the same load_items
# Each step has a time limit, so that a hang cannot take the whole call; the output is cut to
# its tail.
set -u
out=${1:-/tmp/operators-check.json}
export PYTHONPATH=${PYTHONPATH:-$PWD}
echo "== tests ($(git rev-parse --short HEAD 2>/dev/null))"
timeout 160 python3 -m pytest -q -x -p no:cacheprovider tests/gpu/test_operators.py \
    -k "new_functors or reverse or segmented or linear_recurrence or compensated or look_ahead_sizes or ordered_reductions" \
    2>&1 | tail -6
echo "tests rc=${PIPESTATUS[0]}"
echo "== bench_operators --log2n 27 --reps 15"
timeout 150 python3 benchmarks/bench_operators.py "$out" --log2n 27 --reps 15 2>&1 | tail -13
echo "bench rc=${PIPESTATUS[0]} (JSON: $out)"
