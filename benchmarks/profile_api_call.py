"""Where a small single-rank GPU call's host time goes, function by function (cProfile).

Question: the 2^16 call with ``out=`` costs ~1.2 µs more than at 9c73bb0 (``ab_api.py``); which
functions of the route ``cumsum`` → ``_scan`` → the call kind → ``ScanPlan.run`` → the hot path
does a call pass through, how many times, and for how long?  cProfile slows every Python call
(about 0.1-0.3 µs each), so the absolute times are inflated; the calls per call are exact, and
the order of the costs is what the profile is for.  The unprofiled time per call is printed first.

    PYTHONPATH=$PWD python benchmarks/profile_api_call.py [--log2n 16] [--calls 20000] [--dtype float32] [--top 25]
        [--old FOLDER]   (profile an older tree instead: a folder holding one distscan_<tag> package, as ab_api.py's)
        [--scan forward|reverse|segmented|recurrence|nancumsum|compensated]   (which call; default forward)

``--scan`` profiles issue 30's calls of the same size instead of ``cumsum(x, out=y)``: ``cumsum``
with ``reverse=True``, with ``segments=`` (a flag every 1000 items), ``compensated=True``,
``nancumsum``, or ``linear_recurrence(a, x)`` with ``a`` in [0.5, 1).
"""

from __future__ import annotations

import argparse
import cProfile
import importlib
import pstats
import sys
import time
from pathlib import Path

import cupy as cp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import distscan  # noqa: E402


def _calls():
    """The calls ``--scan`` names: ``make(lib, x, y)`` gives a call of no arguments."""
    def flags(x):
        f = cp.zeros(x.shape, bool)
        f[::1000] = True
        return f

    def coefficients(x):
        return cp.asarray(np.random.default_rng(1).uniform(0.5, 1.0, x.shape).astype(x.dtype))

    def segmented(lib, x, y):
        f = flags(x)
        return lambda: lib.cumsum(x, segments=f, out=y)

    def recurrence(lib, x, y):
        c = coefficients(x)
        return lambda: lib.linear_recurrence(c, x, out=y)

    return {
        "forward": lambda lib, x, y: lambda: lib.cumsum(x, dtype=x.dtype, out=y),
        "reverse": lambda lib, x, y: lambda: lib.cumsum(x, reverse=True, out=y),
        "segmented": segmented,
        "recurrence": recurrence,
        "nancumsum": lambda lib, x, y: lambda: lib.nancumsum(x, out=y),
        "compensated": lambda lib, x, y: lambda: lib.cumsum(x, compensated=True, out=y),
    }


_CALLS = _calls()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--log2n", type=int, default=16)
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--old")
    ap.add_argument("--scan", default="forward", choices=sorted(_CALLS))
    a = ap.parse_args()
    lib = distscan
    if a.old:
        (pkg,) = [p.name for p in Path(a.old).iterdir() if p.name.startswith("distscan_") and p.is_dir()]
        sys.path.insert(0, a.old)
        lib = importlib.import_module(pkg)
    x = cp.asarray(np.random.default_rng(0).integers(-9, 9, 1 << a.log2n).astype(a.dtype))
    y = cp.empty_like(x)
    call = _CALLS[a.scan](lib, x, y)

    def loop():
        for _ in range(a.calls):
            call()
        cp.cuda.Device().synchronize()

    for _ in range(3):
        loop()
    t = time.perf_counter()
    loop()
    plain = (time.perf_counter() - t) / a.calls
    prof = cProfile.Profile()
    t = time.perf_counter()
    prof.runcall(loop)
    profiled = (time.perf_counter() - t) / a.calls
    print(f"{cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}: {a.scan} (out=) of 2^{a.log2n} {a.dtype}: "
          f"({lib.__name__}) {plain * 1e6:.2f} us per call unprofiled, {profiled * 1e6:.2f} us profiled")
    st = pstats.Stats(prof)
    rows = []
    for (file, line, name), (cc, nc, tt, ct, _) in st.stats.items():
        rows.append((tt / a.calls, ct / a.calls, nc / a.calls, f"{Path(file).parent.name}/{Path(file).name}:{line}({name})"))
    rows.sort(reverse=True)
    calls = sum(r[2] for r in rows)
    print(f"{calls:.1f} function calls per call (Python and builtins)")
    print(f"{'own us':>8} {'cum us':>8} {'calls':>6}  function")
    for own, cum, n, where in rows[:a.top]:
        print(f"{own * 1e6:8.3f} {cum * 1e6:8.3f} {n:6.1f}  {where}")


if __name__ == "__main__":
    main()
