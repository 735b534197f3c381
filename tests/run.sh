#!/usr/bin/env bash
# The whole test suite: serial tests (which also start the CLI under mpiexec
# themselves), then the MPI tests under mpiexec at 2 and 3 ranks (every test
# marked `anyranks`), and at 8 ranks (oversubscribed on small machines) the subset
# marked `manyranks`, which stresses the carry combination (many ranks, uneven and
# empty parts, the node hierarchy, the exchanges) without repeating every case of
# the smaller counts.  The markers, not file names, select what runs under mpiexec
# (files written for any rank count carry `pytestmark = pytest.mark.anyranks`; see
# tests/conftest.py).
# Under mpiexec every line of pytest's output starts with "[rank N]" (tests/conftest.py
# writes whole lines: mpiexec's own -prepend-rank/-prepend-pattern cut lines apart), and
# each rank gets its own --basetemp folder (DIR/rank-N).
# GPU tests are skipped without a GPU. Fails on the first failing run
# (pytest's exit code 5, "no tests collected", is a failure too).
# DISTSCAN_TEST_SEED=N repeats the random data of a failed run (the seed is in its report).
# DISTSCAN_TEST_RANKS="2 3 8" (the default; add 4 for more) picks the rank counts; counts up to DISTSCAN_TEST_ALL_UP_TO
# (default 4) run every anyranks test, larger ones the manyranks subset.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python}
BIN=$(dirname "$(command -v "$PY")")
MPIEXEC=${MPIEXEC:-$([ -x "$BIN/mpiexec" ] && echo "$BIN/mpiexec" || command -v mpiexec || true)}
[ -n "$MPIEXEC" ] || { echo "tests/run.sh: no mpiexec found (install with: pip install -e '.[mpi,test]')" >&2; exit 1; }
RANKS=${DISTSCAN_TEST_RANKS:-"2 3 8"}
ALL_UP_TO=${DISTSCAN_TEST_ALL_UP_TO:-4}

TMP=$(mktemp -d "${TMPDIR:-/tmp}/distscan-run.XXXXXX")
cleanup() { rc=$?; if [ "$rc" = 0 ]; then rm -rf "$TMP"; else echo "tests/run.sh: temporary folders kept in $TMP" >&2; fi; }
trap cleanup EXIT

echo "== serial tests"
"$PY" -m pytest -q -p no:cacheprovider tests

for n in $RANKS; do
    if [ "$n" -le "$ALL_UP_TO" ]; then
        marks="anyranks"
    else
        marks="anyranks and manyranks"
    fi
    echo "== MPI tests on $n ranks, -m \"$marks\" ($MPIEXEC)"
    # Every rank runs pytest; a rank stuck in MPI is killed by pytest-timeout's thread
    # method, and the outer timeout bounds the whole run.
    timeout 1200 "$MPIEXEC" -n "$n" "$PY" -m pytest -q -p no:cacheprovider --with-mpi -m "$marks" \
        --basetemp "$TMP/np$n" tests
done
echo "== all test runs passed"
