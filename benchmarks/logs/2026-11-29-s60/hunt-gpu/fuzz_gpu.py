"""GPU fuzz harness for distscan's API (session 60), grown from logs/2026-11-29-s59/hunt/fuzz.py.

    mpirun --allow-run-as-root -n K python fuzz_gpu.py --seed S --seconds T [--cpu]

PYTHONPATH must hold the repository root.  Rank r works on GPU r % (GPUs visible); every rank may
share GPU 0.  Rank 0 draws case after case (case i from its own generator, seeded (S, i), so one case
is reproduced alone with ``--case i``) and broadcasts it, until T seconds have passed since the start
(rank 0 decides and broadcasts whether to go on, so the ranks never diverge).  Each rank draws the kind
of its own part: CuPy contiguous, strided, reversed, Fortran-order, 0-size, a PyTorch CUDA tensor
(plain or strided), an object passed through DLPack or ``__cuda_array_interface__``, ``out=`` (also a
strided one, also overlapping the input), on a CuPy stream of its own or not; a case may be called
twice in a row (equal results, the first one unchanged after the second call); a few cases make the
ranks pass what must be refused (NumPy beside CuPy, different dtypes, trailing shapes, operators, axes,
a bad ``out``/operator/axis on one rank): every rank must raise the same exception type, and the good
call made right after must be right.  Results are checked against ref.py's sequential loops (integers
exactly, floats with ref.close's tolerances), big cases (2^20 items, look-back / look-ahead kernels)
against exact vectorised references.

``--cpu`` runs the same harness with NumPy parts (no CuPy, no torch), to check the harness itself.

``--warm N --warm-plan 61:1,62:2,63:3`` (no mpirun) starts N processes that compile, ahead of the fuzz
runs, the kernel modules their cases will need: each draws the cases of the plan's (seed, ranks) runs,
as the runs will, and makes each distinct kind of call once on one GPU without MPI (mpi4py blocked:
distscan then scans locally), so that CuPy's disk cache holds the modules when the ranks get there.
On a fresh machine NVRTC takes seconds a module, one at a time in each rank; run.sh starts it beside
the runs.

Output (rank 0): ``CASE i START ...`` before every case (flushed: a hang is located by the last one),
one ``FAIL ...`` line per failure (seed, index, the case without its big arrays, bounds, part kinds),
and one ``SUMMARY ...`` line at the end.  A case that runs past its limit (--case-timeout, and
--deadline) makes the rank print
``WATCHDOG ...`` and the stacks of its threads, then exit (status 3), which ends the job.
"""

from __future__ import annotations

import time

T0 = time.monotonic()

import argparse  # noqa: E402
import contextlib  # noqa: E402
import faulthandler  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import traceback  # noqa: E402
from collections import Counter  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "2026-11-29-s59", "hunt"))  # the s59 CPU hunt's ref.py

ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
ap.add_argument("--seed", type=int, default=None, help="required, but with --warm")
ap.add_argument("--seconds", type=float, default=60.0, help="start no case after this many seconds")
ap.add_argument("--cpu", action="store_true", help="NumPy parts only (checks the harness)")
ap.add_argument("--case", type=int, default=None, help="run case i only (reproduce a failure)")
ap.add_argument("--first", type=int, default=0, help="index of the first case")
ap.add_argument("--max-cases", type=int, default=None)
ap.add_argument("--case-timeout", type=float, default=60.0,
                help="watchdog: seconds a case may take (twice that for the first three: CUDA's start)")
ap.add_argument("--deadline", type=float, default=None,
                help="watchdog: no case runs past this many seconds since the start (default seconds + 20)")
ap.add_argument("--show", action="store_true", help="print the case and the arrays of failures")
ap.add_argument("--p-big", type=float, default=0.03, help="chance of a 2^20 case")
ap.add_argument("--warm", type=int, default=None, help="start N warming processes (no MPI)")
ap.add_argument("--warm-worker", default=None, help=argparse.SUPPRESS)  # "k/N": one of them
ap.add_argument("--warm-plan", default="61:1,62:2,63:3", help="seed:ranks of the runs to warm for")
ap.add_argument("--warm-cases", type=int, default=600, help="cases of each run to warm for")
ap.add_argument("--warm-seconds", type=float, default=230.0, help="the warmers stop after this")
args = ap.parse_args()
WARM = args.warm is not None or args.warm_worker is not None
if args.seed is None and not WARM:
    ap.error("--seed is required")
DEADLINE = args.deadline if args.deadline is not None else args.seconds + 20.0

if WARM:
    sys.modules["mpi4py"] = None  # distscan then makes local calls (default_comm: no mpi4py)
    MPI = None
else:
    from mpi4py import MPI  # noqa: E402
import numpy as np  # noqa: E402

import distscan  # noqa: E402
from ref import UF, close, identity, result_dtype, seq_recurrence, seq_scan  # noqa: E402

comm = MPI.COMM_WORLD if not WARM else None
R, P = (comm.rank, comm.size) if not WARM else (0, 1)
GPU = not args.cpu

cp = None
torch = None
DEV = None
if GPU:
    import cupy as cp

    NDEV = cp.cuda.runtime.getDeviceCount()
    DEV = (R if args.warm_worker is None else int(args.warm_worker.split("/")[0])) % NDEV
    cp.cuda.Device(DEV).use()
    try:
        if WARM:
            raise ImportError("no torch in the warmers: the kernels do not depend on it")
        import torch
        import torch.utils.dlpack  # noqa: F401

        if torch.cuda.is_available():
            torch.cuda.set_device(DEV)
        else:
            torch = None
    except Exception:  # noqa: BLE001
        torch = None
xp = cp if GPU else np


def oneline(s, limit=400) -> str:
    s = " | ".join(line.strip() for line in str(s).strip().splitlines() if line.strip())
    return s if len(s) <= limit else s[:limit] + "..."


# ------------------------------------------------------------------------------------------------
# Watchdog: a case that runs past its limit prints where every thread is, then ends the process
# (mpirun then ends the job).  A Python timer names the rank and the case; faulthandler's own timer,
# ten seconds later, is the backstop where the timer thread cannot run.


class Watchdog:
    def __init__(self):
        self.timer = None
        faulthandler.enable()

    def arm(self, i, what, limit, why):
        self.cancel()
        self.timer = threading.Timer(limit, self._fire, args=(i, what, limit, why))
        self.timer.daemon = True
        self.timer.start()
        faulthandler.dump_traceback_later(limit + 10.0, exit=True)

    def cancel(self):
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        faulthandler.cancel_dump_traceback_later()

    @staticmethod
    def _fire(i, what, limit, why):
        line = (f"WATCHDOG rank {R} of {P}: case {i} ({what}) still running after {limit:.0f} s ({why}; "
                f"{time.monotonic() - T0:.0f} s since the start); seed {args.seed}; stacks follow on stderr "
                f"(in NVRTC: a slow compile, not a hang)")
        try:
            print(line, flush=True)
            sys.stderr.write(line + "\n")
            sys.stderr.flush()
            faulthandler.dump_traceback(all_threads=True)
            sys.stderr.flush()
        finally:
            os._exit(3)


WATCHDOG = Watchdog()

# ------------------------------------------------------------------------------------------------
# What may be drawn

DTYPES = ["float32", "float64", "int32", "int64", "complex64", "bool", "uint8", "float16"]
DTYPE_W = np.array([22, 18, 14, 16, 8, 8, 8, 6], float)
OPS_BY_KIND = {
    "b": ["sum", "prod", "max", "min", "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or",
          "bitwise_xor", "nanmax", "nanmin", "nansum", "nanprod"],
    "i": ["sum", "prod", "max", "min", "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or",
          "bitwise_xor", "nansum", "nanprod", "nanmax", "nanmin", "gcd", "lcm"],
    "f": ["sum", "prod", "max", "min", "logical_and", "logical_or", "logical_xor", "nansum", "nanprod", "nanmax",
          "nanmin", "logaddexp", "logaddexp2"],
    "c": ["sum", "prod", "logical_and", "logical_or", "logical_xor", "nansum", "nanprod"],
}
OP_W = {"sum": 5, "prod": 2, "max": 3, "min": 3}
SPELL = {"sum": ["sum", np.add, "add", "cumsum"], "prod": ["prod", np.multiply, "multiply"],
         "max": ["max", np.maximum], "min": ["min", np.minimum], "nanmax": ["nanmax", np.fmax, "fmax"],
         "nanmin": ["nanmin", np.fmin, "fmin"], "logaddexp": ["logaddexp", np.logaddexp, "logcumsumexp"],
         "logaddexp2": ["logaddexp2", np.logaddexp2], "gcd": ["gcd", np.gcd], "lcm": ["lcm", np.lcm],
         "nansum": ["nansum"], "nanprod": ["nanprod"]}
