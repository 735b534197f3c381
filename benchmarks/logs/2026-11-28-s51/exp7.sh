#!/bin/bash
cd "$(dirname "$0")/../../.."
export NCCL_NVLS_ENABLE=0 PYTHONPATH=$PWD DISTSCAN_PROGRESS=0 PYTHONUNBUFFERED=1
timeout 150 python3 benchmarks/logs/2026-11-28-s51/exp7.py 2>&1 | tail -30
