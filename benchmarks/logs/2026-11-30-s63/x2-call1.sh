#!/bin/bash
# nvidia-h200-x2, the sixty-third session, call 1 (carry ["s62M", "s58mp"]), CPU backend first, MPICH
# 5.0.2 (s58mp: the developer venv's wheel), one rank a core.  M = s62M (distscan/ of 59f339a: record
# BX's tree, with this bench_exchange.py) against P = the tree (the s62 patch first-flag.patch, the
# short path of Kind.aux for segment flags):
# (1) 32 ranks, 1000 elements a rank, four runs each, alternating;
# (2) 8 ranks, 2^20 rows a rank, parts without a flag (--flag-density 0), two runs each, alternating;
# (3) 2 and 8 ranks, 2^20 rows, flags 0, 1e-6, 1e-2 (s62's next/bigseg.py), both trees;
# then (4) the first half of the GPU suite (tests/gpu/run_suite.sh) at the tree.
cd "$(dirname "$0")/../../.."
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0
T0=$(date +%s)
date -u; nproc; lscpu | grep "Model name"; nvidia-smi -L
E=/tmp/exch; mkdir -p $E
chmod +x s58mp/bin/*
M=$PWD/s58mp/bin/mpiexec
export MPI4PY_LIBMPI=$PWD/s58mp/lib/libmpi.so.12
python3 -c "from mpi4py import MPI; print(MPI.Get_library_version().splitlines()[0])"
tree() { if [ $1 = M ]; then echo $PWD/s62M; else echo $PWD; fi; }
for round in 1 2 3 4; do
  order="M P"; [ $((round % 2)) = 0 ] && order="P M"
  for t in $order; do
    timeout 60 $M -bind-to core -n 32 python3 $(tree $t)/benchmarks/bench_exchange.py $E/$t-$round.json --sizes 1000 > $E/$t-$round.txt 2>&1
    echo "== $t 32 ranks 1000 round $round rc $? $(date -u +%T)"; grep -v Warning $E/$t-$round.txt | tail -3
  done
done
for round in 1 2; do for t in M P; do
  timeout 60 $M -bind-to core -n 8 python3 $(tree $t)/benchmarks/bench_exchange.py $E/big0-$t-$round.json --sizes 1048576 --flag-density 0 > $E/big0-$t-$round.txt 2>&1
  echo "== $t 8 ranks 2^20 no flag round $round rc $? $(date -u +%T)"; grep -v Warning $E/big0-$t-$round.txt | tail -3
done; done
for k in 2 8; do for t in M P; do
  echo "== $t $k ranks 2^20 (bigseg)"
  timeout 40 $M -bind-to core -n $k python3 benchmarks/logs/2026-11-30-s62/next/bigseg.py $(tree $t) 2>&1 | grep density
done; done
unset MPI4PY_LIBMPI
python3 - <<'PY'
import json, glob, statistics
rows = {}
for f in sorted(glob.glob("/tmp/exch/[MP]-*.json")):
    rows.setdefault(f.split("/")[-1].split("-")[0], []).append(json.load(open(f))["rows"][0])
print("32 ranks, 1000 elements, median over runs (each the median of 7 rounds of 300 calls); x own pipeline")
print("| tree | runs | sum us (x) | segmented sum us (x) | recurrence us (x) |")
print("|---|---|---|---|---|")
for t in ("M", "P"):
    rs = rows.get(t, [])
    if rs:
        cell = lambda k: f"{statistics.median(r[k + '_us'] for r in rs):.1f} ({statistics.median(r[k + '/own'] for r in rs):.2f}x; {min(r[k + '/own'] for r in rs):.2f}-{max(r[k + '/own'] for r in rs):.2f})"
        print(f"| {t} | {len(rs)} | {cell('sum')} | {cell('segmented sum')} | {cell('recurrence')} |")
PY
tar -C /tmp -czf $OUT/exch.tgz exch
echo "CPU part done after $(( $(date +%s) - T0 )) s"
mkdir -p /tmp/s
RUNS="kernels operators-starts operators-cpu command" timeout $(( 585 - ($(date +%s) - T0) )) bash tests/gpu/run_suite.sh /tmp/s > $OUT/suite1.txt 2>&1
for f in /tmp/s/suite-*.txt; do echo "=== $f"; tail -c 3000 $f; done > $OUT/live1.txt
cat $OUT/suite1.txt
date -u
