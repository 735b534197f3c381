"""A/B of this tree's scan kernel against an older tree's, in one process (issue 10, twelfth pass:
benchmarks/logs/ab-kernel-launch-state-twelfth-h100.txt).

Setup (the older tree as a package of another name, next to this one):
    mkdir -p _exp/oldtree && git archive 79cf686 distscan kernels | tar -x -C _exp/oldtree
    mv _exp/oldtree/distscan _exp/oldtree/distscan_old
    sed -i 's/import_module(f"distscan.backends.{name}")/import_module(f".{name}", __name__)/' \
        _exp/oldtree/distscan_old/backends/__init__.py
Run:
    PYTHONPATH=$PWD python benchmarks/ab_launch_state.py mid 18 20 22 24    (plain launches, us per call)
    PYTHONPATH=$PWD python benchmarks/ab_launch_state.py large 27 29        (API, back-to-back, GB/s)
"mid": gpu.scan's general path (a CuPy launch: no graph, no dependent launch), events around each
call with the L2 flushed before, median of 5 rounds of 30 calls, the two trees and a copy in turn.
"large": distscan.cumsum(x, out=y) back to back, events around 10 calls, median of 5 rounds.
"""
import os
import statistics
import sys

import cupy as cp
import numpy as np

sys.path.insert(0, os.getcwd())
sys.path.insert(0, os.path.join(os.getcwd(), "_exp", "oldtree"))
import distscan  # noqa: E402
import distscan_old  # noqa: E402
from distscan._dtypes import scan_types  # noqa: E402
from distscan.backends import cuda as gnew  # noqa: E402
from distscan.ops import get_op  # noqa: E402
from distscan_old._dtypes import scan_types as scan_types_old  # noqa: E402
from distscan_old.backends import cuda as gold  # noqa: E402
from distscan_old.ops import get_op as get_op_old  # noqa: E402

FLUSH = cp.empty(1 << 26, cp.uint8)


def per_call(fn, reps=30, flush=True):
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    ts = []
    for _ in range(reps):
        if flush:
            FLUSH.fill(1)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        ts.append(cp.cuda.get_elapsed_time(start, stop) * 1e3)
    return statistics.median(ts)


def loop(fn, calls=10):
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    fn()
    cp.cuda.Device().synchronize()
    start.record()
    for _ in range(calls):
        fn()
    stop.record()
    stop.synchronize()
    return cp.cuda.get_elapsed_time(start, stop) * 1e3 / calls


def main():
    mode, sizes = sys.argv[1], [int(a) for a in sys.argv[2:]]
    for dt in ["int32", "float32", "int64", "float64"] if mode == "mid" else ["int32", "float32", "int64"]:
        for lg in sizes:
            n = 1 << lg
            x = cp.arange(n, dtype=dt) % 7
            y = cp.empty_like(x)
            if mode == "mid":
                tn = scan_types(get_op("sum"), np.dtype(dt), np.dtype(dt))
                to = scan_types_old(get_op_old("sum"), np.dtype(dt), np.dtype(dt))
                impls = {"new": lambda: gnew.scan(x, get_op("sum"), tn, out=y),
                         "old": lambda: gold.scan(x, get_op_old("sum"), to, out=y),
                         "copy": lambda: cp.copyto(y, x)}
                measure = per_call
            else:
                impls = {"new": lambda: distscan.cumsum(x, dtype=x.dtype, out=y),
                         "old": lambda: distscan_old.cumsum(x, dtype=x.dtype, out=y),
                         "copy": lambda: cp.copyto(y, x)}
                measure = loop
            times = {k: [] for k in impls}
            for f in impls.values():
                measure(f)
            for _ in range(5):
                for k, f in impls.items():
                    times[k].append(measure(f))
            m = {k: statistics.median(v) for k, v in times.items()}
            if mode == "mid":
                print(f"{dt:8s} 2^{lg}  new {m['new']:8.2f} us  old {m['old']:8.2f} us  copy {m['copy']:8.2f} us  "
                      f"new/old time {m['new'] / m['old']:.3f}", flush=True)
            else:
                gbs = {k: 2 * n * x.itemsize / (v * 1e-6) / 1e9 for k, v in m.items()}
                print(f"{dt:8s} 2^{lg}  new {gbs['new']:6.0f}  old {gbs['old']:6.0f}  copy {gbs['copy']:6.0f}  "
                      f"new/old {gbs['new'] / gbs['old']:.3f}  new/copy {gbs['new'] / gbs['copy']:.3f} "
                      f"old/copy {gbs['old'] / gbs['copy']:.3f}", flush=True)
            del x, y


if __name__ == "__main__":
    main()