NAMED = {"sum": "cumsum", "prod": "cumprod", "max": "cummax", "min": "cummin", "nansum": "nancumsum",
         "nanprod": "nancumprod"}
NS = [0, 1, 2, 5, 9, 17, 40, 300, 1000, 3000]
NS_W = np.array([1, 2, 2, 3, 3, 3, 3, 3, 2, 2], float)

# part kinds: name -> weight.  GPU: "dev" a CuPy array; CPU: a NumPy array, and so on (make_array).
KINDS_GPU = {"dev": 24, "strided": 9, "reversed": 5, "fortran": 6, "empty": 5, "torch": 9, "torch_strided": 4,
             "dlpack_torch": 4, "dlpack_cupy": 4, "dlpack_obj": 5, "cai": 4, "out": 8, "out_strided": 3,
             "outx": 5}
KINDS_CPU = {"dev": 30, "strided": 10, "reversed": 5, "fortran": 6, "empty": 5, "dlpack_obj": 7, "cai": 5,
             "out": 9, "out_strided": 3, "outx": 6}
TORCH_KINDS = ("torch", "torch_strided", "dlpack_torch", "dlpack_cupy")
OUT_KINDS = ("out", "out_strided", "outx")
FLAG_KINDS = {"dev": 4, "host": 2, "list": 1, "view": 2, "torch": 1}


def expect_of(kind) -> str:
    """The kind of result a part kind must give back."""
    if not GPU:
        return "numpy"
    return "torch" if kind in ("torch", "torch_strided", "dlpack_torch") else "cupy"


# ------------------------------------------------------------------------------------------------
# Capabilities of this machine's CuPy / torch for the harness's own conversions (probed on every
# rank, and-ed): a DLPack conversion the installed versions cannot make is not drawn.

def probe():
    caps = {"torch": torch is not None}
    if not GPU:
        return caps
    for dt in DTYPES:
        a = cp.zeros(3, dt)
        try:
            b = cp.from_dlpack(DLPackOnly(a))
            caps[("dlpack_obj", dt)] = b.dtype == a.dtype
        except Exception:  # noqa: BLE001
            caps[("dlpack_obj", dt)] = False
        if torch is not None:
            try:
                t = torch.utils.dlpack.from_dlpack(cp.zeros(3, dt))
                caps[("dlpack_torch", dt)] = str(t.dtype).replace("torch.", "") == np.dtype(dt).name
            except Exception:  # noqa: BLE001
                caps[("dlpack_torch", dt)] = False
            try:
                t = torch.from_numpy(np.zeros(3, dt)).to(f"cuda:{DEV}")
                caps[("dlpack_cupy", dt)] = cp.from_dlpack(t).dtype == np.dtype(dt)
            except Exception:  # noqa: BLE001
                caps[("dlpack_cupy", dt)] = False
            # distscan itself takes a torch tensor through cupy.from_dlpack and gives it back with
            # torch.from_dlpack: where these versions cannot, torch parts of that dtype are not drawn
            caps[("torch", dt)] = caps[("dlpack_cupy", dt)] and caps[("dlpack_torch", dt)]
    cp.cuda.Device().synchronize()
    return caps


class DLPackOnly:
    """An array known only by its DLPack methods (the result comes back as CuPy / NumPy)."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, *a, **k):
        return self._a.__dlpack__(*a, **k)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


class CAIOnly:
    """An array known only by ``__cuda_array_interface__`` (the result comes back as CuPy)."""

    def __init__(self, a):
        self._a = a

    @property
    def __cuda_array_interface__(self):
        return self._a.__cuda_array_interface__


class AIOnly:
    """CPU stand-in of CAIOnly: an array known only by ``__array_interface__``."""

    def __init__(self, a):
        self._a = a

    @property
    def __array_interface__(self):
        return self._a.__array_interface__


# ------------------------------------------------------------------------------------------------
# Case generation (rank 0; the case is broadcast)


def wchoice(rng, items, weights):
    w = np.asarray(weights, float)
    return items[int(rng.choice(len(items), p=w / w.sum()))]


def values(rng, op, dt, shape, specials=True):
    """The CPU harness's values; ``specials=False``: no NaN or infinity (an integer ``dtype=`` of a
    float input: their conversion is undefined), complex products without infinities (their
    association is documented to differ: docs/api.md, "Complex products")."""
    dt = np.dtype(dt)
    n = int(np.prod(shape))
    if dt.kind == "b":
        return rng.random(shape) < 0.6
    if dt.kind in "iu":
        if op == "lcm":
            v = rng.choice([1, 2, 3, 4, 6, -1, -2, -3], n) if dt.kind == "i" else rng.choice([1, 2, 3, 4, 6], n)
        elif op == "gcd":
            v = rng.choice([0, 2, 4, 6, 8, 12, -4, -6, 3, 9], n) if dt.kind == "i" else \
                rng.choice([0, 2, 4, 6, 8, 12, 3, 9], n)
        elif op in ("bitwise_and", "bitwise_or", "bitwise_xor", "max", "min", "nanmax", "nanmin"):
            info = np.iinfo(dt)
            v = rng.integers(info.min, info.max, n, endpoint=True, dtype=dt)
        elif op in ("prod", "nanprod"):
            v = rng.integers(0 if dt.kind == "u" else -3, 4, n)
            if rng.random() < 0.3:
                v = rng.integers(0, 200, n)
        else:
            info = np.iinfo(dt)
            v = rng.integers(info.min, info.max, n, endpoint=True, dtype=dt) if rng.random() < 0.3 else \
                rng.integers(0 if dt.kind == "u" else -50, 50, n)
        return np.asarray(v).astype(dt).reshape(shape)
    if op in ("prod", "nanprod"):
        v = rng.uniform(0.5, 2.0, n) * rng.choice([1, -1], n)
    elif op in ("logaddexp", "logaddexp2"):
        v = rng.uniform(-5, 5, n)
    else:
        v = rng.normal(0, 10, n)
        if rng.random() < 0.3:
            v = np.round(v)
    if dt.kind == "c":
        w = rng.uniform(0.5, 2.0, n) * rng.choice([1, -1], n) if op in ("prod", "nanprod") else rng.normal(0, 3, n)
        v = v + 1j * (w * 0.3)
    if specials and rng.random() < 0.4:
        for _ in range(int(rng.integers(1, 4))):
            if n == 0:
                break
            i = rng.integers(n)
            special = [np.nan, np.inf, -np.inf, 0.0, -0.0]
            if op in ("sum", "nansum") and dt.kind != "c":
                special = [np.nan, np.inf, 0.0, -0.0]
            if dt.kind == "c" and op in ("prod", "nanprod"):
                special = [np.nan, 0.0, -0.0] if op == "nanprod" else [0.0, -0.0]
            v[i] = rng.choice(special)
    return v.astype(dt).reshape(shape)


def draw_bounds(rng, n, kinds):
    """Cut n rows among the ranks; ranks whose kind is "empty" get none (their rows go to a rank
    that is not "empty")."""
    cuts = np.sort(rng.integers(0, n + 1, P - 1))
    counts = np.diff([0, *cuts.tolist(), n]).astype(int)
    if rng.random() < 0.2 and P > 1:  # a random empty rank, as the CPU harness
        r = int(rng.integers(P))
        s = (r + 1) % P
        counts[s] += counts[r]
        counts[r] = 0
    if all(k == "empty" for k in kinds):
        kinds[0] = "dev"
    full = [r for r in range(P) if kinds[r] != "empty"]
    for r in range(P):
        if kinds[r] == "empty" and counts[r]:
            to = min(full, key=lambda q: abs(q - r))
            counts[to] += counts[r]
            counts[r] = 0
    return [0, *np.cumsum(counts).tolist()]


def draw_kinds(rng, caps, choices=None):
    table = KINDS_GPU if GPU else KINDS_CPU
    names = [k for k in table if choices is None or k in choices]
    if not caps["torch"]:
        names = [k for k in names if k not in TORCH_KINDS]
    return [wchoice(rng, names, [table[k] for k in names]) for _ in range(P)]


def settle_kinds(c, caps, allow_outx=True):
    """Turn each rank's drawn kind into one its part can take (recorded in the case as run)."""
    dt = c["dt"]
    for r in range(P):
        k = c["kinds"][r]
        rows = c["bounds"][r + 1] - c["bounds"][r]
        if k in TORCH_KINDS or k == "dlpack_obj":
            if GPU and not caps.get((k if k != "torch_strided" else "torch", dt), False):
                k = "dev"
        if k == "fortran" and len(c["trail"]) == 0:
            k = "dev"
        if k in OUT_KINDS and c.get("axis", 0) != 0:
            k = "dev"
        if k == "outx" and (not allow_outx or c.get("twice") or c.get("include_initial") or rows == 0
                            or np.dtype(dt) != c["rdt"]):
            k = "out"
        c["kinds"][r] = k
    if c.get("segments") is not None:
        c["flagkinds"] = [fk if fk != "torch" or (c["kinds"][r] in ("torch", "torch_strided", "dlpack_torch")
                                                   and caps.get(("torch", "bool"), False)) else "dev"
                          for r, fk in enumerate(c["flagkinds"])]


