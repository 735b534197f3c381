#!/bin/bash
# Session 53, first experiment call (one H200): the new tests of this session's changes, then
# probe_one_coefficient_device.py (which device algorithm "auto" should take for one coefficient).
cd "$(dirname "$0")/../../.."
O=${OUT:-/tmp}
export NCCL_NVLS_ENABLE=0 DISTSCAN_PROGRESS=0 PYTHONUNBUFFERED=1
PYTHONPATH=$PWD timeout 200 python3 -m pytest -q -p no:cacheprovider -rfEs --timeout 190 tests/gpu/test_compile_cache.py \
  tests/backends/test_cuda_module_cache.py "tests/gpu/test_one_coefficient.py::test_numbers_the_host_holds_take_one_route_cold_and_warm" \
  > $O/tests.txt 2>&1
echo "tests rc=$?" >> $O/tests.txt; grep -E "passed|failed|^FAILED|^E  " $O/tests.txt | head -20
PYTHONPATH=$PWD timeout 330 python3 benchmarks/probe_one_coefficient_device.py --log2n 24,27,29 --reps 9 > $O/probe.txt 2>&1
echo "probe rc=$?" >> $O/probe.txt; tail -30 $O/probe.txt
