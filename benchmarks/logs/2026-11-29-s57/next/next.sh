#!/bin/bash
# First GPU call of the next session (one H200, about 5-6 minutes on a fresh machine): the
# compensated float32 sum's kept thread prefixes, for issue 30's compensated row (1.155-1.164x the
# plain sum on the H200, target <= 1.15x).  Two patches, each against main at 6cc402f or later
# (neither touches files the other's trees need):
#   N  next/thread-prefixes.patch: an array of every tile's slot (64 MB at 2^27 float32 items,
#      512 MB at 2^30, written back to DRAM: ~6 % more bytes), words tagged by the launch's epoch.
#   R  next/thread-prefix-ring.patch: a ring of 4 leads of slots (4.4 MB at the H200's lead of
#      551 tiles: stays in L2), words tagged by the epoch's low 16 bits and the generation
#      (tile / ring); every launch whose epoch ends a period of 2^16 counts its blocks out and its
#      last block zeroes the ring (TileState::retire, for every kernel).  Preferred if it is as fast.
# Both: the look-back's reducing block publishes each thread's exclusive prefix (2 KB a tile); the
# scanning block takes them where all its threads' are valid (__syncthreads_and), else scans its
# runs again: the same bits, one run pass an item fewer (kernels/agent/agent_scan.cuh,
# ThreadPrefixes).  Built and checked with nvcc 13.0 on the CPU host (sm_90: 79-80 registers
# against 72; 4 blocks an SM still fit); tests/backends pass on both; NEVER run on a GPU.
# Before the call, from the repository root:
#   rm -rf s58M s58N s58R && for t in M N R; do mkdir s58$t && git archive HEAD distscan kernels benchmarks tests | tar -x -C s58$t; done \
#     && (cd s58N && patch -p1 < ../benchmarks/logs/2026-11-29-s57/next/thread-prefixes.patch) \
#     && (cd s58R && patch -p1 < ../benchmarks/logs/2026-11-29-s57/next/thread-prefix-ring.patch)
# then run it with carry ["s58M", "s58N", "s58R"] (s5*/ is ignored).  If a patch's test passes and it
# is faster: apply it to the working tree, write docs/algorithms.md (the ring, its memory) and
# RESULTS.md, run the GPU suite (two calls), commit.  Worth a try if N helps but R does not:
# discard.global.L2 on N's words after the scan reads them (no write-back).
cd "$(dirname "$0")/../../../.."
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader; date -u
# The patches' bits test and the compensated sums' accuracy check, called directly: under pytest,
# test_operators.py's module fixture would first compile some hundred modules (minutes on a fresh
# machine, for each tree).
for t in R N; do
  echo "== test $t"
  (cd s58$t && PYTHONPATH=$PWD timeout 200 python3 -c "
import numpy as np, pytest
from tests.gpu import test_operators as t
t.test_the_compensated_sum_s_kept_thread_prefixes_give_the_same_bits(np.random.default_rng(57), pytest.MonkeyPatch())
print('bits: the same as without a lead')
for n in (1 << 22, (1 << 24) + 5):
    t._compensated_checked(n, np.random.default_rng(n))
print('accuracy: correctly rounded or within the bound')" 2>&1 | grep -v Warning | tail -6)
  date -u
done
for round in 1 2; do for t in M N R; do
  (cd s58$t && PYTHONPATH=$PWD timeout 100 python3 benchmarks/ab_compensated.py $t-$round --reps 15 2>&1 | grep -v Warning)
done; done
date -u
