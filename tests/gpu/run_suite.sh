#!/usr/bin/env bash
# The whole GPU suite in one call of under 600 s: seven pytest runs at once on the one GPU (or on
# all visible GPUs: the multi-GPU tests pick theirs), then the two tests that allocate past 2^31
# items alone.  Four runs beside those two ran an H100 (80 GB) out of memory (2026-11-23,
# benchmarks/logs/gpu-tests.txt), which the four alone should not (not yet tried).  With every
# kernel to compile (2026-11-25, aa1e5da) and test_operators.py in one run, that run took 498 s
# of the H200's 522 s and did not finish in 534 s on the H100: it is three runs now (below).
#
#   bash tests/gpu/run_suite.sh OUT_DIR      (from the repository root; OUT_DIR gets one log per run)
#   RUNS="operators-cpu big" bash tests/gpu/run_suite.sh OUT_DIR     (some runs only)
#
# Prints the sha1 of distscan/ and kernels/ (what benchmarks/logs/gpu-tests.txt records) and the
# pytest summary of every run; exits non-zero if any run failed.  Through the device tool, keep
# OUT_DIR outside $OUT (it brings back 8 files at most: the eight runs' logs and anything else there
# were dropped, 2026-11-29) and gather the logs into one file of $OUT, as
# benchmarks/logs/2026-11-29-s54/suite/live.txt was made:
#   bash tests/gpu/run_suite.sh /tmp/s > $OUT/suite.txt; for f in /tmp/s/suite-*.txt; do echo "=== $f"; tail -c 3000 $f; done > $OUT/live.txt
set -u
out=${1:?usage: bash tests/gpu/run_suite.sh OUT_DIR}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0 PYTHONPATH=${PYTHONPATH:-$PWD}
date -u
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
(cd distscan && find . ../kernels -type f \( -name '*.py' -o -name '*.cu*' \) | LC_ALL=C sort | xargs sha1sum | sha1sum)
P="python3 -m pytest -q -p no:cacheprovider -rfEs --timeout 500 --durations=8"  # the slowest tests: where a run's time goes
G=tests/gpu
BIG="past_2_to_the_31_items or look_ahead_sizes_of_4_byte_items"
RUNS=${RUNS:-"kernels operators-cpu operators-starts operators-rest command mpi api big"}  # RUNS="..." reruns some
run() {  # name, then pytest's arguments
    local name=$1; shift
    case " $RUNS " in *" $name "*) ;; *) return 0 ;; esac
    timeout 560 $P "$@" > "$out/suite-$name.txt" 2>&1
    echo "exit $?" >> "$out/suite-$name.txt"
}
# With two GPUs or more visible (and CUDA_VISIBLE_DEVICES unset), the kernels and operators-starts
# runs take the last GPU alone: beside the seven others on GPU 0, their 16 precompile workers
# (0.5 GB each) and two runs of 30-37 GB ran an H100 out of memory (2026-11-26, record Z of
# benchmarks/logs/gpu-tests.txt).  The multi-GPU tests of the other runs still see every GPU.
SPARE=""
if [ -z "${CUDA_VISIBLE_DEVICES+set}" ]; then
    ngpu=$(nvidia-smi -L 2>/dev/null | grep -c "^GPU")
    [ "$ngpu" -ge 2 ] && SPARE=$((ngpu - 1))
fi
run_spare() {  # run, on the spare GPU where there is one
    if [ -n "$SPARE" ]; then (export CUDA_VISIBLE_DEVICES=$SPARE; run "$@"); else run "$@"; fi
}
run_spare kernels $G/test_kernels_lead.py $G/test_kernels_lookahead.py $G/test_kernels_lookback.py &
# test_operators.py in three runs: as one it took 534 s and more on an H100 with every kernel to
# compile (2026-11-25, aa1e5da); as two, "matches_the_cpu" 174 s and the rest 508 s alone.  The
# segment-starts test compiles some 64 kernels (four operators, both directions, exclusive and
# inclusive, two algorithms, two dtypes): its own run (this split not yet timed).  The rest took
# 535 s of its 560 on 2 H200s (2026-11-26, record AE) and "matches_the_cpu" 212 s, so the
# bit-for-bit product and float16 tests (some 150 s there) run beside "matches_the_cpu".
# The look-ahead's flag-byte test (RUN_BITS, 2026-11-27) compiles eight modules of its own: here, beside
# the starts test, rather than in operators-rest (441 s of its 560 on 2 H200s, record AX).
# The ring test (reverse segmented runs by their bits too, 2026-11-28) joins them: operators-rest
# took 491 s of its 560 on 2 H100s (record AY), the starts run 236 s.
STARTS="segment_starts_at_warp_and_tile_boundaries or any_nonzero_flag_byte or ring_stages_flags"
CPU="matches_the_cpu or are_the_cpus_bit_for_bit or float16_state_scans"
run operators-cpu $G/test_operators.py -k "not ($BIG) and ($CPU)" &
run_spare operators-starts $G/test_operators.py -k "$STARTS" &
run operators-rest $G/test_operators.py -k "not ($BIG) and not ($CPU) and not ($STARTS)" &
run command $G/test_columns.py $G/test_one_coefficient.py $G/test_command.py $G/test_kinds.py $G/test_promises.py $G/test_ranks_differ.py $G/test_seeded_scans.py &
run mpi $G/test_mpi.py &  # mpirun jobs, several ranks sharing one GPU where only one is visible
run api $G/test_compile_cache.py $G/test_state_columns.py $G/test_scan.py $G/test_segment_carries.py $G/test_hotpath.py $G/test_launches.py $G/test_algorithms.py $G/test_numpy_semantics.py $G/test_recurrence_initial.py &
wait
run big $G/test_operators.py -k "$BIG"
date -u
status=0
for f in "$out"/suite-*.txt; do
    echo "== $f"
    grep -E "passed|failed|FAILED|ERROR|SKIPPED|exit" "$f" | tail -12
    grep -q "^exit 0$" "$f" || status=1
done
exit $status
