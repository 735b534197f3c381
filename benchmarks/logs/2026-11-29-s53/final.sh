#!/bin/bash
# One H200 (the only kind lent this session), the session's GPU record: the whole GPU suite at the
# final tree of distscan/ and kernels/, its logs written under $OUT as they grow (a call cut at
# 600 s still brings them back); then RUNS="..." again, warm, for the runs the cut stopped.
cd "$(dirname "$0")/../../.."
O=${OUT:-/tmp}
bash tests/gpu/run_suite.sh $O/s > $O/suite.txt 2>&1; echo "suite rc=$?" >> $O/suite.txt
date -u >> $O/suite.txt
tail -40 $O/suite.txt
