#!/bin/bash
# The exchange at 32 ranks under MPICH from PyPI: 62206b5 (the forty-first session's start)'s distscan (s41/old) against this tree, alternating.
date -u; nproc; lscpu | grep "Model name"; nvidia-smi -L
python3 -c "import numba; print('numba', numba.__version__)"
python3 -m pip install -q --no-index --no-deps --prefix /tmp/mp .whl/*.whl
SP=$(echo /tmp/mp/lib/python3*/site-packages)
export MPI4PY_LIBMPI=$(find /tmp/mp -name "libmpi.so.12*" | head -1)
MPIEXEC=/tmp/mp/bin/mpiexec
ROOT=$PWD; mkdir -p /tmp/exj
PYTHONPATH=$SP python3 -c "from mpi4py import MPI; print(MPI.Get_library_version().splitlines()[0])"
for round in $(seq 1 ${ROUNDS:-2}); do
  for t in s41/old .; do
    name=$( [ $t = . ] && echo new || echo old )
    echo "== $name round $round $(date -u +%T)"
    (cd $ROOT/$t && PYTHONPATH=$PWD:$SP timeout 240 $MPIEXEC -bind-to core -n 32 python3 benchmarks/bench_exchange.py /tmp/exj/ex-$name-$round.json --sizes 1000 2>&1 | tail -5)
  done
done
for t in s41/old . ; do
  echo "== spread $t $(date -u +%T)"
  (cd $ROOT/$t && PYTHONPATH=$PWD:$SP timeout 120 $MPIEXEC -bind-to core -n 32 python3 benchmarks/probe_call_spread.py --calls 3000 2>&1 | tail -6)
done
date -u
tar czf $OUT/exj.tgz -C /tmp exj
