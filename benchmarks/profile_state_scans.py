"""Where do the state scans' kernels spend their cycles?  Three calls of one scan at 2^27 float32
items, for Nsight Compute to profile the third launch (the first two compile, plan and warm up):

    ncu --kernel-name regex:"scan_ext_kernel|scan_tiles_kernel" --launch-skip 2 --launch-count 1 \\
        --section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats \\
        --section LaunchStats python3 benchmarks/profile_state_scans.py SCAN [ALGORITHM] [DTYPE]

SCAN is one of these:
- ``recurrence``: ``linear_recurrence(a, x)`` with ``a`` in [0.5, 1);
- ``segmented``: ``cumsum(x, segments=f)`` with a flag every ~1000 items;
- ``compensated``: ``cumsum(x, compensated=True)``;
- ``plain``: ``cumsum(x)``, the baseline.

Each runs with ``out=`` on one rank. The algorithm is "auto" unless ALGORITHM is given
("lookahead", "lookback"). The dtype is float32 unless DTYPE is given (float64, complex64: the
16-byte recurrences). The figures: benchmarks/RESULTS.md, "Where the look-back's cycles go" and
"The 32-byte segmented tile on complex products; the compensated sum and segmented int64 under
Nsight Compute".
"""

from __future__ import annotations

import sys
from pathlib import Path

import cupy as cp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import distscan  # noqa: E402
from harness import SELF  # noqa: E402


def main():
    which = sys.argv[1] if len(sys.argv) > 1 else "recurrence"
    alg = sys.argv[2] if len(sys.argv) > 2 else "auto"
    dtype = cp.dtype(sys.argv[3] if len(sys.argv) > 3 else "float32")
    n = 1 << 27
    rs = cp.random.RandomState(7)
    x = rs.standard_normal(n, dtype=cp.float32).astype(dtype)
    y = cp.empty_like(x)
    if which == "recurrence":
        a = rs.uniform(0.5, 1.0, n).astype(dtype)
        if dtype.kind == "c":  # a turn as well as a decay
            a = a * cp.exp(1j * rs.uniform(-0.1, 0.1, n)).astype(dtype)
        call = lambda: distscan.linear_recurrence(a, x, out=y, comm=SELF, algorithm=alg)  # noqa: E731
    elif which == "segmented":
        f = rs.random_sample(n) < 1e-3
        call = lambda: distscan.cumsum(x, segments=f, out=y, comm=SELF, algorithm=alg)  # noqa: E731
    elif which == "compensated":
        call = lambda: distscan.cumsum(x, compensated=True, out=y, comm=SELF, algorithm=alg)  # noqa: E731
    elif which == "plain":
        call = lambda: distscan.cumsum(x, out=y, comm=SELF, algorithm=alg)  # noqa: E731
    else:
        raise SystemExit(f"unknown scan {which!r}: recurrence, segmented, compensated or plain")
    for _ in range(3):
        call()
    cp.cuda.Device().synchronize()


if __name__ == "__main__":
    main()
