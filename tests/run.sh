#!/usr/bin/env bash
# The whole test suite: serial tests (which also start the CLI under mpiexec
# themselves), then the MPI tests under mpiexec at 2, 3 and 4 ranks, and at 8
# ranks (oversubscribed on small machines) to stress the carry combination.
# The MPI runs take the files written for any rank count: test_mpi_*.py, the peers'
# cumulative cases (test_peers_cumulative.py) and the
# GPU pipeline's host-side logic (test_gpu_logic.py).
# GPU tests are skipped without a GPU. Fails on the first failing run
# (pytest's exit code 5, "no tests collected", is a failure too).
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python}
BIN=$(dirname "$(command -v "$PY")")
MPIEXEC=${MPIEXEC:-$([ -x "$BIN/mpiexec" ] && echo "$BIN/mpiexec" || command -v mpiexec || true)}
[ -n "$MPIEXEC" ] || { echo "tests/run.sh: no mpiexec found (install with: pip install -e '.[mpi,test]')" >&2; exit 1; }
RANKS=${DISTSCAN_TEST_RANKS:-"2 3 4 8"}

echo "== serial tests"
"$PY" -m pytest -q -p no:cacheprovider tests

for n in $RANKS; do
    echo "== MPI tests on $n ranks ($MPIEXEC)"
    # Every rank runs pytest; a rank stuck in MPI is killed by pytest-timeout's thread
    # method, and the outer timeout bounds the whole run.
    timeout 1200 "$MPIEXEC" -n "$n" "$PY" -m pytest -q -p no:cacheprovider --with-mpi \
        tests/test_mpi_*.py tests/test_gpu_logic.py tests/test_peers_cumulative.py
done
echo "== all test runs passed"