def draw_common(rng, c, caps):
    c["flagkinds"] = [wchoice(rng, list(FLAG_KINDS), list(FLAG_KINDS.values())) for _ in range(P)]
    c["streams"] = [wchoice(rng, [None, "blocking", "nonblocking"], [7, 1.5, 1.5]) if GPU else None
                    for _ in range(P)]
    c["twice"] = bool(rng.random() < 0.12)


def gen_scan(rng, caps):
    c = {"kind": "scan"}
    dt = wchoice(rng, DTYPES, DTYPE_W)
    c["dt"] = dt
    kind = np.dtype(dt).kind
    ops = OPS_BY_KIND["i" if kind == "u" else kind]
    op = wchoice(rng, ops, [OP_W.get(o, 1) for o in ops])
    c["op"] = op
    trail = [(), (), (), (3,), (2,), (2, 3)][int(rng.integers(6))]
    n = int(wchoice(rng, NS, NS_W))
    if op in ("prod", "nanprod") and kind in "fc":
        n = min(n, 300)  # a float product's running value stays in range
    c["trail"] = trail
    c["kinds"] = draw_kinds(rng, caps)
    c["bounds"] = draw_bounds(rng, n, c["kinds"])
    c["exclusive"] = bool(rng.random() < 0.3)
    c["reverse"] = bool(rng.random() < 0.4)
    c["segments"] = (rng.random(n) < rng.choice([0.05, 0.2, 0.6])) if rng.random() < 0.4 else None
    c["initial"] = None
    rdt = result_dtype(op, dt, None)
    c["dtype"] = None
    if rng.random() < 0.15 and op in ("sum", "prod", "max", "min") and kind in "biuf":
        c["dtype"] = str(rng.choice(["int32", "int64", "float32", "float64"]))
        if op in ("max", "min") and np.dtype(c["dtype"]).kind != kind:
            c["dtype"] = None
        if c["dtype"] is not None:
            rdt = np.dtype(c["dtype"])
    specials = not (c["dtype"] is not None and np.dtype(c["dtype"]).kind in "iu" and kind in "fc")
    c["x"] = values(rng, op, dt, (n, *trail), specials=specials)
    if rng.random() < 0.3:
        ini = values(rng, op, rdt if rdt.kind != "b" or op not in ("sum", "prod") else np.int64,
                     trail if rng.random() < 0.5 else ())
        if rdt.kind in "fc" and np.any(~np.isfinite(ini)):
            ini = np.zeros_like(ini)
        c["initial"] = ini[()] if ini.ndim == 0 else ini
    c["include_initial"] = bool(rng.random() < 0.15 and not c["exclusive"])
    c["compensated"] = bool(rng.random() < 0.3 and op == "sum" and np.dtype(rdt).kind in "fc"
                            and c["segments"] is None)
    c["spelling"] = int(rng.integers(10))
    c["axis"] = 0
    # (axis=None scans n * prod(trail) items: a float or complex product that long leaves the float
    # range, where the association decides between inf and NaN (docs/api.md, "Complex products"))
    long_product = op in ("prod", "nanprod") and kind in "fc" and n * int(np.prod(trail)) > 300
    if rng.random() < 0.15 and c["segments"] is None and not c["include_initial"] and not long_product:
        c["axis"] = None
        if c["initial"] is not None and np.ndim(c["initial"]):
            c["initial"] = np.asarray(c["initial"]).ravel()[0]
    elif rng.random() < 0.1 and len(trail) >= 1:
        c["axis"] = -(1 + len(trail))
    c["algorithm"] = "auto" if rng.random() < 0.9 else str(rng.choice(["lookback", "lookahead"]))
    c["rdt"] = np.dtype(result_dtype(op, dt, c["dtype"]))
    draw_common(rng, c, caps)
    settle_kinds(c, caps)
    return c


def gen_lr(rng, caps):
    c = {"kind": "lr"}
    dt = wchoice(rng, ["float32", "float64", "complex64"], [40, 35, 25])
    c["dt"] = dt
    cplx = np.dtype(dt).kind == "c"
    trail = [(), (), (), (3,), (2,)][int(rng.integers(5))]
    n = int(wchoice(rng, NS, NS_W))
    c["trail"] = trail
    shape = (n, *trail)
    c["kinds"] = draw_kinds(rng, caps)
    c["bounds"] = draw_bounds(rng, n, c["kinds"])

    def coef(size):
        mag = rng.uniform(0.5, 1.0, size)
        if cplx:
            v = mag * np.exp(1j * rng.uniform(-np.pi, np.pi, size))
        else:
            v = mag * np.where(rng.random(size) < 0.15, -1.0, 1.0)
        if rng.random() < 0.3:  # exact zeros (restarts) and ones
            v = np.where(rng.random(size) < 0.03, 0.0, v)
            v = np.where(rng.random(size) < 0.05, 1.0, v)
        return np.asarray(v).astype(dt)

    modes = ["full", "const"] + (["col"] if trail else [])
    c["a_mode"] = wchoice(rng, modes, [60, 25, 15][:len(modes)])
    if c["a_mode"] == "full":
        c["a"] = coef(shape)
        c["a0"] = None
    elif c["a_mode"] == "const":
        c["a0"] = coef(()).reshape(())
        c["a"] = np.broadcast_to(c["a0"], shape).copy()
    else:
        c["a0"] = coef(trail)
        c["a"] = np.broadcast_to(c["a0"], shape).copy()
    b = rng.normal(0, 3, shape)
    if cplx:
        b = b + 1j * rng.normal(0, 3, shape)
    c["b"] = b.astype(dt)
    c["dtype"] = "float64" if dt == "float32" and rng.random() < 0.1 else None
    c["rdt"] = np.dtype(c["dtype"] or dt)
    u = rng.random()
    if u < 0.4:
        c["initial"] = None
    elif u < 0.75 or not trail:
        v = np.asarray(rng.normal(0, 3) + (1j * rng.normal(0, 3) if cplx else 0)).astype(dt)[()]
        c["initial"] = complex(v) if cplx and rng.random() < 0.5 else (float(v) if not cplx and rng.random() < 0.5
                                                                      else v)
    else:
        v = rng.normal(0, 3, trail) + (1j * rng.normal(0, 3, trail) if cplx else 0)
        c["initial"] = np.asarray(v).astype(dt)
    c["reverse"] = bool(rng.random() < 0.4)
    c["segments"] = (rng.random(n) < rng.choice([0.01, 0.05, 0.3])) if rng.random() < 0.35 else None
    c["algorithm"] = "auto" if rng.random() < 0.9 else str(rng.choice(["lookback", "lookahead"]))
    c["axis"] = 0
    reps = {"full": ["like_b", "like_b", "dev", "strided"], "const": ["full", "scalar", "0d", "bcast"],
            "col": ["full", "row", "row1", "bcast"]}[c["a_mode"]]
    c["a_reps"] = [str(rng.choice(reps)) for _ in range(P)]
    draw_common(rng, c, caps)
    settle_kinds(c, caps)
    return c


