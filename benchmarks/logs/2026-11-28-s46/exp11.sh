#!/bin/bash
# What a speculative tame kernel would cost (speculate.py): this tree (G) against A (every level's
# zero-rule tests out, unconditionally: timing only) and AD (A with the detection of maps whose
# |a| > 1 at the lift), "auto" and the look-ahead, 2^27, one H200, two rounds.
cd "$(dirname "$0")/../../.."
export DISTSCAN_PROGRESS=0
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader; date -u
tree() { if [ $1 = G ]; then echo $PWD; else echo $PWD/s46/$1; fi; }
SCANS="recurrence f32,recurrence rev f32,recurrence seg f32,recurrence f32 inf"
for t in G A AD; do for alg in auto lookahead; do
  PYTHONPATH=$(tree $t) python3 benchmarks/ab_scans.py warm --log2n 20 --reps 1 --scans "$SCANS" --algorithm $alg > /tmp/warm-$t-$alg.txt 2>&1 &
done; done; wait; tail -qn 1 /tmp/warm-*.txt; date -u
for r in 1 2; do for t in G A AD; do for alg in auto lookahead; do
  PYTHONPATH=$(tree $t) python3 benchmarks/ab_scans.py $t-$alg --log2n 27 --reps 9 --scans "$SCANS" --algorithm $alg
done; done; done
date -u
