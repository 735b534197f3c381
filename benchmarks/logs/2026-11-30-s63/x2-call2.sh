#!/bin/bash
# nvidia-h200-x2, the sixty-third session, call 2 (carry ["s58mp"]): the second half of the GPU suite
# at the tree (tests/gpu/run_suite.sh), the tests of arrays on another GPU (they need two visible),
# then issue 30's exchange table at the tree on the 32-core host, CPU backend (bench_exchange.py at
# 2, 4, 8, 16 and 32 ranks, one a core, 1000 and 2^20 elements a rank, MPICH 5.0.2), while time is left.
cd "$(dirname "$0")/../../.."
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0
T0=$(date +%s)
mkdir -p /tmp/s2
RUNS="api operators-rest mpi big" timeout 470 bash tests/gpu/run_suite.sh /tmp/s2 > $OUT/suite2.txt 2>&1
for f in /tmp/s2/suite-*.txt; do echo "=== $f"; tail -c 3000 $f; done > $OUT/live2.txt
cat $OUT/suite2.txt
PYTHONPATH=$PWD timeout 90 python3 -m pytest -q -p no:cacheprovider -rfEs tests/gpu/test_kinds.py tests/gpu/test_hotpath.py \
  -k "arrays_on_another_device or arrays_on_another_gpu or another_device_s_input or go_to_the_device_of_a_gpu_input" \
  > $OUT/other-gpu.txt 2>&1
tail -3 $OUT/other-gpu.txt
date -u; echo "GPU part done after $(( $(date +%s) - T0 )) s"
E=/tmp/table; mkdir -p $E
chmod +x s58mp/bin/*
M=$PWD/s58mp/bin/mpiexec
export MPI4PY_LIBMPI=$PWD/s58mp/lib/libmpi.so.12
for n in 2 4 8 16 32; do
  left=$(( 590 - ($(date +%s) - T0) )); [ $left -lt 20 ] && break
  timeout $(( left < 60 ? left - 5 : 60 )) $M -bind-to core -n $n python3 benchmarks/bench_exchange.py $E/ex-$n.json --sizes 1000,1048576 > $E/ex-$n.txt 2>&1
  echo "== $n ranks rc $? $(date -u +%T)"; grep -v Warning $E/ex-$n.txt | tail -8
done
unset MPI4PY_LIBMPI
python3 - <<'PY'
import json, glob
print("| ranks | method | n a rank | bare | sum (x bare) | bare segmented | segmented sum (x own) | bare recurrence | recurrence (x own) |")
print("|---|---|---|---|---|---|---|---|---|")
for f in sorted(glob.glob("/tmp/table/ex-*.json"), key=lambda f: int(f.split("-")[1].split(".")[0])):
    for r in json.load(open(f))["rows"]:
        print(f"| {r['ranks']} | {r['method']} | {r['n_local']} | {r['bare_us']:.1f} | {r['sum_us']:.1f} ({r['sum/own']:.2f}x) | "
              f"{r['bare segmented_us']:.1f} | {r['segmented sum_us']:.1f} ({r['segmented sum/own']:.2f}x) | "
              f"{r['bare recurrence_us']:.1f} | {r['recurrence_us']:.1f} ({r['recurrence/own']:.2f}x) |")
PY
tar -C /tmp -czf $OUT/table.tgz table
date -u