def gen_big(rng, caps):
    """2^20 rows (and a few): the look-back / look-ahead kernels, checked exactly."""
    n = (1 << 20) + (0 if rng.random() < 0.5 else int(rng.integers(1, 100)))
    big_kinds = ["dev", "strided", "reversed", "torch", "dlpack_obj", "out", "empty"]
    c = {"trail": (), "axis": 0, "include_initial": False}
    c["kinds"] = draw_kinds(rng, caps, big_kinds)
    c["bounds"] = draw_bounds(rng, n, c["kinds"])
    c["reverse"] = bool(rng.random() < 0.4)
    algs = ["auto", "lookback", "lookahead"]
    c["algorithm"] = str(rng.choice(algs))
    if rng.random() < 0.75:
        c["kind"] = "big_scan"
        dt = wchoice(rng, ["int32", "int64", "float32", "float64"], [25, 30, 25, 20])
        kind = np.dtype(dt).kind
        ops = ["sum", "max", "min"] + (["bitwise_xor"] if kind == "i" else [])
        op = wchoice(rng, ops, [50, 20, 15, 15][:len(ops)])
        c["dt"], c["op"] = dt, op
        if kind == "i":
            if op == "sum" and not (dt == "int64" and rng.random() < 0.3):
                x = rng.integers(-1000, 1001, n).astype(dt)
            else:
                info = np.iinfo(dt)
                x = rng.integers(info.min, info.max, n, endpoint=True, dtype=dt)
        elif op == "sum":
            x = rng.integers(-8, 9, n).astype(dt)  # every partial sum exact in float32
        else:
            x = rng.normal(0, 10, n).astype(dt)  # no exact zeros: no signed-zero ties
            if rng.random() < 0.2:
                x[rng.integers(0, n, 3)] = np.nan
        c["x"] = x
        c["exclusive"] = bool(rng.random() < 0.3)
        c["segments"] = (rng.random(n) < rng.choice([1e-4, 1e-3, 0.05])) if op == "sum" and rng.random() < 0.35 \
            else None
        c["initial"] = None
        if rng.random() < 0.3:
            c["initial"] = np.dtype(result_dtype(op, dt, None)).type(int(rng.integers(-5, 6)))
        c["rdt"] = np.dtype(result_dtype(op, dt, None))
        c["dtype"] = None
    else:
        c["kind"] = "big_lr"
        dt = wchoice(rng, ["float32", "float64", "complex64"], [40, 35, 25])
        c["dt"] = dt
        a = rng.choice(np.array([1.0, -1.0, 0.0]), n, p=[0.9, 0.07, 0.03])
        b = rng.integers(-8, 9, n).astype(float)  # |every partial map| <= 8 n: exact in float32
        if np.dtype(dt).kind == "c":
            b = b + 1j * rng.integers(-8, 9, n)
        c["a"], c["b"] = a.astype(dt), b.astype(dt)
        c["a_mode"] = "full"
        c["a_reps"] = [str(rng.choice(["like_b", "dev"])) for _ in range(P)]
        c["initial"] = None if rng.random() < 0.5 else float(rng.integers(-5, 6))
        c["segments"] = (rng.random(n) < rng.choice([1e-4, 1e-3, 0.05])) if rng.random() < 0.35 else None
        c["rdt"] = np.dtype(dt)
        c["dtype"] = None
    c["flagkinds"] = [str(rng.choice(["dev", "host", "view"])) for _ in range(P)]
    c["streams"] = [wchoice(rng, [None, "blocking", "nonblocking"], [7, 1.5, 1.5]) if GPU else None
                    for _ in range(P)]
    c["twice"] = bool(rng.random() < 0.15)
    settle_kinds(c, caps, allow_outx=False)
    return c


def gen_refuse(rng, caps):
    """A call that must be refused on every rank (then the same call without the fault)."""
    c = {"kind": "refuse"}
    dt = wchoice(rng, ["int32", "int64", "float32", "float64"], [1, 1, 1, 1])
    c["dt"] = dt
    c["op"] = str(rng.choice(["sum", "max"]))
    c["trail"] = () if rng.random() < 0.7 else (2,)
    n = int(rng.choice([0, 1, 5, 17, 300]))
    c["kinds"] = draw_kinds(rng, caps, ["dev", "strided", "reversed", "torch", "dlpack_obj"])
    c["bounds"] = draw_bounds(rng, n, c["kinds"])
    c["x"] = values(rng, c["op"], dt, (n, *c["trail"]))
    for k in ("exclusive", "reverse", "include_initial", "compensated"):
        c[k] = False
    c["exclusive"] = bool(rng.random() < 0.3)
    c["segments"] = None
    c["initial"] = None
    c["dtype"] = None
    c["spelling"] = 0
    c["axis"] = 0
    c["algorithm"] = "auto"
    c["rdt"] = np.dtype(result_dtype(c["op"], dt, None))
    faults = ["bad_out_shape", "bad_out_kind", "bad_op", "bad_axis"] + (["readonly_out"] if not GPU else [])
    if P > 1:
        faults += ["dtype", "dtype", "trail", "op"] + (["axis"] if c["trail"] else []) + (["numpy"] * 3 if GPU else [])
    c["fault"] = str(rng.choice(faults))
    c["fault_rank"] = int(rng.integers(P))
    c["flagkinds"] = ["dev"] * P
    c["streams"] = [wchoice(rng, [None, "blocking", "nonblocking"], [7, 1.5, 1.5]) if GPU else None
                    for _ in range(P)]
    c["twice"] = False
    settle_kinds(c, caps)
    return c


def gen_case(seed, i, caps):
    rng = np.random.default_rng([seed, i])
    u = rng.random()
    if u < args.p_big:
        return gen_big(rng, caps)
    if u < args.p_big + 0.07:
        return gen_refuse(rng, caps)
    if u < args.p_big + 0.07 + 0.22:
        return gen_lr(rng, caps)
    return gen_scan(rng, caps)


# ------------------------------------------------------------------------------------------------
# Building this rank's arguments


class Built:
    """What this rank passes, and how to check what comes back."""

    def __init__(self):
        self.obj = None       # the part passed
        self.expect = None    # "cupy" / "torch" / "numpy"
        self.out = None       # out= passed, or None
        self.keep = []        # objects kept alive
        self.inputs = []      # (label, reader) of inputs that must stay unchanged
        self.overlap = False  # out overlaps the input: the input is not checked


def host_of(obj):
    """A NumPy copy of any array the harness made (or a result)."""
    if isinstance(obj, (DLPackOnly, CAIOnly, AIOnly)):
        obj = obj._a
    if GPU and isinstance(obj, cp.ndarray):
        return cp.asnumpy(obj)  # on the current stream, which it synchronises
    if torch is not None and isinstance(obj, torch.Tensor):
        t = obj.detach()
        for name in ("resolve_conj", "resolve_neg"):
            if hasattr(t, name):
                t = getattr(t, name)()
        return t.cpu().numpy()
    if isinstance(obj, np.ndarray):
        return np.array(obj, copy=True)
    return np.asarray(obj)  # (a list of flags)


def to_torch(h):
    return torch.from_numpy(np.array(h, copy=True, order="C")).to(f"cuda:{DEV}")


def make_array(h, kind):
    """(object passed, result kind expected, objects to keep alive) for host values h and a kind."""
    h = np.array(h, copy=True, order="C")
    keep = []
    if kind in ("dev", "empty", "out", "out_strided") or (not GPU and kind in TORCH_KINDS):
        a = xp.asarray(h) if GPU else h
        if kind == "empty":
            a = xp.empty(h.shape, h.dtype)
        return a, expect_of("dev"), keep
    if kind == "strided":
        big = xp.zeros((2 * h.shape[0], *h.shape[1:]), h.dtype)
        big[::2] = xp.asarray(h) if GPU else h
        return big[::2], expect_of(kind), [big]
    if kind == "reversed":
        r = xp.asarray(np.ascontiguousarray(h[::-1])) if GPU else np.ascontiguousarray(h[::-1])
        return r[::-1], expect_of(kind), [r]
    if kind == "fortran":
        return (cp.asfortranarray(cp.asarray(h)) if GPU else np.array(h, order="F")), expect_of(kind), keep
    if kind == "torch":
        return to_torch(h), "torch", keep
    if kind == "torch_strided":
        t = to_torch(h)
        big = torch.zeros((2 * h.shape[0], *h.shape[1:]), dtype=t.dtype, device=t.device)
        big[::2] = t
        return big[::2], "torch", [big]
    if kind == "dlpack_torch":  # a torch tensor made from a CuPy array through DLPack
        a = cp.asarray(h)
        return torch.utils.dlpack.from_dlpack(a), "torch", [a]
    if kind == "dlpack_cupy":  # a CuPy array made from a torch tensor through DLPack
        t = to_torch(h)
        return cp.from_dlpack(t), "cupy", [t]
    if kind == "dlpack_obj":
        a = xp.asarray(h) if GPU else h
        return DLPackOnly(a), expect_of(kind), [a]
    if kind == "cai":
        if GPU:
            a = cp.asarray(h)
            return CAIOnly(a), "cupy", [a]
        return AIOnly(h), "numpy", [h]
    if kind == "outx":
        a = xp.asarray(h) if GPU else h
        return a, expect_of("dev"), keep
    raise ValueError(f"unknown part kind {kind}")


def make_out(shape, dtype, kind):
    if kind == "out_strided":
        big = xp.full((2 * shape[0] + 1, *shape[1:]), 7, dtype)
        return big[1::2]
    return xp.full(shape, 7, dtype)


def make_flags(hf, fk):
    hf = np.array(hf, dtype=bool, copy=True)
    if fk == "list":
        return hf.tolist()
    if fk == "host":
        return hf
    if fk == "view":
        big = xp.zeros(2 * hf.shape[0], bool)
        big[::2] = xp.asarray(hf) if GPU else hf
        return big[::2]
    if fk == "torch" and GPU and torch is not None:
        return to_torch(hf)
    return xp.asarray(hf) if GPU else hf


