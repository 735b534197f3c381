#!/bin/bash
# nvidia-h200-x2, the sixty-second session, call 3 (carry ["s58mp"]): issue 30's exchange table at
# the final tree (4d5beff6) on the 32-core host, CPU backend: bench_exchange.py at 2, 4, 8, 16 and 32
# ranks, one a core, 1000 and 2^20 elements a rank, under MPICH 5.0.2 (s58mp: the developer venv's
# wheel); then 32 ranks with recursive doubling forced (DISTSCAN_DOUBLING_RANKS=1), 1000 elements.
cd "$(dirname "$0")/../../.."
export PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0
date -u; nproc; lscpu | grep "Model name"
E=/tmp/table; mkdir -p $E
chmod +x s58mp/bin/*
M=$PWD/s58mp/bin/mpiexec
export MPI4PY_LIBMPI=$PWD/s58mp/lib/libmpi.so.12
python3 -c "from mpi4py import MPI; print(MPI.Get_library_version().splitlines()[0])"
for n in 2 4 8 16 32; do
  timeout 150 $M -bind-to core -n $n python3 benchmarks/bench_exchange.py $E/ex-$n.json --sizes 1000,1048576 > $E/ex-$n.txt 2>&1
  echo "== $n ranks rc $? $(date -u +%T)"; grep -v Warning $E/ex-$n.txt | tail -8
done
DISTSCAN_DOUBLING_RANKS=1 timeout 90 $M -bind-to core -n 32 python3 benchmarks/bench_exchange.py $E/ex-32-doubling.json --sizes 1000 > $E/ex-32-doubling.txt 2>&1
echo "== 32 ranks doubling rc $? $(date -u +%T)"; grep -v Warning $E/ex-32-doubling.txt | tail -4
unset MPI4PY_LIBMPI
python3 - <<'PY'
import json, glob
print("| ranks | method | n a rank | bare | sum (x bare) | bare segmented | segmented sum (x own) | bare recurrence | recurrence (x own) |")
print("|---|---|---|---|---|---|---|---|---|")
files = sorted(glob.glob("/tmp/table/ex-*.json"), key=lambda f: (int(f.split("-")[1].split(".")[0]), "doubling" in f))
for f in files:
    for r in json.load(open(f))["rows"]:
        print(f"| {r['ranks']} | {r['method']} | {r['n_local']} | {r['bare_us']:.1f} | {r['sum_us']:.1f} ({r['sum/own']:.2f}x) | "
              f"{r['bare segmented_us']:.1f} | {r['segmented sum_us']:.1f} ({r['segmented sum/own']:.2f}x) | "
              f"{r['bare recurrence_us']:.1f} | {r['recurrence_us']:.1f} ({r['recurrence/own']:.2f}x) |")
PY
tar -C /tmp -czf $OUT/table.tgz table
date -u
