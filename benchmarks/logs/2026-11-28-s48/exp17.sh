#!/bin/bash
# exp17 (2 H200s, the session's last call): the whole GPU suite at the final tree (by_column:
# many long columns a column at a time; tile_agent's fold_prefix_of), then bench_columns.py on
# GPU 0 for the widths either side of the rule, in what is left of the call.
cd "$(dirname "$0")/../../.."
O=${OUT:-/tmp}
bash tests/gpu/run_suite.sh /tmp/s > $O/suite.txt 2>&1; echo "suite rc=$?" >> $O/suite.txt
tar czf $O/s.tgz -C /tmp s
date -u >> $O/suite.txt
tail -32 $O/suite.txt
export NCCL_NVLS_ENABLE=0 PYTHONPATH=$PWD DISTSCAN_PROGRESS=0
timeout 45 python3 benchmarks/bench_columns.py $O/columns.json --log2n 27 --reps 5 --widths 4,33,64,1024,4096 \
  --dtypes float32 > $O/columns.txt 2>&1; echo "columns rc=$?" >> $O/columns.txt
cat $O/columns.txt
