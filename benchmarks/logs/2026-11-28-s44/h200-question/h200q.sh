#!/bin/bash
# s44 call 1: if lent an H200, the H200 question (exp1.sh of s43); else stop.
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "$name"
case "$name" in *H200*) ;; *) echo "not an H200: stop"; exit 3;; esac
bash benchmarks/logs/2026-11-28-s43/h200-question/exp1.sh
