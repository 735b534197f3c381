#!/bin/bash
# First GPU call of the next session (one H200, about 3 minutes): is the compensated complex128 sum
# under "auto" slower since 54ad7eb?  Its look-ahead (the kernel "auto" takes from 2^21 items) now
# keeps the RESCAN slots, 29 KB of static shared memory, and fits one block an SM where two did.
#   N: the tree as committed;  G: the same with c128-gate.patch (RESCAN for run states of at most
#   16 bytes: complex128's old path, bit for bit the same results).
# Before the call, from the repository root:
#   rm -rf s57G && mkdir s57G && git archive HEAD distscan kernels benchmarks | tar -x -C s57G \
#     && (cd s57G && patch -p1 < ../benchmarks/logs/2026-11-29-s56/next/c128-gate.patch)
# then run it with carry ["s57G"] (s5*/ is ignored).  If G is faster: apply the patch, run the GPU
# suite, commit.  Either way, RESULTS.md gets the table.
cd "$(dirname "$0")/../../../.."
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader; date -u
for round in 1 2; do for t in N G; do
  if [ $t = N ]; then P=$PWD; else P=$PWD/s57G; fi
  echo "== $t round $round"
  (cd $P && PYTHONPATH=$P timeout 150 python3 benchmarks/sweep_costly_tiles.py --scans "compensated c128" \
      --shapes '[]' --leads auto --lookahead '[]' --log2n 26 --reps 9 2>&1 | grep -v Warning | tail -5)
done; done
date -u
