#!/bin/bash
# nvidia-h200-x2, the sixty-second session, call 1 (carry ["s62M", "s58mp"]):
# (1) the exchange at 32 ranks, one a core, under MPICH 5.0.2 (s58mp: the developer venv's wheel,
#     as the fifty-eighth session ran it): M = s62M (distscan/ at 59f339a, with this
#     bench_exchange.py) against N = the tree (e71fa8f: the CPU fused calls' compiled flag search
#     and record field views), alternating, six rounds each;
# (2) the first half of the GPU suite (tests/gpu/run_suite.sh) at the tree.
cd "$(dirname "$0")/../../.."
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0
date -u; nproc; lscpu | grep "Model name"; nvidia-smi -L
E=/tmp/exch; mkdir -p $E
chmod +x s58mp/bin/*
M=$PWD/s58mp/bin/mpiexec
export MPI4PY_LIBMPI=$PWD/s58mp/lib/libmpi.so.12
python3 -c "from mpi4py import MPI; print(MPI.Get_library_version().splitlines()[0])"
for round in 1 2 3 4 5 6; do
  order="M N"; [ $((round % 2)) = 0 ] && order="N M"
  for t in $order; do
    T=$PWD; [ $t = M ] && T=$PWD/s62M
    timeout 90 $M -bind-to core -n 32 python3 $T/benchmarks/bench_exchange.py $E/$t-$round.json --sizes 1000 > $E/$t-$round.txt 2>&1
    echo "== $t round $round rc $? $(date -u +%T)"; grep -v Warning $E/$t-$round.txt | tail -4
  done
done
unset MPI4PY_LIBMPI
python3 - <<'PY'
import json, glob, statistics
rows = {}
for f in sorted(glob.glob("/tmp/exch/*.json")):
    t = f.split("/")[-1].split("-")[0]
    r = json.load(open(f))["rows"][0]
    rows.setdefault(t, []).append(r)
print("32 ranks, 1000 elements, median over runs (each the median of 7 rounds of 300 calls); x own pipeline")
print("| tree | runs | sum us (x) | segmented sum us (x) | recurrence us (x) |")
print("|---|---|---|---|---|")
for t in ("M", "N"):
    rs = rows.get(t, [])
    if not rs:
        continue
    cell = lambda k: f"{statistics.median(r[k + '_us'] for r in rs):.1f} ({statistics.median(r[k + '/own'] for r in rs):.2f}x; {min(r[k + '/own'] for r in rs):.2f}-{max(r[k + '/own'] for r in rs):.2f})"
    print(f"| {t} | {len(rs)} | {cell('sum')} | {cell('segmented sum')} | {cell('recurrence')} |")
PY
tar -C /tmp -czf $OUT/exch.tgz exch
mkdir -p /tmp/s
RUNS="kernels operators-starts operators-cpu command" timeout 440 bash tests/gpu/run_suite.sh /tmp/s > $OUT/suite1.txt 2>&1
for f in /tmp/s/suite-*.txt; do echo "=== $f"; tail -c 3000 $f; done > $OUT/live1.txt
cat $OUT/suite1.txt
date -u