def rows_of(c, r):
    return c["bounds"][r], c["bounds"][r + 1]


def build_x(c, hx):
    """This rank's part of a scan: the part, its out=, and the inputs to watch."""
    b = Built()
    kind = c["kinds"][R]
    rdt = c["rdt"]
    if kind == "outx":
        hx = hx.astype(rdt)
    b.obj, b.expect, b.keep = make_array(hx, kind)
    if kind in ("out", "out_strided"):
        shp = list(hx.shape)
        if c.get("include_initial") and R == (P - 1 if c.get("reverse") else 0):
            shp[0] += 1
        b.out = make_out(tuple(shp), rdt, kind)
    elif kind == "outx":
        b.out = b.obj
        b.overlap = True
    if not b.overlap:
        b.inputs.append(("x", b.obj, host_of(b.obj)))
    return b


def stream_of(mode):
    if not GPU or mode is None:
        return None
    return cp.cuda.Stream(non_blocking=(mode == "nonblocking"))


def sync_all():
    if GPU:
        cp.cuda.Device().synchronize()
        if torch is not None:
            torch.cuda.synchronize()


# ------------------------------------------------------------------------------------------------
# The calls


def scan_kwargs(c, flags, out):
    kw = {}
    for k in ("exclusive", "reverse", "initial", "dtype", "compensated", "include_initial"):
        if c.get(k) is not None and c.get(k) is not False:
            kw[k] = c[k]
    if flags is not None:
        kw["segments"] = flags
    if out is not None:
        kw["out"] = out
    if c["axis"] != 0:
        kw["axis"] = c["axis"]
    if c.get("algorithm", "auto") != "auto":
        kw["algorithm"] = c["algorithm"]
    return kw


def call_scan(c, part, flags, out, op=None, **extra):
    kw = scan_kwargs(c, flags, out)
    kw.update(extra)
    op = c["op"] if op is None else op
    s = c.get("spelling", 5)
    if s < 3 and op in NAMED and not kw.get("compensated") and not kw.get("include_initial"):
        return getattr(distscan, NAMED[op])(part, comm=comm, **kw)
    if s == 3 and kw.get("exclusive"):
        kw.pop("exclusive")
        return distscan.exclusive_scan(part, SPELL.get(op, [op])[0], comm=comm, **kw)
    spell = SPELL.get(op, [op])
    return distscan.scan(part, spell[s % len(spell)], comm=comm, **kw)


