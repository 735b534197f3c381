#!/bin/bash
# The fifty-fourth session's experiments on one H200 after record BM (tree 26b46bb9), as run, one
# device call each (the lines below; logs beside this file):
#   ceiling-1.txt:  PYTHONPATH=$PWD python3 benchmarks/probe_affine_ceiling.py OUT.json --reps 9
#   ceiling-2.txt:  ... --reps 9 --shapes 128x17,128x25,256x17,128x33            (with the service warp)
#   ceiling-3.txt:  ... --reps 9 --shapes 128x17,128x33,256x17 --sleeps 64,256,1024
#   gate.txt:       the look-back ("auto") against the look-ahead for the state scans auto keeps on the
#                   look-back, 2^24, 2^27, 2^29:
S="recurrence f32,recurrence rev f32,recurrence c64,recurrence rev c64,recurrence seg f32,segmented sum i64,segmented rev sum f32"
for l in 24 27 29; do for alg in auto lookahead; do
  PYTHONPATH=$PWD timeout 70 python3 benchmarks/ab_scans.py $alg-2^$l --log2n $l --reps 9 --scans "$S" --algorithm $alg 2>&1 | grep -v Warning
done; done
