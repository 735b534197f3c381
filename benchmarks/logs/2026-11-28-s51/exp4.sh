#!/bin/bash
# One H200: exp4.py (the EMA's alone time at 2^28: wall, events, host profile).
cd "$(dirname "$0")/../../.."
export NCCL_NVLS_ENABLE=0 PYTHONPATH=$PWD DISTSCAN_PROGRESS=0 PYTHONUNBUFFERED=1
timeout 200 python3 benchmarks/logs/2026-11-28-s51/exp4.py 2>&1 | tail -45
