#!/bin/bash
# For the next session, on the branch s64-one-launch-reduce (one nvidia-h200, ~60 s with a start):
# the one-launch reduction against the two kernels, alone and interleaved (probe_reduce_once.py),
# then its tests.  Land it only if "gpu once" is not slower at 2^26-2^28 and "host once" is
# faster; then the whole GPU suite (tests/gpu/run_suite.sh) and an interleaved 2-GPU A/B.
cd "$(dirname "$0")/../../.."
export PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0 PYTHONPATH=$PWD
timeout 200 python3 benchmarks/probe_reduce_once.py --reps 21
timeout 200 python3 -m pytest -q -p no:cacheprovider -rfEs tests/gpu/test_reduce_once.py -x 2>&1 | tail -4