def same_bits(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes():
        return True
    if a.dtype.kind in "fc":  # NaN payloads aside
        return bool(np.array_equal(a, b, equal_nan=True))
    return False


def check_result(res, built):
    """(host copy, [(category, message)]) of a result."""
    msgs = []
    if built.out is not None and res is not built.out:
        msgs.append(("KIND", f"result is not out ({type(res).__name__})"))
    exp = built.expect
    if exp == "numpy" and not isinstance(res, np.ndarray):
        msgs.append(("KIND", f"result is {type(res).__module__}.{type(res).__name__}, not numpy.ndarray"))
    elif exp == "cupy":
        if not isinstance(res, cp.ndarray):
            msgs.append(("KIND", f"result is {type(res).__module__}.{type(res).__name__}, not cupy.ndarray"))
        elif res.device.id != DEV:
            msgs.append(("KIND", f"result on GPU {res.device.id}, the part on GPU {DEV}"))
    elif exp == "torch":
        if not isinstance(res, torch.Tensor):
            msgs.append(("KIND", f"result is {type(res).__module__}.{type(res).__name__}, not torch.Tensor"))
        elif not res.is_cuda or res.device.index != DEV:
            msgs.append(("KIND", f"torch result on {res.device}, the part on cuda:{DEV}"))
    return host_of(res), msgs


def execute(call_once, built, stream_mode, twice):
    """Make the call (collective) on this rank, read the result on the call's stream; with twice,
    make it again and check both results.  Returns (error, host result, messages)."""
    err, host, msgs = None, None, []
    sync_all()  # the inputs were made on the default stream (or torch's): done before any other
    stream = stream_of(stream_mode)
    with (stream if stream is not None else contextlib.nullcontext()):
        res = None
        try:
            res = call_once()
        except Exception as e:  # noqa: BLE001
            err = (type(e).__name__, oneline(e, 300))
        if err is None:
            try:
                host, m = check_result(res, built)
                msgs += m
            except Exception:  # noqa: BLE001
                msgs.append(("HARNESS", "reading the result: " + oneline(traceback.format_exc()[-600:])))
        if twice:
            all_ok = comm.allreduce(err is None, op=MPI.LAND)  # every rank decides alike
            if all_ok:
                try:
                    res2 = call_once()
                except Exception as e:  # noqa: BLE001
                    msgs.append(("TWICE", f"second call raised {type(e).__name__}: {oneline(e, 200)}"))
                    res2 = None
                if res2 is not None and host is not None:
                    try:
                        host2, m = check_result(res2, built)
                        again = host_of(res)
                        if not same_bits(host2, host):
                            msgs.append(("TWICE", "second result differs from the first: "
                                         + diff_where(host2, host)))
                        if built.out is None and not same_bits(again, host):  # (out is written twice)
                            msgs.append(("TWICE", "first result changed by the second call: "
                                         + diff_where(again, host)))
                    except Exception:  # noqa: BLE001
                        msgs.append(("HARNESS", "twice: " + oneline(traceback.format_exc()[-600:])))
        try:
            for label, obj, before in built.inputs:
                now = host_of(obj)
                if not same_bits(now, before):
                    msgs.append(("INPUT", f"{label} changed by the call: " + diff_where(now, before)))
        except Exception:  # noqa: BLE001
            msgs.append(("HARNESS", "re-reading the inputs: " + oneline(traceback.format_exc()[-600:])))
        if stream is not None:
            stream.synchronize()
    return err, host, msgs


def diff_where(a, b) -> str:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return f"{a.dtype}{a.shape} vs {b.dtype}{b.shape}"
    with np.errstate(all="ignore"):
        ne = ~((a == b) | ((a != a) & (b != b))) if a.dtype.kind in "fc" else a != b
    idx = np.argwhere(ne)[:4].tolist()
    return f"at {idx}: {[a[tuple(i)].item() for i in idx]} vs {[b[tuple(i)].item() for i in idx]}"


def prepare(fn):
    """Run this rank's preparation; every rank learns whether all succeeded (no call otherwise, so
    a harness error on one rank never leaves the others waiting in a collective)."""
    try:
        out, perr = fn(), None
    except Exception:  # noqa: BLE001
        out, perr = None, oneline(traceback.format_exc()[-800:])
    ok = comm.allreduce(perr is None, op=MPI.LAND)
    return ok, out, perr


# ------------------------------------------------------------------------------------------------
# Per-case runners: (local work, collective), then rank 0's verdict.  A verdict is a list of
# (category, message).


def gathered_errors(allres, expect_refusal=False):
    """Verdict on the errors of the ranks, or None where no rank raised."""
    errs = [a[0] for a in allres]
    if not any(e is not None for e in errs):
        return None
    types = [e[0] if e else None for e in errs]
    first = next(e for e in errs if e)
    if None in types or len(set(types)) > 1:
        return [("INCONSISTENT", f"ranks raised {types}: {first[0]}: {first[1]}")]
    if expect_refusal:
        return []
    return [("ERROR", f"every rank raised {types[0]}: {first[1]}")]


def local_msgs(allres):
    out = []
    for r, a in enumerate(allres):
        for cat, m in a[2]:
            out.append((cat, f"rank {r}: {m}"))
    return out


def scale_of(c, x, rdt):
    if c["op"] in ("sum", "nansum") and rdt.kind in "fc":
        with np.errstate(all="ignore"):
            a = np.abs(np.nan_to_num(x.astype(np.complex128 if rdt.kind == "c" else np.float64), nan=0,
                                     posinf=0, neginf=0))
            return a.sum() if a.size else 0
    return None


def compare(g, ref, rdt, n, scale):
    """ref.close, except that a complex component's error is measured against the value's modulus
    (a product's real or imaginary part can cancel to far below the modulus, while its rounding
    error stays of the modulus' size; found with the CPU harness: a complex64 cumprod's real part
    -8.8e-05 against the loop's -9.1e-05 in a value of modulus 34)."""
    ok, why = close(g, ref, rdt, n=n, scale=scale)
    if ok or np.dtype(rdt).kind != "c" or "value mismatch" not in why or "nan" in why or "inf" in why:
        return ok, why
    g, ref = np.asarray(g), np.asarray(ref)
    eps = 1e-6 if np.dtype(rdt).itemsize == 8 else 1e-15
    with np.errstate(all="ignore"):
        mag = np.abs(ref.astype(np.complex128))
        bad = np.zeros(ref.shape, bool)
        for part in (np.real, np.imag):
            gc, rc = part(g).astype(np.float64), part(ref).astype(np.float64)
            fin = np.isfinite(gc) & np.isfinite(rc) & np.isfinite(mag)
            tol = 50 * eps * max(n, 1) * (np.abs(rc) + mag + (0 if scale is None else abs(scale)))
            bad |= fin & ~(np.abs(gc - rc) <= tol + 1e-300)
    if not bad.any():
        return True, ""
    return False, why + f" (also against the modulus at {np.argwhere(bad)[:5].tolist()})"


def verdict_scan(c, allres, prefix=""):
    v = gathered_errors(allres)
    if v is not None:
        return [(cat, prefix + m) for cat, m in v] + local_msgs(allres)
    v = local_msgs(allres)
    got = [a[1] for a in allres]
    if any(g is None for g in got):
        return v or [("HARNESS", prefix + "a rank has no result")]
    try:
        ref = seq_scan(c["x"].reshape(-1) if c["axis"] is None else c["x"], c["op"], exclusive=c["exclusive"],
                       initial=c["initial"], reverse=c["reverse"], segments=c["segments"], dtype=c["dtype"],
                       include_initial=c["include_initial"])
        g = np.concatenate([np.asarray(p).reshape(-1, *ref.shape[1:]) for p in got])
        n = max(2, c["x"].shape[0] if c["op"] not in ("max", "min", "nanmax", "nanmin") else 1)
        ok, why = compare(g, ref, ref.dtype, n, scale_of(c, c["x"], ref.dtype))
        if not ok:
            v.append(("MISMATCH", prefix + why))
            if args.show:
                print("got", g, "\nref", ref, flush=True)
    except Exception:  # noqa: BLE001
        v.append(("HARNESS", prefix + "reference: " + oneline(traceback.format_exc()[-600:])))
    return v


def run_scan(i, c):
    lo, hi = rows_of(c, R)

    def prep():
        built = build_x(c, c["x"][lo:hi])
        flags = None
        if c["segments"] is not None:
            flags = make_flags(c["segments"][lo:hi], c["flagkinds"][R])
            if not isinstance(flags, list):
                built.inputs.append(("segments", flags, host_of(flags)))
        return built, flags

    ok, got, perr = prepare(prep)
    if not ok:
        allres = comm.gather((None, None, [("HARNESS", "preparing: " + perr)] if perr else []), root=0)
        return local_msgs(allres) if R == 0 else None
    built, flags = got
    res = execute(lambda: call_scan(c, built.obj, flags, built.out), built, c["streams"][R], c["twice"])
    allres = comm.gather(res, root=0)
    return verdict_scan(c, allres) if R == 0 else None


def build_lr(c, lo, hi):
    kind = c["kinds"][R]
    rdt = c["rdt"]
    hb = c["b"][lo:hi]
    built = Built()
    if kind == "outx":
        hb = hb.astype(rdt)
    built.obj, built.expect, built.keep = make_array(hb, kind)
    if kind in ("out", "out_strided"):
        built.out = make_out(hb.shape, rdt, kind)
    elif kind == "outx":
        built.out = built.obj
        built.overlap = True
    else:
        built.inputs.append(("b", built.obj, host_of(built.obj)))
    rep = c["a_reps"][R]
    dt = np.dtype(c["dt"])
    if rep == "like_b":
        ak = kind if kind not in OUT_KINDS + ("empty",) else "dev"
        a, _, keep = make_array(c["a"][lo:hi], ak)
        built.keep += keep
    elif rep in ("dev", "strided", "full"):
        a, _, keep = make_array(c["a"][lo:hi], "strided" if rep == "strided" else "dev")
        built.keep += keep
    elif rep == "scalar":
        a = complex(c["a0"]) if dt.kind == "c" else float(c["a0"])
    elif rep == "0d":
        a = xp.asarray(np.asarray(c["a0"], dt)) if GPU else np.asarray(c["a0"], dt)
    elif rep == "row":
        a = xp.asarray(np.asarray(c["a0"], dt))
    elif rep == "row1":
        a = xp.asarray(np.asarray(c["a0"], dt).reshape(1, -1))
    elif rep == "bcast":
        a = xp.broadcast_to(xp.asarray(np.asarray(c["a0"], dt)), hb.shape)
    else:
        raise ValueError(rep)
    if not isinstance(a, (float, complex)):
        built.inputs.append(("a", a, host_of(a)))
    flags = None
    if c["segments"] is not None:
        flags = make_flags(c["segments"][lo:hi], c["flagkinds"][R])
        if not isinstance(flags, list):
            built.inputs.append(("segments", flags, host_of(flags)))
    return built, a, flags


def call_lr(c, a, b, flags, out):
    kw = {"comm": comm}
    if c["initial"] is not None:
        kw["initial"] = c["initial"]
    if c["reverse"]:
        kw["reverse"] = True
    if flags is not None:
        kw["segments"] = flags
    if out is not None:
        kw["out"] = out
    if c.get("dtype"):
        kw["dtype"] = c["dtype"]
    if c.get("algorithm", "auto") != "auto":
        kw["algorithm"] = c["algorithm"]
    return distscan.linear_recurrence(a, b, **kw)


LR_NEFF = 64  # the float check's n: the error grows with the depth of the association, not with n


def verdict_lr(c, allres):
    v = gathered_errors(allres)
    if v is not None:
        return v + local_msgs(allres)
    v = local_msgs(allres)
    got = [a[1] for a in allres]
    if any(g is None for g in got):
        return v or [("HARNESS", "a rank has no result")]
    try:
        rdt = c["rdt"]
        wide = np.dtype(np.complex128 if rdt.kind == "c" else np.float64)
        a, b = c["a"].astype(wide), c["b"].astype(wide)
        ini = 0 if c["initial"] is None else np.asarray(c["initial"]).astype(wide)
        ref = seq_recurrence(a, b, initial=ini, reverse=c["reverse"], segments=c["segments"], dtype=wide)
        absref = seq_recurrence(np.abs(a), np.abs(b), initial=np.abs(ini), reverse=c["reverse"],
                                segments=c["segments"], dtype=np.float64)
        scale = float(np.max(absref)) if absref.size else 0.0
        with np.errstate(all="ignore"):
            ref = ref.astype(rdt)
        g = np.concatenate([np.asarray(p) for p in got])
        ok, why = compare(g, ref, rdt, LR_NEFF, scale)
        if not ok:
            v.append(("MISMATCH", why))
            if args.show:
                print("got", g, "\nref", ref, flush=True)
    except Exception:  # noqa: BLE001
        v.append(("HARNESS", "reference: " + oneline(traceback.format_exc()[-600:])))
    return v


def run_lr(i, c):
    lo, hi = rows_of(c, R)
    ok, got, perr = prepare(lambda: build_lr(c, lo, hi))
    if not ok:
        allres = comm.gather((None, None, [("HARNESS", "preparing: " + perr)] if perr else []), root=0)
        return local_msgs(allres) if R == 0 else None
    built, a, flags = got
    res = execute(lambda: call_lr(c, a, built.obj, flags, built.out), built, c["streams"][R], c["twice"])
    allres = comm.gather(res, root=0)
    if R != 0:
        return None
    return verdict_big_lr(c, allres) if c["kind"] == "big_lr" else verdict_lr(c, allres)


# -- the big cases' exact references ---------------------------------------------------------------

def restart_flags(flags, n, reverse):
    """Where each run starts in scan order (array order, or its mirror with reverse=True), as a mask
    in scan order."""
    f = np.zeros(n, bool) if flags is None else np.asarray(flags, bool).copy()
    if n:
        f[0] = True
    if not reverse:
        return f
    ends = np.zeros(n, bool)  # a run's last element in array order starts it in scan order
    if n:
        ends[:-1] = f[1:]
        ends[-1] = True
    return ends[::-1].copy()


def seg_cumsum(v, starts):
    """Inclusive cumulative sum restarting where starts is True (exact for integers, wrapping)."""
    if v.size == 0:
        return v.copy()
    with np.errstate(all="ignore"):
        cs = np.cumsum(v, axis=0, dtype=v.dtype)
        idx = np.flatnonzero(starts)
        before = np.concatenate([np.zeros(1, v.dtype), cs])[idx]  # cs[s - 1], 0 at s = 0
        gid = np.cumsum(starts) - 1
        return cs - before[gid]


def big_ref_scan(c):
    x = c["x"]
    n = x.shape[0]
    op, rdt = c["op"], c["rdt"]
    xs = x[::-1] if c["reverse"] else x
    st = restart_flags(c["segments"], n, c["reverse"])
    init = c["initial"]
    with np.errstate(all="ignore"):
        if op == "sum":
            work = np.dtype(np.int64) if rdt.kind in "iu" else np.dtype(np.float64)
            v = xs.astype(work)
            inc = seg_cumsum(v, st)
            res = inc - v if c["exclusive"] else inc
            if init is not None:
                res = res + work.type(init)
        else:
            uf = UF[op]
            v = xs.astype(rdt)
            if init is not None:
                acc = uf.accumulate(np.concatenate([np.asarray([init], rdt), v]))
                res = acc[:-1] if c["exclusive"] else acc[1:]
            else:
                acc = uf.accumulate(v) if n else v.copy()
                res = np.concatenate([np.asarray([identity(op, rdt)], rdt), acc[:-1]]) if c["exclusive"] and n \
                    else acc
        res = res.astype(rdt)
    return res[::-1].copy() if c["reverse"] else res


def big_ref_lr(c):
    """y[i] = a[i] y[i-1] + b[i], a in {-1, 0, 1}, integer b: exact, vectorised.  In a group that
    starts at s (a run's start, or a zero a), y[i] = S[i] (y[s] + sum_{s<j<=i} b[j] S[j]), with
    S[i] the product of the a after s (+-1)."""
    a, b = c["a"], c["b"]
    n = b.shape[0]
    wide = np.dtype(np.complex128 if np.dtype(c["dt"]).kind == "c" else np.float64)
    a = (a[::-1] if c["reverse"] else a).real.astype(np.float64)
    b = (b[::-1] if c["reverse"] else b).astype(wide)
    rs = restart_flags(c["segments"], n, c["reverse"])
    init = 0.0 if c["initial"] is None else float(c["initial"])
    g = rs | (a == 0)
    ys = b + np.where(rs & (a != 0), a * init, 0.0)  # y at a group's start
    neg = ((a == -1) & ~g).astype(np.int64)
    S = 1.0 - 2.0 * (seg_cumsum(neg, g) % 2)
    terms = np.where(g, ys, b * S)
    y = S * seg_cumsum(terms.astype(wide), g)
    y = y.astype(c["rdt"])
    return y[::-1].copy() if c["reverse"] else y


def exact_compare(g, ref):
    g, ref = np.asarray(g), np.asarray(ref)
    if g.shape != ref.shape or g.dtype != ref.dtype:
        return False, f"{g.dtype}{g.shape} != {ref.dtype}{ref.shape}"
    eq = np.array_equal(g, ref, equal_nan=ref.dtype.kind in "fc")
    return eq, "" if eq else "exact mismatch " + diff_where(g, ref)


def verdict_big(c, allres, reference):
    """The verdict of a 2^20 case: exact against ``reference(c)`` (big_ref_scan or big_ref_lr)."""
    v = gathered_errors(allres)
    if v is not None:
        return v + local_msgs(allres)
    v = local_msgs(allres)
    got = [a[1] for a in allres]
    if any(g is None for g in got):
        return v or [("HARNESS", "a rank has no result")]
    try:
        ok, why = exact_compare(np.concatenate(got), reference(c))
        if not ok:
            v.append(("MISMATCH", why))
    except Exception:  # noqa: BLE001
        v.append(("HARNESS", "reference: " + oneline(traceback.format_exc()[-600:])))
    return v


def verdict_big_scan(c, allres):
    return verdict_big(c, allres, big_ref_scan)


def verdict_big_lr(c, allres):
    return verdict_big(c, allres, big_ref_lr)


def run_big(i, c):
    if c["kind"] == "big_lr":
        return run_lr(i, c)
    lo, hi = rows_of(c, R)

    def prep():
        built = build_x(c, c["x"][lo:hi])
        flags = None
        if c["segments"] is not None:
            flags = make_flags(c["segments"][lo:hi], c["flagkinds"][R])
            built.inputs.append(("segments", flags, host_of(flags)))
        return built, flags

    ok, got, perr = prepare(prep)
    if not ok:
        allres = comm.gather((None, None, [("HARNESS", "preparing: " + perr)] if perr else []), root=0)
        return local_msgs(allres) if R == 0 else None
    built, flags = got
    c2 = dict(c, spelling=5)  # scan(x, "sum"/"max"/..., ...)
    res = execute(lambda: call_scan(c2, built.obj, flags, built.out), built, c["streams"][R], c["twice"])
    allres = comm.gather(res, root=0)
    return verdict_big_scan(c, allres) if R == 0 else None


# -- refusals ------------------------------------------------------------------------------------------

OTHER_DTYPE = {"int32": "int64", "int64": "int32", "float32": "float64", "float64": "float32"}


def run_refuse(i, c):
    lo, hi = rows_of(c, R)
    fault, fr = c["fault"], c["fault_rank"]
    mine = R == fr

    def prep():
        hx = c["x"][lo:hi]
        kind = c["kinds"][R]
        extra = {}
        op = None
        out = None
        if mine and fault == "dtype":
            hx = hx.astype(OTHER_DTYPE[c["dt"]])
        if mine and fault == "trail":
            hx = np.repeat(hx[:, None], 2, axis=1) if hx.ndim == 1 else np.repeat(hx, 3, axis=1)[:, :3]
        keep = []
        if mine and fault == "numpy":
            obj = np.array(hx, copy=True)
        else:
            obj, _, keep = make_array(hx, kind)
        rdt = c["rdt"]
        if mine and fault == "bad_out_shape":
            out = xp.zeros((hx.shape[0] + 1, *hx.shape[1:]), rdt)
        if mine and fault == "bad_out_kind":
            out = np.zeros(hx.shape, rdt) if GPU else np.zeros(hx.shape, rdt).tolist()
        if mine and fault == "readonly_out":
            out = np.zeros(hx.shape, rdt)
            out.setflags(write=False)
        if mine and fault == "op":
            op = {"sum": "prod", "max": "min"}[c["op"]]
        if mine and fault == "bad_op":
            op = "summ"
        if mine and fault == "axis":
            extra["axis"] = None
        if mine and fault == "bad_axis":
            extra["axis"] = 3
        gb = Built()  # the same call without the fault, made right after
        gb.obj, gb.expect, gb.keep = make_array(c["x"][lo:hi], kind)
        gb.keep.append(keep)
        gb.inputs.append(("x", gb.obj, host_of(gb.obj)))
        return obj, out, op, extra, gb

    ok, got, perr = prepare(prep)
    if not ok:
        allres = comm.gather((None, None, [("HARNESS", "preparing: " + perr)] if perr else []), root=0)
        return (local_msgs(allres), None) if R == 0 else (None, None)
    obj, out, op, extra, gb = got
    sync_all()
    stream = stream_of(c["streams"][R])
    err = None
    returned = None
    with (stream if stream is not None else contextlib.nullcontext()):
        try:
            returned = call_scan(c, obj, None, out, op=op, **extra)
        except Exception as e:  # noqa: BLE001
            err = (type(e).__name__, oneline(e, 300))
        if stream is not None:
            stream.synchronize()
    del returned
    allerr = comm.gather((err, None, []), root=0)
    # the same call without the fault, right after: it must be right
    res = execute(lambda: call_scan(c, gb.obj, None, None), gb, c["streams"][R], False)
    allres = comm.gather(res, root=0)
    if R != 0:
        return None, None
    v = []
    types = [e[0][0] if e[0] else None for e in allerr]
    if all(t is None for t in types):
        v.append(("NOREFUSE", f"fault {fault} on rank {fr}: no rank raised"))
    elif None in types:
        v.append(("PARTIAL", f"fault {fault} on rank {fr}: ranks raised {types}: "
                  f"{next(e[0] for e in allerr if e[0])}"))
    elif len(set(types)) > 1:
        v.append(("INCONSISTENT", f"fault {fault} on rank {fr}: ranks raised {types}: "
                  f"{[e[0][1][:120] for e in allerr]}"))
    refused = types[0] if types and len(set(types)) == 1 and types[0] else None
    v += verdict_scan(c, allres, prefix="the good call after the refusal: ")
    return v, refused


# ------------------------------------------------------------------------------------------------
# Reporting

def summary_of_case(c) -> str:
    d = {}
    for k, val in c.items():
        if k in ("x", "a", "b"):
            d[k] = f"<{val.dtype}{tuple(val.shape)}>" if val.size > 12 else val.tolist()
        elif k == "segments" and val is not None:
            d[k] = f"<{int(val.sum())} starts of {val.size}>" if val.size > 40 else np.flatnonzero(val).tolist()
        elif k == "rdt":
            d[k] = str(val)
        elif isinstance(val, np.ndarray):
            d[k] = val.tolist() if val.size <= 12 else f"<{val.dtype}{val.shape}>"
        elif isinstance(val, np.generic):
            d[k] = repr(val)
        else:
            d[k] = val
    return repr(d)


# ------------------------------------------------------------------------------------------------
# Warming the kernel cache (no MPI)


def warm_signature(c) -> tuple:
    """What fixes the kernel modules a case needs, roughly (exclusive and initial left out: the same
    modules); cases of one signature are warmed once, by one warmer (crc32, the same in every process)."""
    keys = ("kind", "dt", "op", "dtype", "axis", "reverse", "compensated", "include_initial", "algorithm", "a_mode")
    sig = tuple((k, str(c.get(k))) for k in keys)
    reps = tuple(sorted(set(c.get("a_reps") or ())))
    return sig + (("trail", bool(c["trail"])), ("segments", c.get("segments") is not None), ("reps", reps))


def warm_call(c):
    """The case's calls on one process (comm None: local), its arrays whole, contiguous."""
    dev = (lambda h: cp.asarray(h)) if GPU else (lambda h: np.array(h, copy=True))
    flags = None if c.get("segments") is None else dev(c["segments"])
    if c["kind"] in ("lr", "big_lr"):
        b = dev(c["b"])
        dt = np.dtype(c["dt"])
        for rep in sorted(set(c["a_reps"])):
            if rep == "scalar":
                a = complex(c["a0"]) if dt.kind == "c" else float(c["a0"])
            elif rep in ("0d", "row", "row1", "bcast"):
                a0 = np.asarray(c["a0"], dt)
                a = dev(a0.reshape(1, -1) if rep == "row1" else a0)
                if rep == "bcast":
                    a = xp.broadcast_to(a, b.shape)
            else:
                a = dev(c["a"])
            call_lr(c, a, b, flags, None)
    else:
        c2 = dict(c, spelling=5) if c["kind"] == "big_scan" else c
        call_scan(c2, dev(c["x"]), flags, None)
    if GPU:
        cp.cuda.Device().synchronize()


def warm_worker():
    import signal

    k, n = (int(v) for v in args.warm_worker.split("/"))
    parent = os.getppid()
    plan = [(int(a), int(b)) for a, b in (item.split(":") for item in args.warm_plan.split(","))]
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))  # (run.sh ends them: report first)
    seen = set()
    try:
        warm_cases(k, n, parent, plan, seen)
    finally:
        print(f"WARM worker {k}/{n}: {len(seen)} kinds of call, {time.monotonic() - T0:.0f} s", flush=True)


