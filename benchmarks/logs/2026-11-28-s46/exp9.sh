#!/bin/bash
# The tame look-back (branch s45-tame-lookback), two questions in one call, 2^27, one GPU, two rounds:
# 1. float64 lost its first commit's gain (exp7: 2893 -> 3035 GB/s; exp8's whole branch: 2911): its
#    commits F (2c3d3c4, the look-back), D (9c45444, + the data warps), P (b2f3ed7, + the windows'
#    publishing), L (c872c46, the branch) and G (this tree: L, float64's data warps without the votes).
# 2. the float32 look-ahead at L (3036) against WL's 3574 (session 45's timing-only variant): G with
#    the runs (RU), the data warps (WU) or the look-back (LU) tame without their tests (s46/variants.py).
cd "$(dirname "$0")/../../.."
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader; date -u
tree() { if [ $1 = G ]; then echo $PWD; else echo $PWD/s46/$1; fi; }
S64="recurrence f64,recurrence rev f64"
S32="recurrence f32,recurrence seg f32,recurrence c64"
for t in F D P L G; do
  PYTHONPATH=$(tree $t) python3 benchmarks/ab_scans.py warm --log2n 20 --reps 1 --scans "$S64" > /tmp/warm-$t.txt 2>&1 &
done
for t in G RU WU LU WL; do for alg in auto lookahead; do
  PYTHONPATH=$(tree $t) python3 benchmarks/ab_scans.py warm --log2n 20 --reps 1 --scans "$S32" --algorithm $alg > /tmp/warm32-$t-$alg.txt 2>&1 &
done; done; wait; tail -qn 1 /tmp/warm*.txt; date -u
for r in 1 2; do
  for t in F D P L G; do PYTHONPATH=$(tree $t) python3 benchmarks/ab_scans.py $t --log2n 27 --reps 9 --scans "$S64"; done
  for t in G RU WU LU WL; do for alg in auto lookahead; do
    PYTHONPATH=$(tree $t) python3 benchmarks/ab_scans.py $t-$alg --log2n 27 --reps 9 --scans "$S32" --algorithm $alg
  done; done
done
date -u
