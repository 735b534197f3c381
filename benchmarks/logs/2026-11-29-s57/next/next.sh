#!/bin/bash
# First GPU call of the next session (one H200, about 4-5 minutes on a fresh machine): the
# compensated float32 sum's thread prefixes (next/thread-prefixes.patch; issue 30's compensated
# row, 1.155-1.164x the plain sum on the H200, target <= 1.15x).
#   The look-back with its reduction lead scans each tile's runs three times: the reduction, the
#   scan's block scan again, the store.  With the patch the reducing block publishes each thread's
#   exclusive prefix as status words (2 KB a tile: (epoch << 32) | chunk, each written once a launch,
#   so valid without ordering), and the scanning block takes them where all its threads' are valid
#   (__syncthreads_and), else scans as before: the same bits (kernels/agent/agent_scan.cuh,
#   ThreadPrefixes).  The words live in the stream's TileScratch (scratch.prepare's thread_words):
#   64 MB at 2^27 float32 items, kept like the status words.  Built and checked with nvcc 13.0
#   here (sm_90: 79 registers against 72, 4 blocks an SM still fit); NOT yet run on a GPU.
# Before the call, from the repository root:
#   rm -rf s58N s58M && mkdir s58N s58M && git archive HEAD distscan kernels benchmarks tests | tar -x -C s58M \
#     && git archive HEAD distscan kernels benchmarks tests | tar -x -C s58N \
#     && (cd s58N && patch -p1 < ../benchmarks/logs/2026-11-29-s57/next/thread-prefixes.patch)
# then run it with carry ["s58N", "s58M"] (s5*/ is ignored).  If the test passes and N is faster:
# apply the patch to the working tree, run the GPU suite (two calls), commit; RESULTS.md gets the
# table either way.  Also worth a try if N helps but not enough: discard.global.L2 on the words
# after the scan reads them (no write-back of the 2 KB a tile: ~6 % of the DRAM bytes).
cd "$(dirname "$0")/../../../.."
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader; date -u
(cd s58N && PYTHONPATH=$PWD timeout 240 python3 -m pytest -q -p no:cacheprovider -x tests/gpu/test_operators.py \
    -k "kept_thread_prefixes or compensated" 2>&1 | tail -5)
date -u
for round in 1 2; do for t in M N; do
  (cd s58$t && PYTHONPATH=$PWD timeout 100 python3 benchmarks/ab_compensated.py $t-$round --reps 15 2>&1 | grep -v Warning)
done; done
date -u