def warm_cases(k, n, parent, plan, seen):
    import zlib

    global P
    done, failed, first_error = 0, 0, None
    # the runs' cases in the order of their index, the runs interleaved: every run's first cases first
    for i, (seed, ranks) in ((i, sr) for i in range(args.warm_cases) for sr in plan):
        if time.monotonic() - T0 > args.warm_seconds or os.getppid() != parent:
            break
        P = ranks  # the draws depend on the rank count (kinds, bounds)
        c = gen_case(seed, i, {"torch": False})  # (torch or not: the same draws, the same kernels)
        sig = warm_signature(c)
        if zlib.crc32(repr(sig).encode()) % n != k or sig in seen:
            continue
        seen.add(sig)
        try:
            with np.errstate(all="ignore"):
                warm_call(c)
            done += 1
        except Exception as e:  # noqa: BLE001  (a refused call compiles what it needs all the same)
            failed += 1
            first_error = first_error or f"seed {seed} case {i}: {type(e).__name__}: {oneline(e, 200)}"
    print(f"WARM worker {k}/{n}: went through the plan: {done} calls, {failed} raised ({first_error})",
          flush=True)


def warm_parent():
    import signal
    import subprocess

    n = max(1, args.warm)
    cmd = [sys.executable, os.path.abspath(__file__), "--warm-plan", args.warm_plan, "--warm-cases",
           str(args.warm_cases), "--warm-seconds", str(args.warm_seconds), "--p-big", str(args.p_big)]
    cmd += ["--cpu"] if args.cpu else []
    procs = [subprocess.Popen(cmd + ["--warm-worker", f"{k}/{n}"]) for k in range(n)]

    def stop(signum, frame):
        for q in procs:
            if q.poll() is None:
                q.terminate()
        sys.exit(1)

    signal.signal(signal.SIGTERM, stop)
    rcs = [q.wait() for q in procs]
    print(f"WARM done: {n} workers, exit statuses {rcs}, {time.monotonic() - T0:.0f} s", flush=True)


