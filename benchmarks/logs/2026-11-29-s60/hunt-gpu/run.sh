#!/bin/bash
# Session 60: the GPU fuzz harness at 1, 2 and 3 ranks (all ranks share the GPU(s): rank r on GPU
# r % count), 58 s of cases each; at most 3 x 90 = 270 s with start-up, hangs and kills included.
#   bash benchmarks/logs/2026-11-29-s60/hunt-gpu/run.sh        (from anywhere; PY=python3, WARM=auto, KS="1 2 3")
# Beside the runs, WARM processes (default: cores - 4, at most 12; WARM=0: none) compile the kernel
# modules of the runs' cases ahead of them (fuzz_gpu.py --warm: no MPI), into CuPy's disk cache; they
# are ended with the last run.
# Full logs: $OUT/fuzz-K.txt and $OUT/warm.txt (or in /tmp without $OUT).  On stdout: the START
# line, the first FAIL lines, WATCHDOG lines with their stacks, the SUMMARY line, the exit status.
# A case runs under a watchdog (fuzz_gpu.py: --case-timeout 60 s, and none past --seconds + 20),
# the whole job under `timeout 85`: a hang shows as "WATCHDOG ... case i", or as rc=124 with the
# last "CASE i START" printed below.  Reproduce a failure with its line's "repro:" arguments.
cd "$(dirname "$0")/../../../.." || exit 1
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0 NCCL_NVLS_ENABLE=0
PY=${PY:-python3}
H=benchmarks/logs/2026-11-29-s60/hunt-gpu
LOGDIR=${OUT:-/tmp}
if mpirun --version 2>&1 | grep -qi "open mpi\|open-mpi\|openrte"; then
  MPIFLAGS="--allow-run-as-root --oversubscribe --bind-to none"
else
  MPIFLAGS=""  # MPICH's hydra: oversubscribes by itself, no root check
fi
date -u; nvidia-smi -L 2>/dev/null
CORES=$(nproc)
if [ -z "$WARM" ]; then WARM=$((CORES > 8 ? CORES - 4 : 0)); [ "$WARM" -gt 12 ] && WARM=12; fi
WPID=
if [ "$WARM" -gt 0 ] && command -v setsid > /dev/null; then
  # its own process group, so that the warmers are ended together with it
  setsid $PY $H/fuzz_gpu.py --warm "$WARM" --warm-plan "$(for K in ${KS:-1 2 3}; do printf "%s:%s," $((60 + K)) $K; done | sed "s/,$//")" --warm-seconds 250 \
      > "$LOGDIR/warm.txt" 2>&1 &
  WPID=$!
  echo "warming with $WARM processes (pid $WPID) beside the runs"
fi
for K in ${KS:-1 2 3}; do
  LOG=$LOGDIR/fuzz-$K.txt
  timeout -k 5 85 mpirun $MPIFLAGS -n $K $PY $H/fuzz_gpu.py --seed $((60 + K)) --seconds 58 > "$LOG" 2>&1
  rc=$?
  grep -m1 "^START" "$LOG" | cut -c1-1500
  grep "^FAIL" "$LOG" | head -12 | cut -c1-1500
  nfail=$(grep -c "^FAIL" "$LOG")
  [ "$nfail" -gt 12 ] && echo "... $nfail FAIL lines in all: $LOG"
  grep "^HARNESS-EXCEPTION" "$LOG" | head -5 | cut -c1-800
  # the watchdog's lines and stacks (NumPy's RuntimeWarning lines left out)
  awk '/^WATCHDOG/{w=1} w && !/Warning: / && !/^CASE /{print; if (++n > 80) exit}' "$LOG"
  grep "^SUMMARY" "$LOG" | cut -c1-3000
  echo "last case started: $(grep '^CASE .* START' "$LOG" | tail -1)"
  echo "K=$K rc=$rc ($(wc -l < "$LOG") lines in $LOG)"
done
if [ -n "$WPID" ]; then
  kill -TERM -- "-$WPID" 2> /dev/null
  sleep 2
  grep "^WARM" "$LOGDIR/warm.txt" | sort | uniq -c | sort -rn | head -20 | cut -c1-300
fi
date -u
