#!/bin/bash
# nvidia-h200-x2, the sixty-second session, call 4 (carry ["s62N", "s58mp"]): next/first-flag.patch
# (s62N: distscan/ of 59f339a with the patch, and bench_exchange.py) against M = the tree (421fb5fd,
# record BX's), CPU backend, MPICH 5.0.2: 32 ranks, 1000 elements, four runs each alternating; then
# 2 and 8 ranks at 2^20 rows a rank with sparse flags (bigseg.py), both trees, twice.
# To run it again (s62N is an ignored folder, gone with the session), in the repository root at main:
#   git worktree add /tmp/p HEAD && git -C /tmp/p apply $PWD/benchmarks/logs/2026-11-30-s62/next/first-flag.patch
#   mkdir -p s62N/benchmarks && cp -r /tmp/p/distscan s62N/ && cp benchmarks/bench_exchange.py s62N/benchmarks/
#   echo /s62N/ >> .git/info/exclude        (s58mp: the MPICH wheel's bin/ and lib/, as the fifty-eighth session)
# and add a run with `--sizes 1048576 --flag-density 0` for each tree.
cd "$(dirname "$0")/../../../.."
export PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0
date -u
E=/tmp/ab; mkdir -p $E
chmod +x s58mp/bin/*
M=$PWD/s58mp/bin/mpiexec
export MPI4PY_LIBMPI=$PWD/s58mp/lib/libmpi.so.12
for round in 1 2 3 4; do
  order="M P"; [ $((round % 2)) = 0 ] && order="P M"
  for t in $order; do
    T=$PWD; [ $t = P ] && T=$PWD/s62N
    timeout 90 $M -bind-to core -n 32 python3 $T/benchmarks/bench_exchange.py $E/$t-$round.json --sizes 1000 > $E/$t-$round.txt 2>&1
    echo "== $t round $round rc $? $(date -u +%T)"; grep -v Warning $E/$t-$round.txt | tail -3
  done
done
for k in 2 8; do for round in 1 2; do for t in M P; do
  T=$PWD; [ $t = P ] && T=$PWD/s62N
  echo "== $t $k ranks 2^20 round $round"
  timeout 60 $M -bind-to core -n $k python3 benchmarks/logs/2026-11-30-s62/next/bigseg.py $T 2>&1 | grep density
done; done; done
unset MPI4PY_LIBMPI
python3 - <<'PY'
import json, glob, statistics
rows = {}
for f in sorted(glob.glob("/tmp/ab/*.json")):
    rows.setdefault(f.split("/")[-1].split("-")[0], []).append(json.load(open(f))["rows"][0])
print("| tree | runs | sum us (x) | segmented sum us (x) | recurrence us (x) |")
print("|---|---|---|---|---|")
for t in ("M", "P"):
    rs = rows[t]
    cell = lambda k: f"{statistics.median(r[k + '_us'] for r in rs):.1f} ({statistics.median(r[k + '/own'] for r in rs):.2f}x; {min(r[k + '/own'] for r in rs):.2f}-{max(r[k + '/own'] for r in rs):.2f})"
    print(f"| {t} | {len(rs)} | {cell('sum')} | {cell('segmented sum')} | {cell('recurrence')} |")
PY
tar -C /tmp -czf $OUT/ab.tgz ab
date -u