def main():
    if WARM:
        return warm_worker() if args.warm_worker is not None else warm_parent()
    caps = probe()
    allcaps = comm.allgather(caps)
    caps = {k: all(cc.get(k, False) for cc in allcaps) for k in caps}
    if R == 0:
        vers = f"numpy {np.__version__}"
        if GPU:
            vers += f", cupy {cp.__version__}, GPUs visible {NDEV}, torch {torch.__version__ if torch else 'absent'}"
            name = cp.cuda.runtime.getDeviceProperties(0)["name"]
            vers += f", {name.decode() if isinstance(name, bytes) else name}"
            missing = sorted(f"{k[0]}:{k[1]}" for k, ok in caps.items() if isinstance(k, tuple) and not ok)
            if missing:
                vers += f"; conversions this CuPy/torch cannot make (not drawn): {missing}"
        print(f"START P={P} seed={args.seed} mode={'gpu' if GPU else 'cpu'} seconds={args.seconds} ({vers}) "
              f"[{time.monotonic() - T0:.1f} s]", flush=True)
    stats = {"cases": Counter(), "fail": Counter(), "parts": Counter(), "streams": Counter(), "refused": Counter(),
             "twice": 0}
    nfail = 0
    i = args.first if args.case is None else args.case
    ran = 0
    while True:
        if R == 0:
            elapsed = time.monotonic() - T0
            go = elapsed < args.seconds and (args.max_cases is None or ran < args.max_cases)
            if args.case is not None:
                go = ran == 0
            c = gen_case(args.seed, i, caps) if go else None
        else:
            c = None
        c = comm.bcast(c, root=0)
        if c is None:
            break
        limit = args.case_timeout * (2 if ran < 3 else 1)
        left = DEADLINE - (time.monotonic() - T0)
        why = f"the case limit, {limit:.0f} s" if limit <= left else f"the run's deadline, {DEADLINE:.0f} s"
        limit = max(5.0, min(limit, left))
        if R == 0:
            print(f"CASE {i} START {c['kind']} [{time.monotonic() - T0:.1f} s]", flush=True)
            if args.show:
                print(summary_of_case(c), flush=True)
        WATCHDOG.arm(i, c["kind"], limit, why)
        refused = None
        try:
            if c["kind"] == "scan":
                v = run_scan(i, c)
            elif c["kind"] == "lr":
                v = run_lr(i, c)
            elif c["kind"].startswith("big"):
                v = run_big(i, c)
            else:
                v, refused = run_refuse(i, c)
        except Exception:  # noqa: BLE001  (a harness bug outside the guarded steps)
            v = [("HARNESS", f"rank {R}: " + oneline(traceback.format_exc()[-800:]))]
            print(f"HARNESS-EXCEPTION rank {R} case {i}: {v[0][1]}", flush=True)
        WATCHDOG.cancel()
        if R == 0:
            stats["cases"][c["kind"]] += 1
            stats["twice"] += bool(c.get("twice"))
            for k in c["kinds"]:
                stats["parts"][k] += 1
            for s in c.get("streams", []):
                stats["streams"][s or "default"] += 1
            if refused:
                stats["refused"][refused] += 1
            for cat, msg in v or []:
                nfail += 1
                stats["fail"][cat] += 1
                print(f"FAIL P={P} seed={args.seed} case={i} kind={c['kind']} {cat}: {oneline(msg, 600)} || "
                      f"repro: --seed {args.seed} --case {i}{' --cpu' if not GPU else ''} -n {P} || "
                      f"bounds={c['bounds']} case={summary_of_case(c)}", flush=True)
        i += 1
        ran += 1
    if R == 0:
        def fmt(cn):
            return "{" + ", ".join(f"{k}: {v}" for k, v in sorted(cn.items(), key=lambda kv: str(kv[0]))) + "}"
        print(f"SUMMARY P={P} seed={args.seed} mode={'gpu' if GPU else 'cpu'}: {sum(stats['cases'].values())} cases "
              f"{fmt(stats['cases'])}, twice {stats['twice']}, parts {fmt(stats['parts'])}, "
              f"streams {fmt(stats['streams'])}, refused {fmt(stats['refused'])}; "
              f"failures {nfail} {fmt(stats['fail'])} [{time.monotonic() - T0:.1f} s]", flush=True)


if __name__ == "__main__":
    main()
