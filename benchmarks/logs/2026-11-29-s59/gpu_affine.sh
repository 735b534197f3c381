export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0 PYTHONPATH=$PWD
date -u; nvidia-smi --query-gpu=name --format=csv,noheader
(cd distscan && find . ../kernels -type f \( -name '*.py' -o -name '*.cu*' \) | LC_ALL=C sort | xargs sha1sum | sha1sum)
timeout 60 python3 benchmarks/logs/2026-11-29-s59/inf_initial.py 2>&1 | grep -v Warning
for t in recurrence_initial state_columns one_coefficient; do
  (timeout 220 python3 -m pytest -q -p no:cacheprovider -rfE tests/gpu/test_$t.py > /tmp/t-$t.txt 2>&1; echo "exit $?" >> /tmp/t-$t.txt) &
done
wait
for t in recurrence_initial state_columns one_coefficient; do echo "== $t"; grep -E "passed|failed|FAILED|Error|exit" /tmp/t-$t.txt | tail -8; done
for t in recurrence_initial state_columns one_coefficient; do echo "=== $t"; tail -c 4000 /tmp/t-$t.txt; done > $OUT/t.txt
date -u
