#!/bin/bash
# nvidia-h200-x2, the fifty-eighth session: issue 30's one-GPU table on this host (GPU 0), then the
# exchange at 32 ranks (one a core) under MPICH 5.0.2 (the product's default; its files from the
# developer venv's wheel, carried as s58mp/: bin/ and lib/ as the wheel installs them) and once
# under the host's Open MPI.  carry [".whl", "s58mp"].  Tree: main at the session's start (sha1 565aa87c).
cd "$(dirname "$0")/../../.."
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0
date -u; nproc; lscpu | grep "Model name"; nvidia-smi -L
mkdir -p $OUT/table $OUT/exch
CUDA_VISIBLE_DEVICES=0 OUT=$OUT/table bash benchmarks/logs/2026-11-29-s57/table.sh
python3 -c "import numba, mpi4py; print('numba', numba.__version__, 'mpi4py', mpi4py.__version__, mpi4py.__file__)"
chmod +x s58mp/bin/*
export MPI4PY_LIBMPI=$PWD/s58mp/lib/libmpi.so.12
M=$PWD/s58mp/bin/mpiexec
PYTHONPATH=$PWD python3 -c "from mpi4py import MPI; print(MPI.Get_library_version().splitlines()[0])"
$M -n 2 python3 -c "from mpi4py import MPI; c=MPI.COMM_WORLD; print(c.rank, c.size, MPI.Get_library_version().split()[0:3])"
for round in 1 2 3 4; do
  echo "== mpich 32 round $round $(date -u +%T)"
  PYTHONPATH=$PWD timeout 150 $M -bind-to core -n 32 python3 benchmarks/bench_exchange.py $OUT/exch/ex-mpich-32-$round.json --sizes 1000 > $OUT/exch/ex-mpich-32-$round.txt 2>&1
  echo "rc $?"; grep -v Warning $OUT/exch/ex-mpich-32-$round.txt | tail -7
done
echo "== spread mpich 32 $(date -u +%T)"
PYTHONPATH=$PWD timeout 100 $M -bind-to core -n 32 python3 benchmarks/probe_call_spread.py --calls 3000 2>&1 | tail -8
unset MPI4PY_LIBMPI
echo "== openmpi 32 $(date -u +%T)"
PYTHONPATH=$PWD timeout 150 mpirun --allow-run-as-root --bind-to core -n 32 python3 benchmarks/bench_exchange.py $OUT/exch/ex-ompi-32.json --sizes 1000 > $OUT/exch/ex-ompi-32.txt 2>&1
echo "rc $?"; grep -v Warning $OUT/exch/ex-ompi-32.txt | tail -7
date -u
