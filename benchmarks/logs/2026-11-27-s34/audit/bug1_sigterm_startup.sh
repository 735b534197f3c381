#!/bin/bash
# SIGTERM to mpiexec while the ranks start (NumPy/MPI loading): no line on stderr.
# usage: PYTHONPATH=/work/aud34 bash bug1_sigterm_startup.sh   (run in a folder holding big.npy, any .npy works)
PY=/work/main/.venv/bin/python
cd "$(dirname "$0")/cli"
[ -f small.npy ] || $PY -c "import numpy as np; np.save('small.npy', np.arange(1000))"
for n in 1 2; do for d in 0.15 0.3; do for s in TERM INT; do
  rm -f o.npy
  /work/main/.venv/bin/mpiexec -n $n $PY -m distscan small.npy -o o.npy --force 2>err.txt >/dev/null & mp=$!
  sleep $d; kill -$s $mp; wait $mp; rc=$?
  echo "n=$n SIG$s after ${d}s: rc=$rc, stderr lines=$(grep -c . err.txt), output exists=$([ -e o.npy ] && echo yes || echo no) :: $(tr '\n' '|' < err.txt | head -c 200)"
done; done; done
