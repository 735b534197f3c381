#!/bin/bash
# nvidia-h200-x2, the sixty-fourth session, call 6 (carry ["s64M"]): the branch s64-one-launch-reduce
# (P, the working tree) against main (M = s64M: distscan/, kernels/ and benchmarks/ of main):
# (1) whole 2-GPU calls, cumsum/nancumsum/reverse at 2^20, 2^24, 2^28 a GPU, two runs a tree
#     alternating (probe_seeded_launch_kind.py; its "default" column is the figure);
# (2) the steps of a 2^20 cumsum on P; (3) P's tests of the one-launch reduction (bits, ticket,
#     streams, threads), then the multi-GPU API tests (tests/gpu/test_mpi.py) while time is left.
cd "$(dirname "$0")/../../.."
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0
T0=$(date +%s)
date -u
tree() { if [ $1 = M ]; then echo $PWD/s64M; else echo $PWD; fi; }
for round in 1 2; do
  order="M P"; [ $round = 2 ] && order="P M"
  for t in $order; do for k in 20 24 28; do
    PYTHONPATH=$(tree $t) timeout 120 mpirun --allow-run-as-root --bind-to none -n 2 python3 $(tree $t)/benchmarks/probe_seeded_launch_kind.py \
      --log2n $k --reps 41 > $OUT/ab-$t-$k-$round.txt 2>&1
    echo "== $t 2^$k round $round rc $? $(date -u +%T)"; grep -v Warning $OUT/ab-$t-$k-$round.txt | tail -3 | cut -c1-60
  done; done
done
echo "A/B done after $(( $(date +%s) - T0 )) s"
PYTHONPATH=$PWD timeout 60 mpirun --allow-run-as-root -n 2 python3 benchmarks/probe_multi_gpu_steps.py /tmp/steps-20.json --log2n 20 --reps 9 \
  --only "cumsum f32" 2>&1 | grep -v Warning | tail -5 | cut -c1-700
PYTHONPATH=$PWD timeout 200 python3 -m pytest -q -p no:cacheprovider -rfEs tests/gpu/test_reduce_once.py -x \
  -k "float32-sum or int64-sum or complex128-sum or int8-sum or int64-gcd or int32-prod or row or threads" 2>&1 | tail -6
left=$(( 570 - ($(date +%s) - T0) ))
[ $left -gt 60 ] && PYTHONPATH=$PWD timeout $left python3 -m pytest -q -p no:cacheprovider -rfEs tests/gpu/test_mpi.py 2>&1 | tail -6
date -u; echo "call done after $(( $(date +%s) - T0 )) s"
