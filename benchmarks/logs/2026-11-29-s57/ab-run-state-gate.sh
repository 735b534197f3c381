cd "$(dirname "$0")/../../.."
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 DISTSCAN_PROGRESS=0
nvidia-smi --query-gpu=name --format=csv,noheader; date -u
for round in 1 2; do for t in M W; do
  if [ $t = M ]; then P=$PWD/s57M; else P=$PWD; fi
  echo "== $t round $round"
  LA='[]'; [ $t = W ] && LA='[[128,16,1024,2,6,4,2]]'
  (cd $P && PYTHONPATH=$P timeout 200 python3 benchmarks/sweep_costly_tiles.py --scans "logcumsumexp f64,compensated c128" \
      --shapes '[]' --leads auto --lookahead "$LA" --log2n 26 --reps 9 2>&1 | grep -v Warning | tail -9)
done; done
date -u
