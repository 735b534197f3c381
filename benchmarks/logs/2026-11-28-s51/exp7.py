"""exp6 left the EMA (a Python float a) at 249 us of host time among other kinds of call, where
repeated alone it took 56 us (exp4).  Which route does each such call take, and where does its
host time go?  Counts Kind hits and misses (NOT_THIS_KIND), Part constructions and lean calls, and
times each stage, for the EMA repeated alone and among the same 7 other kinds."""
import sys, time
from collections import defaultdict
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
import cupy as cp, numpy as np
import distscan
from distscan import _kinds, _call
from distscan.backends.cuda import extended
from mpi4py import MPI
SELF = MPI.COMM_SELF
stats = defaultdict(list)


def wrap(owner, name, label):
    f = getattr(owner, name)

    def timed(*a, **k):
        t0 = time.perf_counter()
        r = f(*a, **k)
        stats[label].append((time.perf_counter() - t0, r is _kinds.NOT_THIS_KIND if label == "Kind.run" else None,
                             r is None if label == "Kind.aux" else None))
        return r
    setattr(owner, name, timed)


wrap(_kinds.Kind, "run", "Kind.run")
wrap(_kinds.Kind, "aux", "Kind.aux")
wrap(_call.Part, "__init__", "Part")
wrap(extended, "scan", "extended.scan")
n = 1 << 28
x = cp.random.RandomState(3).standard_normal(n, dtype=cp.float32)
a = cp.random.RandomState(4).uniform(0.5, 1, n).astype(cp.float32)
flags = cp.random.RandomState(5).random_sample(n) < 1e-3
y = cp.empty_like(x)
calls = {"cumsum": lambda: distscan.cumsum(x, out=y, comm=SELF),
         "seg": lambda: distscan.cumsum(x, segments=flags, out=y, comm=SELF),
         "rec": lambda: distscan.linear_recurrence(a, x, out=y, comm=SELF),
         "ema": lambda: distscan.linear_recurrence(0.75, x, out=y, comm=SELF),
         "rev": lambda: distscan.cumsum(x, reverse=True, out=y, comm=SELF),
         "nan": lambda: distscan.nancumsum(x, out=y, comm=SELF),
         "log": lambda: distscan.scan(x, np.logaddexp, out=y, comm=SELF),
         "comp": lambda: distscan.cumsum(x, compensated=True, out=y, comm=SELF)}
for k in calls:
    calls[k]()
cp.cuda.Device().synchronize()


def report(title, order):
    stats.clear()
    hosts = defaultdict(list)
    for k in order:
        cp.cuda.Device().synchronize()
        before = {lab: len(v) for lab, v in stats.items()}
        t0 = time.perf_counter()
        calls[k]()
        t1 = time.perf_counter()
        cp.cuda.Device().synchronize()
        if k == "ema":
            hosts["host"].append(t1 - t0)
            for lab, v in stats.items():
                new = v[before.get(lab, 0):]
                for t, miss, none in new:
                    hosts[lab].append(t)
                    if miss:
                        hosts["Kind.run missed"].append(1)
                    if none:
                        hosts["Kind.aux gave None"].append(1)
    print(title)
    for lab, v in hosts.items():
        print(f"  {lab:22s} calls {len(v):3d}  median {np.median(v) * 1e6:8.1f} us")


report("EMA repeated alone (20 calls)", ["ema"] * 20)
rng = np.random.default_rng(1)
report("EMA among 7 other kinds (9 rounds)", [k for _ in range(9) for k in rng.permutation(list(calls))])
print("kinds:", len(_kinds.KINDS._kinds))
