#!/bin/bash
cd "$(dirname "$0")/../../.."
export NCCL_NVLS_ENABLE=0 PYTHONPATH=$PWD DISTSCAN_PROGRESS=0 PYTHONUNBUFFERED=1
timeout 200 ncu --clock-control none --metrics gpu__time_duration.sum,launch__grid_size python3 benchmarks/logs/2026-11-28-s51/exp5.py > /tmp/ncu5.txt 2>&1
grep -E "^  [a-zA-Z_].*\(|gpu__time|grid_size|done" /tmp/ncu5.txt | sed 's/(const.*)//' | cut -c1-150 | tail -60
