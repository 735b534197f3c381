#!/bin/bash
# exp13 (one H200): the speculative launch with the early stop (s47/S: the s46-speculative
# branch's tree with TileAgent::segment_of: a warp that reads the word set loads and stores
# nothing more) against main ($PWD), 2^27, two rounds: main "auto"; S on the look-ahead and on
# the look-back (which "auto" should take is what this decides).  Scans: the float32 recurrence
# forwards and reversed and float64 (bounded: the speculation holds), and three where it fails:
# one infinite coefficient in 10^4 ("inf"), |a| up to 1.25 everywhere ("wide"), one 2 in the last
# tile ("late": the speculative launch runs whole, then the fallback).  Then S's speculative and
# recurrence GPU tests.
cd "$(dirname "$0")/../../.."
export DISTSCAN_PROGRESS=0 NCCL_NVLS_ENABLE=0
S=$PWD/s47/S
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader; date -u
SCANS="recurrence f32,recurrence rev f32,recurrence f64,recurrence f32 inf,recurrence f32 wide,recurrence f32 late"
run() { PYTHONPATH=$1 timeout $2 python3 benchmarks/ab_scans.py $3 --log2n $4 --reps $5 --scans "$SCANS" --algorithm $6; }
run $PWD 150 warm 20 1 auto > /tmp/w1.txt 2>&1 &
run $S 150 warm 20 1 lookahead > /tmp/w2.txt 2>&1 &
run $S 150 warm 20 1 lookback > /tmp/w3.txt 2>&1 &
wait; tail -qn 2 /tmp/w*.txt; echo "warm done at ${SECONDS}s"
for r in 1 2; do
  run $PWD 60 M-auto 27 9 auto
  run $S 60 S-la 27 9 lookahead
  run $S 60 S-lb 27 9 lookback
done
echo "timing done at ${SECONDS}s"
LEFT=$((430 - SECONDS)); [ $LEFT -gt 200 ] && LEFT=200
echo "--- tests (S), timeout ${LEFT}s"
(cd $S && PYTHONPATH=$S timeout $LEFT python3 -m pytest -q -p no:cacheprovider tests/gpu/test_operators.py \
   -k "speculat" 2>&1 | tail -12)
echo "total ${SECONDS}s"
