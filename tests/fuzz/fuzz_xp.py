#!/usr/bin/env python3
"""Adversarial differential fuzzer for distscan (distributed prefix scans over MPI), NumPy or CuPy.

Run under ``mpiexec -n K`` (K = 1..4 or more) or without MPI:

    mpiexec -n 3 python fuzz_xp.py --xp numpy --seconds 60 --seed 1
    mpiexec -n 4 python fuzz_xp.py --xp cupy  --seconds 300 --seed 1     # ranks may share one GPU

Every rank draws the same sequence of scenarios (seeded by --seed and the iteration number); each
rank's *part* (size, array kind, out=, flags, coefficients) is drawn from a rank-local stream.  Each
scenario is called 2-3 times in a row with fresh data.  After every call, all ranks do the same
collectives (allgather of the outcome, of the inputs' host copies, of the failure lists), whether
the call raised or not.

Reference: the parts are gathered (host copies) to every rank; the global result is computed
sequentially on the concatenation (NumPy ufunc.accumulate per segment, a log-depth segmented scan
when there are many segments, a numba loop for recurrences), then this rank's slice is compared:

* integers, bool, max/min/nanmax/nanmin/gcd/logical: exactly (NaN positions equal);
* float/complex sums: |got - ref| <= eps_acc * (8 sqrt(N) + 32) * M + tiny, M = running sum of |x|
  (of the segment, with |initial|); float16 adds u16*|ref| (sums accumulate in float32);
* float/complex products: the same with M = |ref|;
* logaddexp: eps * (16 sqrt(N) + 64) * (1 + |ref|);
* linear recurrences: eps_acc * (16 sqrt(N) + 64) * M, M the recurrence run on |a|, |b|, |initial|;
* compensated sums: against the exact prefix (integer arithmetic): bit-exact correctly rounded where
  docs/operators.md promises it (float32: consecutive sums < 2^40 units; float64: < 2^98 units),
  else within 2 ulp + (3 m + 32^2) u^2 sum|x|;
* NaN / +inf / -inf positions exactly (near float overflow either is accepted);
* the signs of zeros where result and reference are both zero (``==`` takes -0.0 for +0.0), but for
  linear recurrences and complex products (``_checks_zero_signs`` says why).

Failures print one line each (rank 0), with the seed, iteration and scenario; ``--only I`` re-runs
iteration I alone (same rank count).  Exit code 1 if any failure.
"""

import argparse
import faulthandler
import math
import os
import sys
import threading
import time
import traceback
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))  # the repository
from tests.support.reference import identity as numpy_identity  # noqa: E402

# ----------------------------------------------------------------------------------------------
# command line, MPI
# ----------------------------------------------------------------------------------------------

AP = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
AP.add_argument("--xp", choices=["numpy", "cupy"], default="numpy")
AP.add_argument("--seconds", type=float, default=60.0, help="time budget for starting scenarios")
AP.add_argument("--seed", type=int, default=0)
AP.add_argument("--only", type=int, default=None, help="run only this iteration (reproduce a failure)")
AP.add_argument("--max-iters", type=int, default=None)
AP.add_argument("--big-prob", type=float, default=0.05, help="probability of a scenario with large parts")
AP.add_argument("--max-big", type=int, default=2 ** 21, help="largest part (elements per rank)")
AP.add_argument("--hang-grace", type=float, default=120.0,
                help="faulthandler kills the run this long after --seconds (first GPU compiles are slow)")
AP.add_argument("--call-warn", type=float, default=90.0, help="warn (stderr) when one call takes longer")
AP.add_argument("--max-lines", type=int, default=300, help="most failure lines printed")
AP.add_argument("--no-readonly-out", action="store_true", help="never pass a read-only out= on one rank")
AP.add_argument("--skip-known", action="store_true",
                help="do not generate the known distscan bugs found so far (see KNOWN in the source)")
AP.add_argument("--verbose", action="store_true", help="print every scenario (rank 0)")
ARGS = AP.parse_args()

faulthandler.enable()
faulthandler.dump_traceback_later(ARGS.seconds + ARGS.hang_grace, exit=True)

warnings.simplefilter("ignore", RuntimeWarning)
try:
    warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
except AttributeError:  # NumPy < 1.25
    pass

try:
    from mpi4py import MPI
    COMM = MPI.COMM_WORLD
    PASS_COMM = COMM
except Exception:  # noqa: BLE001 - run without MPI
    MPI = None

    class _Serial:
        rank = 0
        size = 1

        def Get_rank(self):
            return 0

        def Get_size(self):
            return 1

        def allgather(self, x):
            return [x]

        def gather(self, x, root=0):
            return [x]

        def bcast(self, x, root=0):
            return x

        def Barrier(self):
            pass

    COMM = _Serial()
    PASS_COMM = None

RANK = COMM.Get_rank()
SIZE = COMM.Get_size()

import distscan  # noqa: E402

# ----------------------------------------------------------------------------------------------
# optional modules: CuPy, torch, numba
# ----------------------------------------------------------------------------------------------

cp = None
torch = None
if ARGS.xp == "cupy":
    _err = None
    try:
        import cupy as cp  # noqa: F811
        distscan.bind_gpu(PASS_COMM, allow_shared=True)  # collective; agreed on every rank
        _dev = cp.cuda.Device()
        cp.zeros(1).sum().item()
    except Exception as exc:  # noqa: BLE001
        _err = f"{type(exc).__name__}: {exc}"
    _errs = COMM.allgather(_err)
    if any(_errs):
        if RANK == 0:
            print(f"fuzz: cannot start the cupy branch: {_errs}", flush=True)
        sys.exit(2)
    try:
        import torch  # noqa: F811
        if not torch.cuda.is_available():
            torch = None
    except Exception:  # noqa: BLE001
        torch = None
else:
    try:
        import torch  # noqa: F811  (CPU tensors are a part kind on the NumPy branch)
    except Exception:  # noqa: BLE001
        torch = None

try:
    import numba
except Exception:  # noqa: BLE001
    numba = None

XP = ARGS.xp

# ----------------------------------------------------------------------------------------------
# the watchdog: names the scenario of a call that takes long (it does not kill: faulthandler does)
# ----------------------------------------------------------------------------------------------

_CURRENT = {"what": None, "since": None, "warned": False}


def _watchdog():
    while True:
        time.sleep(5)
        since = _CURRENT["since"]
        if since is not None and not _CURRENT["warned"] and time.time() - since > ARGS.call_warn:
            _CURRENT["warned"] = True
            sys.stderr.write(f"fuzz WATCHDOG rank {RANK}: a call has run {time.time() - since:.0f} s "
                             f"(hang?): {_CURRENT['what']}\n")
            sys.stderr.flush()


threading.Thread(target=_watchdog, daemon=True).start()

# ----------------------------------------------------------------------------------------------
# operators: reference ufuncs, identities, result dtypes
# ----------------------------------------------------------------------------------------------

UFUNC = {"sum": np.add, "nansum": np.add, "prod": np.multiply, "nanprod": np.multiply, "max": np.maximum,
         "min": np.minimum, "nanmax": np.fmax, "nanmin": np.fmin, "logaddexp": np.logaddexp, "gcd": np.gcd,
         "logical_and": np.logical_and, "logical_or": np.logical_or, "bitwise_xor": np.bitwise_xor}
SPELLINGS = {"sum": ["sum", np.add, "add", "cumsum"], "prod": ["prod", np.multiply, "multiply", "cumprod"],
             "max": ["max", np.maximum, "maximum"], "min": ["min", np.minimum, "minimum"],
             "nanmax": ["nanmax", np.fmax, "fmax"], "nanmin": ["nanmin", np.fmin, "fmin"],
             "logaddexp": [np.logaddexp, "logaddexp", "logcumsumexp"], "gcd": [np.gcd, "gcd"],
             "logical_and": ["logical_and", np.logical_and], "logical_or": ["logical_or", np.logical_or],
             "bitwise_xor": ["bitwise_xor", np.bitwise_xor, "^"], "nansum": ["nansum"], "nanprod": ["nanprod"]}
NAMED = {"cumsum": "sum", "cumprod": "prod", "cummax": "max", "cummin": "min", "nancumsum": "nansum",
         "nancumprod": "nanprod", "cumulative_sum": "sum", "cumulative_prod": "prod"}
EXACT_OPS = ("max", "min", "nanmax", "nanmin", "gcd", "logical_and", "logical_or", "bitwise_xor")
SUMS = ("sum", "nansum")
PRODS = ("prod", "nanprod")


def identity(opname, dt):
    """An empty prefix's value: NumPy's identity (tests/support/reference.py); the NaN-aware
    operators have their plain twin's, logaddexp -inf."""
    if opname == "logaddexp":
        return np.dtype(dt).type(-np.inf)
    base = {"nansum": "sum", "nanprod": "prod", "nanmax": "max", "nanmin": "min"}.get(opname, opname)
    return numpy_identity(base, dt)


def result_dtype(opname, in_dt, dtype_arg):
    in_dt = np.dtype(in_dt).newbyteorder("=")
    z = np.zeros(1, in_dt)
    if opname.startswith("logical"):
        return np.dtype(bool)
    with np.errstate(all="ignore"):
        if opname in SUMS:
            return np.cumsum(z, dtype=dtype_arg).dtype
        if opname in PRODS:
            return np.cumprod(z, dtype=dtype_arg).dtype
        return UFUNC[opname].accumulate(z, dtype=dtype_arg).dtype


def wide_of(dt):
    dt = np.dtype(dt)
    return np.dtype(np.complex128) if dt.kind == "c" else np.dtype(np.float64) if dt.kind == "f" else dt


# ----------------------------------------------------------------------------------------------
# reference scans on the global array (rows (N, w))
# ----------------------------------------------------------------------------------------------

def _doubling(X, uf, starts):
    """Segmented inclusive scan (Hillis-Steele, log depth): many short segments."""
    v = X.copy()
    f = starts.copy()
    n = len(v)
    d = 1
    while d < n:
        m = ~f[d:]
        nv = v.copy()
        if m.any():
            nv[d:][m] = uf(v[:-d][m], v[d:][m])
        nf = f.copy()
        nf[d:] |= f[:-d]
        v, f = nv, nf
        d *= 2
    return v


def seg_scan(X, uf, starts, *, exclusive=False, init=None, ident=None, reverse=False):
    """Sequential-semantics scan of rows X (N, w) with segment starts (bool (N,), or None: one run):
    ``init`` folded in at every run's start; exclusive: the run's first element gets init/ident;
    reverse: the same runs, each scanned right to left."""
    N = X.shape[0]
    if N == 0:
        return X.copy()
    if starts is None:
        starts = np.zeros(N, bool)
    starts = np.asarray(starts, bool).copy()
    starts[0] = True
    if reverse:
        rid = np.cumsum(starts)[::-1]
        starts = np.concatenate([[True], rid[1:] != rid[:-1]])
        X = X[::-1]
    with np.errstate(all="ignore"):
        bounds = np.flatnonzero(starts)
        if len(bounds) == 1:
            inc = uf.accumulate(X, axis=0, dtype=X.dtype)
        elif len(bounds) <= 256:
            inc = np.empty_like(X)
            ends = list(bounds[1:]) + [N]
            for s, e in zip(bounds, ends):
                inc[s:e] = uf.accumulate(X[s:e], axis=0, dtype=X.dtype)
        else:
            inc = _doubling(X, uf, starts)
        if init is not None:
            inc = uf(np.asarray(init, X.dtype), inc).astype(X.dtype, copy=False)
        if exclusive:
            first = init if init is not None else ident
            res = np.empty_like(inc)
            res[1:] = inc[:-1]
            res[starts] = np.asarray(first).astype(X.dtype)
            inc = res
    return inc[::-1] if reverse else inc


def _rec_loop_py(a, b, restart, init):
    """y[i] = a[i] * y[i-1] + b[i] in order, y[-1] = init, starting again from init where restart."""
    N, w = b.shape
    y = np.empty_like(b)
    prev = init.copy()
    for i in range(N):
        if restart[i]:
            for j in range(w):
                prev[j] = init[j]
        for j in range(w):
            v = a[i, j] * prev[j] + b[i, j]
            y[i, j] = v
            prev[j] = v
    return y


_rec_loop = numba.njit(cache=False)(_rec_loop_py) if numba is not None else _rec_loop_py


def rec_reference(A, B, starts, init, reverse):
    """The sequential recurrence; reversed: the same loop over the mirrored rows, where a segment
    starts again after each flagged row of the original order (the flags mark runs' first rows)."""
    N = B.shape[0]
    st = np.zeros(N, bool) if starts is None else np.asarray(starts, bool).copy()
    if N:
        st[0] = True
    if reverse:
        A, B = A[::-1], B[::-1]
        st = np.concatenate([np.ones(min(N, 1), bool), st[::-1][:-1]])
    with np.errstate(all="ignore"):
        y = _rec_loop(np.ascontiguousarray(A), np.ascontiguousarray(B), st, np.ascontiguousarray(init))
    return y[::-1] if reverse else y


# ----------------------------------------------------------------------------------------------
# array kinds
# ----------------------------------------------------------------------------------------------

class DLHolder:
    """An object with only the DLPack protocol (CuPy or NumPy array inside)."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, *args, **kwargs):
        return self._a.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


class CAIHolder:
    """An object with only ``__cuda_array_interface__``."""

    def __init__(self, a):
        self._a = a
        self.__cuda_array_interface__ = a.__cuda_array_interface__


NP_KINDS = ["np", "np_strided", "np_rev", "list", "readonly", "F2d", "be", "dl_np", "scalar", "torch_cpu"]
NP_WEIGHTS = [40, 10, 8, 5, 6, 4, 3, 5, 3, 3]
CP_KINDS = ["cp", "cp_strided", "cp_rev", "torch", "dl", "cai"]
CP_WEIGHTS = [40, 12, 10, 8, 8, 6]
GPU_KINDS = ("cp", "cp_strided", "cp_rev", "torch", "dl", "cai")


def is_cupy(a):
    return cp is not None and isinstance(a, cp.ndarray)


def is_torch(a):
    return torch is not None and isinstance(a, torch.Tensor)


def to_host(a):
    """A NumPy copy of any array kind (or scalar, list)."""
    if isinstance(a, (DLHolder, CAIHolder)):
        return to_host(a._a)
    if is_cupy(a):
        return cp.asnumpy(a)
    if is_torch(a):
        t = a.detach()
        if t.is_complex():
            t = t.resolve_conj()
        return t.cpu().numpy().copy()
    return np.array(a, copy=True)


def make_obj(kind, host):
    """This rank's part object of ``kind`` holding the values of ``host``."""
    if kind == "np":
        return host.copy()
    if kind == "np_strided":
        return np.repeat(host, 2, axis=0)[::2]
    if kind == "np_rev":
        return np.ascontiguousarray(host[::-1])[::-1]
    if kind == "readonly":
        c = host.copy()
        c.flags.writeable = False
        return c
    if kind == "F2d":
        return np.asfortranarray(host)
    if kind == "be":
        return host.astype(host.dtype.newbyteorder(">"))
    if kind == "list":
        return host.tolist()
    if kind == "scalar":
        return host[0]
    if kind == "dl_np":
        return DLHolder(host.copy())
    if kind == "torch_cpu":
        return torch.from_numpy(host.copy())
    if kind == "cp":
        return cp.asarray(host)
    if kind == "cp_strided":
        return cp.asarray(np.repeat(host, 2, axis=0))[::2]
    if kind == "cp_rev":
        return cp.asarray(np.ascontiguousarray(host[::-1]))[::-1]
    if kind == "torch":
        return torch.from_numpy(host.copy()).to(f"cuda:{cp.cuda.Device().id}")
    if kind == "dl":
        return DLHolder(cp.asarray(host))
    if kind == "cai":
        return CAIHolder(cp.asarray(host))
    raise AssertionError(kind)


def expected_type(kind, backend):
    """(type test, description) of the result of a part of ``kind``."""
    if kind in ("np", "np_strided", "np_rev", "readonly", "F2d", "be", "list", "dl_np"):
        return (lambda r: isinstance(r, np.ndarray)), "numpy.ndarray"
    if kind == "scalar":
        return (lambda r: np.ndim(r) == 0 and not is_cupy(r)), "a scalar"
    if kind == "torch_cpu":
        return (lambda r: is_torch(r) and not r.is_cuda), "a CPU torch.Tensor"
    if kind == "torch":
        return (lambda r: is_torch(r) and r.is_cuda), "a CUDA torch.Tensor"
    return (lambda r: is_cupy(r)), "cupy.ndarray"


# ----------------------------------------------------------------------------------------------
# scenarios
# ----------------------------------------------------------------------------------------------

FUNCS = ["cumsum", "cumprod", "cummax", "cummin", "nancumsum", "nancumprod", "scan", "cumulative_sum",
         "cumulative_prod", "linear_recurrence", "compensated"]
FUNC_W = [12, 6, 6, 5, 5, 3, 16, 4, 3, 11, 5]
DTYPES = ["int32", "int64", "uint8", "float16", "float32", "float64", "complex64", "bool"]
DTYPE_W = [10, 10, 6, 6, 14, 14, 8, 5]
SCAN_OPS = ["sum", "prod", "max", "min", "nanmax", "nanmin", "logaddexp", "gcd", "logical_and", "logical_or",
            "bitwise_xor"]
SCAN_OPS_W = [10, 6, 6, 5, 6, 6, 8, 6, 2, 1, 2]
ALGORITHMS_CPU_SMALL = ["kogge_stone", "brent_kung", "blelloch", "coarsened", "hierarchical", "domino", "lookback",
                        "lookahead", "kogge-stone-double-buffer"]


def pick(rng, items, weights=None):
    if weights is None:
        return items[int(rng.integers(len(items)))]
    p = np.asarray(weights, float)
    return items[int(rng.choice(len(items), p=p / p.sum()))]


def ops_dtypes(fn, op):
    """The input dtypes valid for fn/op."""
    if fn == "linear_recurrence":
        return ["float32", "float64", "complex64", "float16", "int64", "int32"], [30, 30, 20, 6, 5, 4]
    if fn == "compensated":
        return ["float32", "float64", "complex64", "float16"], [40, 35, 20, 5]
    if op in ("max", "min", "nanmax", "nanmin"):
        return [d for d in DTYPES if d != "complex64"], [w for d, w in zip(DTYPES, DTYPE_W) if d != "complex64"]
    if op == "logaddexp":
        return ["float32", "float64"], [1, 1]
    if op == "gcd":
        return ["int32", "int64", "uint8"], [1, 1, 1]
    if op == "bitwise_xor":
        return ["int32", "int64", "uint8", "bool"], [1, 1, 1, 1]
    return DTYPES, DTYPE_W


def dtype_arg_choices(op, dt):
    dt = np.dtype(dt)
    if op.startswith("logical") or op in ("logaddexp", "gcd", "bitwise_xor"):
        return [None]
    if dt.kind in "iub":
        c = ["int64", "float64", "int32"]
        if op in ("max", "min", "nanmax", "nanmin"):
            c = ["int64", "float64"]
        return c
    if dt.kind == "f":
        return ["float64", "float32"] if op not in SUMS + PRODS or dt != np.float16 else ["float32", "float64"]
    return ["complex128"]


def initial_value(rng, opname, rdt, trail):
    """An initial value fitting the result dtype (exact in float16)."""
    rdt = np.dtype(rdt)
    if opname.startswith("logical"):
        v = bool(rng.integers(2))
    elif rdt.kind == "b":
        v = bool(rng.integers(2))
    elif rdt.kind == "u":
        v = int(rng.integers(0, 5)) if opname not in PRODS else int(rng.integers(1, 4))
    elif rdt.kind == "i":
        v = int(rng.integers(-6, 7)) if opname != "gcd" else int(rng.choice([0, 4, 6, -12, 30]))
    elif rdt.kind == "f":
        v = float(rng.integers(-8, 9)) / 4.0
        if opname in PRODS and v == 0 and rng.random() < 0.7:
            v = 1.5
    else:
        v = complex(float(rng.integers(-4, 5)) / 2, float(rng.integers(-4, 5)) / 2)
    if trail and rng.random() < 0.4:  # an array of the trailing shape
        vals = [v] + [type(v)(v * 0 + (i % 3)) if not isinstance(v, bool) else bool(i % 2) for i in range(1, trail)]
        return np.asarray(vals, dtype=rdt)
    return v


def make_scenario(it):
    g = np.random.default_rng([ARGS.seed, it, 12345])
    sc = {"it": it}
    fn = pick(g, FUNCS, FUNC_W)
    sc["fn"] = fn
    if fn == "scan":
        op = pick(g, SCAN_OPS, SCAN_OPS_W)
    elif fn == "compensated":
        op = "sum"
    elif fn == "linear_recurrence":
        op = "rec"
    else:
        op = NAMED[fn]
    sc["op"] = op
    dts, dws = ops_dtypes(fn, op)
    if fn in ("cummax", "cummin"):
        dts, dws = ops_dtypes("scan", "max")
    dt = pick(g, dts, dws)
    sc["dtype"] = dt
    sc["reps"] = int(g.integers(2, 4))
    sc["trail"] = int(pick(g, [2, 3, 1])) if g.random() < 0.12 else 0  # 0: 1-D parts, w>=1: (n, w) rows
    sc["big"] = bool(g.random() < ARGS.big_prob)
    sc["p_flag"] = 0.0
    opts = {}
    plain = fn not in ("linear_recurrence", "compensated")
    cumulative = fn.startswith("cumulative")
    if g.random() < 0.3:
        opts["reverse"] = True
    if plain and not cumulative and g.random() < 0.25:
        opts["exclusive"] = True
    if fn == "compensated" and g.random() < 0.25:
        opts["exclusive"] = True
    if (plain or fn == "linear_recurrence") and g.random() < 0.3:
        sc["p_flag"] = float(pick(g, [0.0005, 0.01, 0.1, 0.5, 1.0, 0.0], [2, 3, 3, 2, 1, 1]))
        opts["segments"] = True
    if fn == "compensated" and g.random() < 0.04:  # refused: compensated and segments
        opts["segments"] = True
        sc["p_flag"] = 0.1
    if (fn == "scan" or cumulative) and not opts.get("exclusive") and not opts.get("segments") and g.random() < 0.35:
        opts["include_initial"] = True
    if plain and g.random() < 0.15:
        choices = dtype_arg_choices(op, dt)
        d = pick(g, choices)
        if d is not None:
            opts["dtype"] = d
    if fn == "linear_recurrence" and dt in ("float32", "float16") and g.random() < 0.08:
        opts["dtype"] = "float64"
    # the result dtype decides initial values and out dtypes
    if fn == "linear_recurrence":
        rdt = np.dtype(opts.get("dtype", dt))
    elif fn == "compensated":
        rdt = np.dtype(dt)
    else:
        try:
            rdt = result_dtype(op, dt, opts.get("dtype"))
        except Exception:  # noqa: BLE001 - an invalid dtype= (kept: the call must refuse on every rank)
            rdt = np.dtype(dt)
    sc["rdt"] = str(rdt)
    if g.random() < 0.35:
        if fn == "compensated":
            opts["initial"] = float(g.integers(-64, 65)) / 16 if rdt.kind == "f" else complex(
                float(g.integers(-8, 9)) / 4, float(g.integers(-8, 9)) / 4)
        elif fn == "linear_recurrence":
            opts["initial"] = initial_value(g, "sum", rdt, sc["trail"])
        else:
            opts["initial"] = initial_value(g, op, rdt, sc["trail"])
    sc["initial_differs"] = bool(SIZE > 1 and "initial" in opts and g.random() < 0.12)
    if sc["trail"] and cumulative:
        opts["axis"] = 0                 # required for parts of more than one dimension
    elif sc["trail"] and plain and not opts.get("segments") and not opts.get("include_initial") and g.random() < 0.15:
        opts["axis"] = None
    elif not sc["trail"] and plain and g.random() < 0.05:
        opts["axis"] = None if not cumulative else 0
    if "initial" in opts and np.ndim(opts["initial"]) and "axis" in opts and opts["axis"] is None:
        opts["initial"] = opts["initial"].reshape(-1)[0].item()   # axis=None: the trailing shape is ()
    # exchange / algorithm options
    if g.random() < 0.08:
        opts["strategy"] = pick(g, ["scan_then_add", "reduce_then_scan"])
        if ARGS.skip_known and opts["strategy"] == "scan_then_add" and "float16" in (dt, opts.get("dtype")):
            opts["strategy"] = "reduce_then_scan"   # KNOWN: float16 scan_then_add rounds twice
    if SIZE > 1 and g.random() < 0.08:
        opts["hierarchy"] = "node"
        opts["node_size"] = int(g.integers(1, SIZE + 1))
    if g.random() < 0.05:
        opts["algorithm"] = pick(g, ALGORITHMS_CPU_SMALL)
        if XP == "numpy":
            sc["big"] = False
    sc["backend"] = None
    sc["mix"] = False
    if XP == "cupy":
        r = g.random()
        if r < 0.07:
            sc["mix"] = True             # NumPy parts on some ranks, CuPy on the others
        elif r < 0.13:
            sc["mix"] = True
            sc["backend"] = "cuda"       # documented: a NumPy array with backend="cuda" runs on the GPU
        elif r < 0.17:
            sc["backend"] = "cpu"        # documented: moves the data there and back
    elif g.random() < 0.05:
        sc["backend"] = "cpu"
    sc["p_out"] = float(pick(g, [0.0, 0.4, 1.0], [6, 3, 1]))
    if fn == "cumulative_sum" or fn == "cumulative_prod":
        sc["p_out"] = 0.0 if opts.get("include_initial") else sc["p_out"]
    sc["specials"] = bool(np.dtype(dt).kind == "f" and g.random() < 0.2 and fn != "linear_recurrence")
    if "dtype" in opts and np.dtype(opts["dtype"]).kind in "iub":
        sc["specials"] = False
    sc["stream"] = bool(XP == "cupy" and g.random() < 0.2)
    sc["fpe"] = bool(XP == "numpy" and g.random() < 0.03)
    sc["readonly_out"] = bool(SIZE > 1 and not ARGS.no_readonly_out and g.random() < 0.015)
    sc["spell"] = bool(g.random() < 0.5)
    # a rank that deviates in one field that must agree (every rank must refuse)
    sc["mismatch"] = None
    if SIZE > 1 and g.random() < 0.05:
        field = pick(g, ["exclusive", "reverse", "op", "dtype_arg", "strategy"])
        if field == "exclusive" and (opts.get("include_initial") or not plain or cumulative):
            field = "reverse"
        if field == "op" and fn != "scan":
            field = "reverse"
        sc["mismatch"] = (field, int(g.integers(SIZE)))
    sc["opts"] = opts
    sc["val_style"] = int(g.integers(4))
    sc["gcd_factor"] = int(pick(g, [1, 2, 6, 12]))
    sc["inplace"] = bool(g.random() < 0.08)
    sc["out_reuse"] = bool(g.random() < 0.5)
    return sc


def describe(sc):
    keep = {k: v for k, v in sc.items() if k not in ("opts",)}
    opts = {k: (v if not isinstance(v, np.ndarray) else v.tolist()) for k, v in sc["opts"].items()}
    keep["opts"] = opts
    return repr(keep)


# ----------------------------------------------------------------------------------------------
# per-rank parts
# ----------------------------------------------------------------------------------------------

def part_plan(sc):
    """This rank's part choices (rank-local stream): size, kind, out, flags kind, coefficient kind."""
    h = np.random.default_rng([ARGS.seed, sc["it"], 777, RANK])
    p = {}
    fn, op = sc["fn"], sc["op"]
    if sc["big"]:
        r = h.random()
        n = 0 if r < 0.15 else int(h.integers(0, 50)) if r < 0.3 else int(h.integers(2 ** 16, ARGS.max_big + 1))
    else:
        r = h.random()
        n = 0 if r < 0.12 else int(h.integers(1, 17)) if r < 0.42 else int(h.integers(17, 3001)) if r < 0.93 \
            else int(h.integers(3001, 20001))
    if op == "logaddexp" and sc["dtype"] == "float32":
        n = min(n, 5000)
    if sc["opts"].get("algorithm") and XP == "numpy":
        n = min(n, 3000)
    if numba is None and fn == "linear_recurrence":
        n = min(n, 20000)
    # kind
    if XP == "numpy":
        kinds, weights = list(NP_KINDS), list(NP_WEIGHTS)
        if torch is None:
            i = kinds.index("torch_cpu")
            del kinds[i], weights[i]
        kind = pick(h, kinds, weights)
    else:
        kinds, weights = list(CP_KINDS), list(CP_WEIGHTS)
        if torch is None:
            i = kinds.index("torch")
            del kinds[i], weights[i]
        kind = pick(h, kinds, weights)
        if sc["mix"] and h.random() < 0.5:
            kind = "np"
    if ARGS.skip_known and fn.startswith("cumulative") and kind in ("dl", "cai", "dl_np"):
        kind = "cp" if XP == "cupy" else "np"   # KNOWN: cumulative_* reads np.ndim(holder) == 0
    trail = sc["trail"]
    if kind == "F2d" and not trail:
        kind = "np"
    if kind == "list" and (n == 0 or sc["dtype"] not in ("int64", "float64", "bool")):
        kind = "np"
    if kind == "be" and np.dtype(sc["dtype"]).itemsize == 1:
        kind = "np"
    if kind == "scalar":
        o = sc["opts"]
        if trail or fn in ("linear_recurrence",) or o.get("segments") or o.get("include_initial") or n == 0 \
                or ("axis" in o and o["axis"] is None):
            kind = "np"
        else:
            n = 1
    if kind in ("torch", "torch_cpu") and np.dtype(sc["dtype"]) == np.uint8 and op in SUMS + PRODS \
            and "dtype" not in sc["opts"] and h.random() < 0.7:
        kind = "cp" if XP == "cupy" else "np"  # a uint64 result: torch's support is thin (kept sometimes)
    p["n"] = n
    p["kind"] = kind
    # out=
    rdt = np.dtype(sc["rdt"])
    out_ok = kind in ("np", "np_strided", "np_rev", "readonly", "F2d", "be", "cp", "cp_strided", "cp_rev",
                      "dl", "cai", "list", "dl_np")
    p["out"] = None
    if out_ok and h.random() < sc["p_out"] and sc["opts"].get("axis", 0) is not None:
        odt = rdt
        # another out dtype: NumPy computes an accumulate in out's dtype (and so does distscan), so only
        # where that agrees with the result dtype cast into out: no integer wrap-around, no complex
        # arithmetic on real infinities, no gcd/logaddexp
        # (max/min: the identity of an exclusive or include_initial first element is out's own:
        # inf for a float out of an integer scan)
        other_ok = (op in SUMS + ("max", "min", "nanmax", "nanmin") and sc["val_style"] != 0
                    and not (rdt.kind in "iu" and op in SUMS and sc["big"])
                    and not (op not in SUMS and (sc["opts"].get("exclusive") or sc["opts"].get("include_initial"))))
        if other_ok and h.random() < 0.3:
            wider = {"i": ["int64", "float64"], "u": ["uint64", "float64"], "b": ["int8", "int64", "float32"],
                     "f": ["float64", "float32"], "c": ["complex128"]}[rdt.kind]
            cand = pick(h, wider)
            if np.can_cast(rdt, cand, "same_kind") and not (rdt.kind == "f" and np.dtype(cand).kind == "f" and
                                                            np.dtype(cand).itemsize < rdt.itemsize):
                odt = np.dtype(cand)
        p["out"] = {"dtype": str(odt), "strided": bool(h.random() < 0.15)}
    p["inplace"] = bool(sc["inplace"] and kind in ("np", "cp") and p["out"] is None
                        and sc["opts"].get("axis", 0) is not None and not sc["opts"].get("include_initial")
                        and np.dtype(sc["dtype"]) == rdt and rdt == np.dtype(sc["rdt"]))
    p["readonly_out"] = bool(sc["readonly_out"] and XP == "numpy" and kind in ("np",) and h.random() < 0.5
                             and p["out"] is None and not p["inplace"])
    # flags, coefficients
    p["flags_kind"] = pick(h, ["bool", "bool", "bool", "int8", "list"] if XP == "numpy" else
                           ["cupy", "cupy", "numpy", "int8cupy"])
    if kind in ("np", "np_strided", "np_rev", "readonly", "F2d", "be", "list", "dl_np", "scalar", "torch_cpu"):
        if p["flags_kind"] in ("cupy", "int8cupy"):
            p["flags_kind"] = "numpy"
    if fn == "linear_recurrence":
        r = h.random()
        p["coef"] = "scalar" if r < 0.12 else "row" if (r < 0.2 and trail) else "same"
        p["coef_host"] = bool(XP == "cupy" and kind in ("cp", "cp_strided", "cp_rev", "dl", "cai")
                              and h.random() < 0.15)
    p["fpe"] = bool(sc["fpe"] and h.random() < 0.5)
    p["stream"] = bool(sc["stream"] and h.random() < 0.7)
    return p


def gen_values(sc, p, rep, rdt):
    """This rank's host values (and flags, coefficients) for repetition ``rep``."""
    rng = np.random.default_rng([ARGS.seed, sc["it"], 999, RANK, rep])
    n, w = p["n"], sc["trail"]
    shape = (n, w) if w else (n,)
    dt = np.dtype(sc["dtype"])
    op, fn = sc["op"], sc["fn"]
    style = sc["val_style"]
    N_est = max(1, n * SIZE)
    if fn == "compensated":
        x = compensated_values(rng, shape, dt, style)
    elif dt.kind == "b":
        x = rng.random(shape) < (0.5 if style < 2 else 0.9)
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        if op == "gcd":
            x = sc["gcd_factor"] * rng.integers(-20, 21, shape)
            x = np.abs(x) if dt.kind == "u" else x
            x = np.clip(x, 0, 255) if dt == np.uint8 else x
        elif op in PRODS or fn == "linear_recurrence":
            x = rng.choice([-2, -1, 1, 1, 2, 3, 0], size=shape, p=[.15, .2, .25, .2, .1, .08, .02])
            if dt.kind == "u":
                x = np.abs(x)
        elif style == 0:
            x = rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True)  # wraps
        else:
            lo = 0 if dt.kind == "u" else -100
            x = rng.integers(lo, 101, shape)
        x = np.asarray(x).astype(dt)
    else:
        real = np.float64
        if op in PRODS:
            sig = min(0.3, 1.0 / math.sqrt(N_est))
            x = np.exp(rng.standard_normal(shape) * sig) * rng.choice([-1.0, 1.0], size=shape, p=[0.2, 0.8])
        elif op == "logaddexp":
            x = rng.standard_normal(shape) * 3
        elif fn == "linear_recurrence":
            x = rng.standard_normal(shape)
        elif style == 1:
            x = rng.random(shape)                                # positive: the magnitude grows
        elif style == 2:
            x = rng.integers(-8, 9, shape) / 4.0                 # exact small values
        else:
            x = rng.standard_normal(shape) * (1.0 if dt.itemsize > 2 else 0.5)
        if dt.kind == "c":
            x = x + 1j * (rng.standard_normal(shape) if op not in PRODS else
                          rng.standard_normal(shape) * min(0.3, 1.0 / math.sqrt(N_est)))
        if op in PRODS and style == 1:
            x[rng.random(shape) < 0.002] = 0.0                   # zeros absorb (exactly 0, also complex)
        x = x.astype(dt)
        _ = real
    # the same draw on every rank (a carry of -0.0 needs every part before it so)
    zeros = np.random.default_rng([ARGS.seed, sc["it"], 777, rep]).random() < 0.15
    if dt.kind in "fc" and x.size and zeros:
        # signed zeros (NaN and the specials below may join them): a part of -0.0 only, or mostly
        # (a sum stays -0.0 while every item is -0.0, what a carry must keep, and a NaN read as +0.0
        # ends), or a few zeros of either sign
        flat = x.reshape(-1)
        r = rng.random()
        flat[rng.random(x.size) < (1.0 if r < 0.4 else 0.9 if r < 0.7 else 0.05)] = \
            -0.0 if r < 0.7 else pick(rng, [0.0, -0.0])
    if sc["specials"] and x.size and dt.kind in "fc":
        k = int(rng.integers(1, 4))
        idx = rng.integers(0, x.size, k)
        choices = [np.nan] if op in ("nansum", "nanprod") or fn == "compensated" and dt.kind == "c" else \
            [np.nan, np.inf, -np.inf]
        if op in ("nanmax", "nanmin", "nansum", "nanprod") or rng.random() < 0.3:
            choices = choices + [np.nan, np.nan]
        flat = x.reshape(-1)
        for i in idx:
            flat[i] = pick(rng, choices)
    if (op in ("nansum", "nanprod", "nanmax", "nanmin")) and dt.kind in "fc" and x.size and rng.random() < 0.7:
        flat = x.reshape(-1)
        flat[rng.random(x.size) < 0.05] = np.nan
    flags = None
    if sc["opts"].get("segments"):
        flags = rng.random(n) < sc["p_flag"]
        if n and rng.random() < 0.3:
            # the edges the kernels and the exchange join: the part's first or last row (a carry
            # whose last item ends a segment), and rows on warp and tile boundaries, with the row
            # after each (reversed, a run of one ends where a warp starts: found on the H200,
            # 2026-11-25, where the block scan put the identity on the right of such an end)
            if rng.random() < 0.5:
                flags[0] = True
            if rng.random() < 0.5:
                flags[-1] = True
            if rng.random() < 0.5:
                step = int(pick(rng, [128, 256, 512, 1024, 2048, 4096]))
                flags[::step] = True
                flags[1::step] = True
    coef = None
    if fn == "linear_recurrence":
        ashape = shape if p["coef"] == "same" else ()
        if p["coef"] == "row":
            ashape = (w,)
        a = rng.uniform(-1.0, 1.0, ashape)
        if style == 1:
            a = np.abs(a) * 0.05 + 0.95
        elif style == 2 and np.ndim(a):
            a[rng.random(ashape) < 0.05] = 0.0
            a[rng.random(ashape) < 0.05] = 1.0
        if dt.kind in "iu":
            a = rng.integers(-2, 3, ashape)
        if dt.kind == "c":
            a = a * np.exp(1j * rng.uniform(0, 6.28, ashape))
        if p["coef"] == "scalar":
            # a Python scalar (weak in NEP 50: does not change the dtype)
            coef = complex(a) if dt.kind == "c" else int(a) if dt.kind in "iu" else float(a)
        else:
            coef = np.asarray(a).astype(dt)
    return x, flags, coef


def compensated_values(rng, shape, dt, style):
    """Items m * 2^s in units (2^-12 for float32 and float16, 2^-30 for float64): exact prefixes in int64."""
    def units_of(sh):
        if dt in (np.float64, np.complex128):
            m = rng.integers(-2 ** 20, 2 ** 20, sh)
            s = rng.integers(0, 19, sh)
        elif dt == np.float16:
            m = rng.integers(-2 ** 4, 2 ** 4, sh)
            s = rng.integers(0, 6, sh)
        else:
            m = rng.integers(-2 ** 10, 2 ** 10, sh) if style != 3 else rng.integers(-2 ** 20, 2 ** 20, sh)
            s = rng.integers(0, 25, sh) if style != 3 else rng.integers(0, 18, sh)
        return (m << s).astype(np.int64)
    unit = comp_unit(dt)
    if np.dtype(dt).kind == "c":
        return (units_of(shape) * 2.0 ** unit + 1j * (units_of(shape) * 2.0 ** unit)).astype(dt)
    return (units_of(shape) * 2.0 ** unit).astype(dt)


def comp_unit(dt):
    dt = np.dtype(dt)
    return -30 if dt in (np.float64, np.complex128) else -12


# ----------------------------------------------------------------------------------------------
# the global reference and this rank's comparison
# ----------------------------------------------------------------------------------------------

def rows_of(a, w):
    a = np.asarray(a)
    return a.reshape(a.shape[0], w if w else 1) if a.ndim else a.reshape(1, 1)


def reference(sc, parts, flags, coefs, inits):
    """The global expected result: dict(mode, values, mag, rdt, ...), rows (N', w)."""
    fn, op, opts = sc["fn"], sc["op"], sc["opts"]
    w = sc["trail"] or 1
    axis_none = "axis" in opts and opts["axis"] is None
    if axis_none:
        X = np.concatenate([np.asarray(q).reshape(-1) for q in parts]).reshape(-1, 1)
        w = 1
    else:
        X = np.concatenate([rows_of(q, sc["trail"]) for q in parts], axis=0)
    X = X.astype(X.dtype.newbyteorder("="), copy=False)
    N = X.shape[0]
    reverse = bool(opts.get("reverse"))
    starts = None
    if flags[0] is not None:
        starts = np.concatenate([np.asarray(f).astype(bool).reshape(-1) for f in flags])
    # the initial value used: rank 0's (reverse: the last rank's)
    init = inits[-1] if reverse else inits[0]
    info = {"N": N, "w": w, "axis_none": axis_none}
    if fn == "linear_recurrence":
        rdt = np.dtype(sc["rdt"])
        wide = wide_of(rdt) if rdt.kind in "fc" else np.dtype(np.int64)
        # a Python scalar a is cast to the accumulator (float32 for float16), an array a to the dtype
        acc = np.dtype(np.float32) if rdt == np.float16 else rdt
        A = np.concatenate([np.broadcast_to(np.asarray(a).astype(rdt), np.shape(b)).reshape(np.shape(b)[0], w)
                            if np.ndim(a) else np.full((np.shape(b)[0], w), np.asarray(a).astype(acc))
                            for a, b in zip(coefs, parts)], axis=0)
        with np.errstate(all="ignore"):
            Ar = A.astype(wide)
            Br = X.astype(rdt).astype(wide)
            iv = np.zeros(w, wide) if init is None else np.broadcast_to(
                np.asarray(init).astype(rdt).astype(wide), (w,)).copy()
            Y = rec_reference(Ar, Br, starts, iv, reverse)
            if rdt.kind in "fc":
                M = rec_reference(np.abs(Ar).astype(np.float64), np.abs(Br).astype(np.float64), starts,
                                  np.abs(iv).astype(np.float64), reverse)
                info.update(mode="float", values=Y, mag=M, rdt=rdt, tol="rec")
            else:
                info.update(mode="exact", values=Y.astype(rdt), rdt=rdt)
        return info
    if fn == "compensated":
        return comp_reference(sc, X, init, info)
    rdt = np.dtype(sc["rdt"])
    in_dt = X.dtype
    dtype_arg = opts.get("dtype")
    # lift: NaN to the identity for nansum/nanprod (before the dtype= cast), logical: truth values
    Xl = X
    if op in ("nansum", "nanprod") and in_dt.kind in "fc":
        Xl = np.where(np.isnan(X), 0 if op == "nansum" else 1, X).astype(in_dt)
    with np.errstate(all="ignore"):
        if op.startswith("logical"):
            Xc = (Xl != 0)
        else:
            Xc = Xl.astype(dtype_arg) if dtype_arg is not None else Xl
            Xc = Xc.astype(rdt)
    uf = UFUNC[op]
    exact = rdt.kind in "biu" or op in EXACT_OPS
    cdt = rdt if exact else wide_of(rdt)
    with np.errstate(all="ignore"):
        Xw = Xc.astype(cdt)
        iv = None if init is None else np.asarray(init).astype(rdt).astype(cdt)
        if iv is not None and op.startswith("logical"):
            iv = np.asarray(iv).astype(bool)
        ident = identity(op, cdt)
        Y = seg_scan(Xw, uf, starts, exclusive=bool(opts.get("exclusive")), init=iv, ident=ident, reverse=reverse)
        if opts.get("include_initial"):
            first = np.broadcast_to(np.asarray(iv if iv is not None else ident).astype(cdt), (1, w))
            Y = np.concatenate([Y, first]) if reverse else np.concatenate([first, Y])
        if exact:
            info.update(mode="exact", values=Y.astype(rdt), rdt=rdt, op=op)
            return info
        if op in SUMS:
            absx = np.where(np.isfinite(Xw), np.abs(Xw), 0).astype(np.float64)
            ai = None if iv is None else np.where(np.isfinite(iv), np.abs(iv), 0).astype(np.float64)
            M = seg_scan(absx, np.add, starts, exclusive=bool(opts.get("exclusive")), init=ai,
                         ident=np.float64(0), reverse=reverse)
            if opts.get("include_initial"):
                first = np.broadcast_to(np.asarray(0.0 if ai is None else ai), (1, w))
                M = np.concatenate([M, first]) if reverse else np.concatenate([first, M])
            info.update(mode="float", values=Y, mag=M, rdt=rdt, tol="sum")
        elif op in PRODS:
            info.update(mode="float", values=Y, mag=np.abs(Y), rdt=rdt, tol="sum", prod=True)
        else:  # logaddexp
            info.update(mode="float", values=Y, mag=1.0 + np.abs(np.where(np.isfinite(Y), Y, 0)), rdt=rdt, tol="lae")
    return info


def comp_reference(sc, X, init, info):
    """Compensated sums: the exact prefix (int64 units) correctly rounded, and the bound."""
    opts = sc["opts"]
    rdt = np.dtype(sc["rdt"])
    unit = comp_unit(rdt)
    reverse, exclusive = bool(opts.get("reverse")), bool(opts.get("exclusive"))
    if rdt.kind == "c":
        parts = [np.real(X), np.imag(X)]
        iparts = [None, None] if init is None else [complex(init).real, complex(init).imag]
        fdt = np.dtype(np.float32) if rdt == np.complex64 else np.dtype(np.float64)
    else:
        parts = [X]
        iparts = [None if init is None else float(init)]
        fdt = rdt
    outs = []
    for P, ip in zip(parts, iparts):
        P = P.astype(np.float64)
        special = ~np.isfinite(P)
        units = np.where(special, 0, P * 2.0 ** -unit).astype(np.int64)
        spec = np.where(special, P, 0.0)
        iu = None if ip is None else np.int64(int(ip * 2.0 ** -unit))
        pref = seg_scan(units, np.add, None, exclusive=exclusive, init=iu, ident=np.int64(0), reverse=reverse)
        mag = seg_scan(np.abs(np.where(special, 0, P)), np.add, None, exclusive=exclusive,
                       init=None if ip is None else abs(ip), ident=np.float64(0), reverse=reverse)
        cnt = seg_scan(np.ones_like(P), np.add, None, exclusive=exclusive, init=None, ident=np.float64(0),
                       reverse=reverse)
        with np.errstate(all="ignore"):
            cls = seg_scan(spec, np.add, None, exclusive=exclusive, init=None, ident=np.float64(0),
                           reverse=reverse)
        # the sign of a zero sum: -0.0 exactly where every item so far (the initial's too) is -0.0;
        # an exclusive scan's first element is the identity, +0.0
        negz = ((P == 0) & np.signbit(P)).astype(np.int64)
        ineg = None if ip is None else np.int64(ip == 0 and math.copysign(1.0, ip) < 0)
        negzero = seg_scan(negz, np.minimum, None, exclusive=exclusive, init=ineg, ident=np.int64(0),
                           reverse=reverse) == 1
        # largest |sum of consecutive items| (units, the initial counted as an item), per column
        seq = units[::-1] if reverse else units
        if iu is not None:
            seq = np.concatenate([np.full((1,) + seq.shape[1:], iu, np.int64), seq])
        cs = np.concatenate([np.zeros((1,) + seq.shape[1:], np.int64), np.cumsum(seq, axis=0)])
        span = int((cs.max(axis=0) - cs.min(axis=0)).max()) if cs.size else 0
        exactwide = pref.astype(np.float64) * 2.0 ** unit
        if fdt == np.float16:
            rounded = exactwide.astype(np.float16)
            bound = np.spacing(np.abs(rounded)).astype(np.float64) + (3 * cnt + 1024) * 2.0 ** -48 * mag
            must_exact = False
        else:
            rounded = pref.astype(fdt) * fdt.type(2.0 ** unit)  # int64 -> float is correctly rounded; 2^k exact
            u = float(np.finfo(fdt).eps) / 2
            bound = 2 * np.spacing(np.abs(rounded)).astype(np.float64) + (3 * cnt + 1024) * u * u * mag
            must_exact = span < 2 ** (40 if fdt == np.float32 else 98)
        outs.append(dict(rounded=rounded, exact=exactwide, bound=bound, cls=cls, must_exact=must_exact, span=span,
                         negzero=negzero))
    info.update(mode="comp", comp=outs, rdt=rdt)
    return info


def local_slice(info, sizes, include_initial, reverse, axis_none, trail):
    """Rows of this rank in the global result."""
    extra = [0] * SIZE
    if include_initial:
        extra[SIZE - 1 if reverse else 0] = 1
    start = 0
    for r in range(RANK):
        start += sizes[r] + extra[r]
    return slice(start, start + sizes[RANK] + extra[RANK])


def _cls(a):
    a = np.asarray(a)
    if a.dtype.kind == "c":
        return np.where(np.isnan(a), 1, np.where(np.isinf(a), 2, 0))
    return np.where(np.isnan(a), 1, np.where(np.isposinf(a), 2, np.where(np.isneginf(a), 3, 0)))


def _zero_signs(got, want):
    """True where ``got`` and ``want`` are not both zero, or are zeros of the same sign (complex: each
    component); ``==`` takes -0.0 for +0.0.  NaN is not zero: NaN positions are compared by class."""
    got, want = np.asarray(got), np.asarray(want)
    if got.dtype.kind not in "fc" or want.dtype.kind not in "fc":
        return np.ones(np.broadcast(got, want).shape, bool)
    ok = np.ones(np.broadcast(got, want).shape, bool)
    for part in ((np.real, np.imag) if got.dtype.kind == "c" or want.dtype.kind == "c" else (np.real,)):
        g, w = part(got), part(want)
        ok &= ~((g == 0) & (w == 0)) | (np.signbit(g) == np.signbit(w))
    return ok


def _checks_zero_signs(info) -> bool:
    """Whether a float result's zeros must have the reference's signs.  Not for linear recurrences:
    the maps compose in another order than the sequential loop (``(a2*a1)*y + (a2*b1 + b2)``), so
    the sign of an exact zero depends on the split as the rounding does, and with ``initial=0`` the
    first ``y`` is ``b`` itself (docs/operators.md), where the loop's ``a*0 + b`` turns -0.0 into
    +0.0.  Not for complex products: docs/api.md says their zeros' signs may differ past a rank
    boundary (a part's product starts from 1+0j).  Every other float scan is a sum, a product, a
    max or min or logaddexp, whose zero's sign does not depend on the association (a sum is -0.0
    exactly where all its items are; a product's sign is the product of the signs)."""
    if info.get("tol") == "rec":
        return False
    if info.get("prod") and np.dtype(info["rdt"]).kind == "c":
        return False
    return True


def compare(got, info, sl, out_dtype, shape_expected):
    """Problems (list of strings) of this rank's host result against the global reference."""
    probs = []
    got = np.asarray(got)
    want_dt = np.dtype(out_dtype) if out_dtype is not None else info["rdt"]
    if got.dtype != want_dt:
        probs.append(f"dtype {got.dtype}, expected {want_dt}")
        return probs
    if got.shape != tuple(shape_expected):
        probs.append(f"shape {got.shape}, expected {tuple(shape_expected)}")
        return probs
    w = info["w"]
    g = got.reshape(-1, w) if got.size else got.reshape(0, w)
    mode = info["mode"]
    rdt = info["rdt"]
    if mode == "exact":
        e = info["values"][sl]
        with np.errstate(all="ignore"):
            e = e.astype(want_dt)
        if want_dt.kind in "fc":
            ok = (g == e) | (_cls(g) == _cls(e)) & (_cls(g) != 0)
            if info.get("op") not in ("max", "min", "nanmax", "nanmin"):
                # max and min of zeros of both signs: not compared.  IEEE leaves the sign open, and
                # NumPy's own depends on its loop (np.fmin(0.0, -0.0) is 0.0, np.fmin.accumulate of
                # [0.0, -0.0] ends in -0.0; x86's SIMD min returns the second operand); the CPU's
                # segmented loops and the GPU kernels keep the first
                ok &= _zero_signs(g, e)
        else:
            ok = g == e
        if not ok.all():
            probs.append(_first_bad(ok, "values differ (exact)", got=g, expected=e))
        return probs
    if mode == "comp":
        return compare_comp(g, info, sl, want_dt)
    # float / complex against the wide reference with a tolerance
    Nt = max(1, info["N"])
    real_r = np.dtype(np.float32) if rdt == np.complex64 else np.dtype(np.float64) if rdt.kind == "c" else rdt
    acc = np.dtype(np.float32) if real_r == np.float16 else real_r
    eps = float(np.finfo(acc).eps)
    if info["tol"] == "sum":
        rtol = eps * (8 * math.sqrt(Nt) + 32)
    else:
        rtol = eps * (16 * math.sqrt(Nt) + 64)
    wv = info["values"][sl]
    mag = info["mag"][sl]
    tiny = float(np.finfo(real_r).smallest_subnormal) * 2 + (float(np.finfo(real_r).tiny) * 4
                                                             if info["tol"] == "rec" else 0.0)
    if out_dtype is not None:
        ro = np.dtype(out_dtype)
        ro = np.dtype(np.float32) if ro == np.complex64 else np.dtype(np.float64) if ro.kind == "c" else ro
        if ro.kind == "f" and ro.itemsize < real_r.itemsize:
            real_r = ro
    if info["tol"] == "sum" and sc_is_prod(info):
        tiny += float(np.finfo(real_r).tiny) * 4     # products that reach the subnormal range
    allowed = rtol * np.where(np.isfinite(mag), mag, 0) + tiny
    if real_r == np.float16 or (np.dtype(rdt) == np.float16):
        allowed = allowed + 2.0 ** -11 * np.abs(np.where(np.isfinite(wv), wv, 0)) + 2.0 ** -24
    # classes
    with np.errstate(all="ignore"):
        gw = g.astype(np.complex128 if g.dtype.kind == "c" or wv.dtype.kind == "c" else np.float64)
        gc = _cls(gw)
        ec = _cls(wv)
        fmax = float(np.finfo(real_r).max)
        near = (ec == 0) & (np.abs(wv) > fmax * (1 - 8 * rtol)) if wv.dtype.kind != "c" else np.zeros(wv.shape, bool)
        err = np.abs(gw - wv)
        fin = (gc == 0) & (ec == 0)
        ok_fin = ~fin | (err <= allowed) | (gw == wv)
        ok_cls = (gc == ec) | near & ((gc == 0) | (gc == (np.where(wv > 0, 2, 3) if wv.dtype.kind != "c" else 2)))
        ok = ok_fin & ok_cls
        if _checks_zero_signs(info):
            ok &= _zero_signs(g, wv)
    if not ok.all():
        probs.append(_first_bad(ok, f"values off (rtol {rtol:.2e} x magnitude; zeros' signs compared)", got=g,
                                expected=wv, allowed=np.broadcast_to(allowed, wv.shape)))
    return probs


def sc_is_prod(info):
    return info.get("prod", False)


def compare_comp(g, info, sl, want_dt):
    probs = []
    comps = info["comp"]
    gparts = [np.real(g), np.imag(g)] if g.dtype.kind == "c" else [g]
    for name, gp, c in zip(["real", "imag"], gparts, comps):
        r = c["rounded"][sl]
        ex = c["exact"][sl]
        cls = c["cls"][sl]
        b = c["bound"][sl]
        gp64 = gp.astype(np.float64)
        special = ~np.isfinite(cls) | (cls != 0)
        with np.errstate(all="ignore"):
            okspec = np.where(special, _cls(gp64) == _cls(cls), True)
            if c["must_exact"] and want_dt in (np.float32, np.float64, np.complex64, np.complex128) \
                    and gp.dtype == r.dtype:
                okval = special | (gp == r)
                what = "not correctly rounded"
            else:
                okval = special | (np.abs(gp64 - ex) <= b * (1.0001)) | (gp64 == ex)
                what = "past the bound 2ulp + (3m+R^2)u^2 sum|x|"
        # zeros' signs: == takes -0.0 for +0.0.  A compensated sum of -0.0 items is -0.0, as NumPy's
        # cumsum (found 2026-11-25; mended on the CPU and in kernels/util/states.cuh 2026-11-26)
        oksign = special | (gp != 0) | (ex != 0) | (np.signbit(gp) == c["negzero"][sl])
        ok = okspec & okval & oksign
        if not ok.all():
            probs.append("compensated " + name + ": " + _first_bad(ok, what + " (zeros' signs compared)", got=gp,
                                                                   exact=ex, rounded=r))
    return probs


def _first_bad(ok, what, **columns):
    """``N what; first at local rows [...]: got [...], expected [...]``: the first four rows where
    ``ok`` is False, with each column's values there."""
    bad = np.argwhere(~ok)[:4]
    shown = ", ".join(f"{k} {[a[tuple(b)] for b in bad]}" for k, a in columns.items())
    return f"{int((~ok).sum())} {what}; first at local rows {bad[:, 0].tolist()}: {shown}"


# ----------------------------------------------------------------------------------------------
# one call
# ----------------------------------------------------------------------------------------------

STATS = {"scenarios": 0, "calls": 0, "fail": 0, "errors_agreed": 0, "checked": 0}
REFUSALS = {}   # (fn, must, error type, message head) -> count (rank 0)
FAIL_LINES = []


def op_spelling(sc, p):
    op = sc["op"]
    h = np.random.default_rng([ARGS.seed, sc["it"], 4242, RANK])
    sp = SPELLINGS.get(op, [op])
    return pick(h, sp) if sc["spell"] else sp[0]


def build_kwargs(sc, p, x_obj, flags_host, rdt):
    """Keywords of this rank's call (with this rank's deviations)."""
    opts = sc["opts"]
    kw = {}
    if PASS_COMM is not None and (sc["it"] + RANK) % 3:
        kw["comm"] = PASS_COMM
    for k in ("exclusive", "reverse", "include_initial", "strategy", "hierarchy", "node_size", "algorithm"):
        if k in opts:
            kw[k] = opts[k]
    if "axis" in opts:
        kw["axis"] = opts["axis"]
    if "dtype" in opts:
        kw["dtype"] = opts["dtype"]
    if sc["fn"] == "compensated":
        kw["compensated"] = True
    if sc["backend"] is not None:
        kw["backend"] = sc["backend"]
    if "initial" in opts:
        init = opts["initial"]
        if sc["initial_differs"] and RANK != (SIZE - 1 if opts.get("reverse") else 0):
            h = np.random.default_rng([ARGS.seed, sc["it"], 555, RANK])
            init = initial_value(h, sc["op"] if sc["fn"] not in ("linear_recurrence", "compensated") else "sum",
                                 rdt, 0)
            if sc["fn"] == "compensated":
                init = float(h.integers(-8, 9)) / 4 if rdt.kind == "f" else complex(float(h.integers(-8, 9)) / 4, 0)
            if np.shape(init) != np.shape(opts["initial"]) or np.array_equal(init, opts["initial"]):
                init = _differ(opts["initial"])
        kw["initial"] = init
    if flags_host is not None:
        fk = p["flags_kind"]
        if fk == "bool" or fk == "numpy":
            kw["segments"] = flags_host.copy()
        elif fk == "int8":
            kw["segments"] = flags_host.astype(np.int8)
        elif fk == "list":
            kw["segments"] = flags_host.tolist()
        elif fk == "cupy":
            kw["segments"] = cp.asarray(flags_host)
        elif fk == "int8cupy":
            kw["segments"] = cp.asarray(flags_host.astype(np.int8))
        if p["kind"] == "torch" and fk in ("cupy", "int8cupy") and np.random.default_rng(
                [ARGS.seed, sc["it"], 31, RANK]).random() < 0.5:
            kw["segments"] = torch.as_tensor(flags_host, device=f"cuda:{cp.cuda.Device().id}")
    mm = sc["mismatch"]
    if mm is not None and mm[1] == RANK:
        field = mm[0]
        if field == "exclusive":
            kw["exclusive"] = not kw.get("exclusive", False)
        elif field == "reverse":
            kw["reverse"] = not kw.get("reverse", False)
        elif field == "dtype_arg":
            kw["dtype"] = "complex128" if rdt.kind != "c" else "float64"
            if sc["fn"] == "compensated" or sc["fn"] == "linear_recurrence":
                kw["dtype"] = "complex128" if rdt.kind != "c" else "float32"
        elif field == "strategy":
            kw["strategy"] = "scan_then_add" if kw.get("strategy") != "scan_then_add" else "reduce_then_scan"
    return kw


def _differ(v):
    """A value unlike ``v`` of the same type and shape."""
    if isinstance(v, np.ndarray):
        w = v.copy()
        w.flat[0] = not w.flat[0] if w.dtype.kind == "b" else w.flat[0] + 1
        return w
    if isinstance(v, bool):
        return not v
    return v + 1


def run_call(sc, p, rep, held):
    """One collective call and its checks.  Returns this rank's problems (list of (category, msg))."""
    probs = []
    fn, opts = sc["fn"], sc["opts"]
    rdt = np.dtype(sc["rdt"])
    kind = p["kind"]
    stream = None
    local_prep_err = None
    x_obj = out = a_obj = None
    x_host = flags_host = coef_host = None
    kw = {}
    try:
        x_host, flags_host, coef_host = gen_values(sc, p, rep, rdt)
        if p["stream"] and cp is not None:
            stream = cp.cuda.Stream(non_blocking=True)
            stream.use()
        x_obj = make_obj(kind, x_host)
        kw = build_kwargs(sc, p, x_obj, flags_host, rdt)
        if fn == "linear_recurrence":
            if isinstance(coef_host, np.ndarray):
                if kind in GPU_KINDS and not p.get("coef_host"):
                    a_obj = to_kind_like(kind, coef_host)
                else:
                    a_obj = coef_host.copy()
            else:
                a_obj = coef_host
    except Exception as exc:  # noqa: BLE001
        local_prep_err = f"{type(exc).__name__}: {exc} {traceback.format_exc(limit=4)[-400:]!r}"
    # every rank learns whether every rank could prepare its part (else all skip the call alike)
    pre = COMM.allgather((p["n"], None if local_prep_err else "ok"))
    if any(q[1] is None for q in pre):
        # a fuzzer problem: keep the ranks in step, report it
        if local_prep_err:
            probs.append(("FUZZER", f"preparing the call failed: {local_prep_err}"))
        _restore_stream(stream)
        return probs, None
    include_initial = bool(opts.get("include_initial"))
    n_extra = 1 if include_initial and RANK == (SIZE - 1 if opts.get("reverse") else 0) else 0
    if "axis" in opts and opts["axis"] is None:
        res_shape = (x_host.size + n_extra,)
    elif kind == "scalar":
        res_shape = ()
    else:
        res_shape = (x_host.shape[0] + n_extra,) + x_host.shape[1:]
    try:
        if p["out"] is not None:
            odt = np.dtype(p["out"]["dtype"])
            out = held.get("out") if sc["out_reuse"] else None
            if out is None or tuple(out.shape) != res_shape:
                out = alloc_out(kind, res_shape, odt, p["out"]["strided"])
                held["out"] = out
            poison(out)
            kw["out"] = out
        elif p["inplace"]:
            kw["out"] = x_obj
        if p["readonly_out"] and "out" not in kw and kind == "np":
            ro = np.zeros(res_shape, rdt)
            ro.flags.writeable = False
            kw["out"] = ro
    except Exception as exc:  # noqa: BLE001
        probs.append(("FUZZER", f"allocating out failed: {type(exc).__name__}: {exc}"))
    x_before = safe_host(x_obj)
    flags_before = None if kw.get("segments") is None else safe_host(kw["segments"])
    coef_before = safe_host(a_obj) if isinstance(a_obj, (np.ndarray,)) or is_cupy(a_obj) or is_torch(a_obj) \
        else None
    # ---- the call
    err = None
    res = None
    what = f"it={sc['it']} rep={rep} fn={fn} op={sc['op']} dtype={sc['dtype']} kind={kind} n={p['n']}"
    _CURRENT.update(what=what, since=time.time(), warned=False)
    t0 = time.time()
    try:
        ctx = np.errstate(all="raise") if p["fpe"] else _Null()
        with ctx:
            if fn == "scan":
                res = distscan.scan(x_obj, op_spelling(sc, p) if not (sc["mismatch"] and sc["mismatch"][0] == "op"
                                                                    and sc["mismatch"][1] == RANK)
                                    else ("prod" if sc["op"] != "prod" else "sum"), **kw)
            elif fn == "compensated":
                if RANK % 2 and "comm" in kw:
                    res = distscan.cumsum(x_obj, **kw)
                else:
                    res = distscan.scan(x_obj, "sum", **kw)
            elif fn == "linear_recurrence":
                kw.pop("exclusive", None)
                res = distscan.linear_recurrence(a_obj, x_obj, **kw)
            else:
                res = getattr(distscan, fn)(x_obj, **kw)
        if stream is not None:
            stream.synchronize()
    except Exception as exc:  # noqa: BLE001
        err = (type(exc).__name__, str(exc))
        if ARGS.verbose:
            traceback.print_exc()
    dt_call = time.time() - t0
    _CURRENT.update(since=None)
    if dt_call > ARGS.call_warn:
        sys.stderr.write(f"fuzz: rank {RANK}: slow call {dt_call:.0f} s: {what}\n")
    STATS["calls"] += 1
    # ---- outcome on every rank
    errs = COMM.allgather(err)
    # ---- the inputs on every rank (host copies), always gathered
    x_for_ref = x_host if kind != "scalar" else np.asarray(x_host).reshape(1)
    gathered = COMM.allgather((x_for_ref, flags_host, coef_host, kw.get("initial", None),
                               p["kind"], p["out"] is not None))
    parts = [q[0] for q in gathered]
    flags_all = [q[1] for q in gathered]
    coefs = [q[2] for q in gathered]
    inits = [q[3] for q in gathered]
    if any(e is not None for e in errs):
        if len(set(errs)) != 1 or any(e is None for e in errs):
            desc = "; ".join(f"r{r}: {'OK' if e is None else e[0] + ': ' + e[1][:160]}" for r, e in enumerate(errs))
            if RANK == 0:
                probs.append(("INCONSISTENT-ERROR", desc))
        else:
            STATS["errors_agreed"] += 1
            sc.setdefault("_errors", []).append(errs[0])
            key = (fn, sc["_must"], errs[0][0], errs[0][1][:90])
            REFUSALS[key] = (REFUSALS.get(key, (0, sc["it"]))[0] + 1, REFUSALS.get(key, (0, sc["it"]))[1])
            if sc["_must"] == "succeed" and RANK == 0:
                probs.append(("UNEXPECTED-ERROR", f"every rank raised {errs[0][0]}: {errs[0][1][:300]}"))
        # inputs untouched even after a failure
        probs += check_untouched(kw, x_obj, x_before, flags_before, coef_before, a_obj)
        _restore_stream(stream)
        return probs, None
    if sc["_must"] == "fail" and RANK == 0:
        probs.append(("EXPECTED-REFUSAL", "every rank succeeded where the call must be refused"))
    if sc["_must"] == "fail":
        _restore_stream(stream)
        return probs, None
    if sc["_must"] == "either-noref":
        _restore_stream(stream)
        return probs, None
    # ---- the reference
    try:
        info = reference(sc, parts, flags_all, coefs, inits)
    except Exception as exc:  # noqa: BLE001
        probs.append(("FUZZER", f"reference failed: {type(exc).__name__}: {exc} "
                                f"{traceback.format_exc(limit=3)[-400:]!r}"))
        _restore_stream(stream)
        return probs, None
    axis_none = info["axis_none"]
    if axis_none:
        sizes_l = [int(np.asarray(q).size) for q in parts]
    else:
        sizes_l = [int(rows_of(q, sc["trail"]).shape[0]) for q in parts]
    STATS["checked"] += 1
    sl = local_slice(info, sizes_l, include_initial, bool(opts.get("reverse")), axis_none, sc["trail"])
    # ---- the result's kind, identity with out, values
    try:
        test, tdesc = expected_type(kind, sc["backend"])
        if "out" in kw and kw["out"] is not None:
            if res is not kw["out"]:
                probs.append(("WRONG-RESULT-OBJECT", f"out= given but the result is not out "
                                                      f"({type(res).__name__})"))
        elif not test(res):
            probs.append(("WRONG-RESULT-TYPE", f"result is {type(res).__module__}.{type(res).__name__}, expected {tdesc}"))
        if is_cupy(res) and cp is not None and res.device.id != cp.cuda.Device().id:
            probs.append(("WRONG-DEVICE", f"result on device {res.device.id}"))
        got = to_host(res)
        if got.dtype.byteorder not in ("=", "|") and not (got.dtype.byteorder == "<" and sys.byteorder == "little"):
            got = got.astype(got.dtype.newbyteorder("="))
        out_dt = np.dtype(p["out"]["dtype"]) if p["out"] is not None and "out" in kw else None
        if p["inplace"]:
            out_dt = None
        exp_shape = res_shape
        for m in compare(got, info, sl, out_dt, exp_shape):
            probs.append(("WRONG-VALUE", m))
        if "out" in kw and kw["out"] is not None and res is not kw["out"]:
            for m in compare(to_host(kw["out"]), info, sl, out_dt, exp_shape):
                probs.append(("WRONG-OUT", m))
        if res is not None and not ("out" in kw and sc["out_reuse"]) and not p["inplace"]:
            held.setdefault("results", []).append((rep, res, got.copy()))
    except Exception as exc:  # noqa: BLE001
        probs.append(("CHECK-ERROR", f"{type(exc).__name__}: {exc} {traceback.format_exc(limit=4)[-500:]!r}"))
    if not p["inplace"]:
        probs += check_untouched(kw, x_obj, x_before, flags_before, coef_before, a_obj)
    _restore_stream(stream)
    return probs, None


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def _restore_stream(stream):
    if stream is not None and cp is not None:
        try:
            stream.synchronize()
            cp.cuda.Stream.null.use()
        except Exception:  # noqa: BLE001
            pass


def safe_host(a):
    try:
        if a is None or isinstance(a, (int, float, complex, bool)):
            return a
        return to_host(a)
    except Exception:  # noqa: BLE001
        return None


def to_kind_like(kind, host):
    if kind in ("cp", "cp_strided", "cp_rev", "dl", "cai"):
        return cp.asarray(host)
    if kind == "torch":
        return torch.from_numpy(np.ascontiguousarray(host)).to(f"cuda:{cp.cuda.Device().id}")
    return host.copy()


def alloc_out(kind, shape, dt, strided):
    if kind in ("cp", "cp_strided", "cp_rev", "dl", "cai"):
        if strided and len(shape):
            return cp.zeros((shape[0] * 2,) + tuple(shape[1:]), dt)[::2]
        return cp.zeros(shape, dt)
    if strided and len(shape):
        return np.zeros((shape[0] * 2,) + tuple(shape[1:]), dt)[::2]
    return np.zeros(shape, dt)


def poison(out):
    dt = np.dtype(out.dtype)
    v = np.nan if dt.kind in "fc" else 77 if dt.kind in "iu" else True
    out[...] = v


def check_untouched(kw, x_obj, x_before, flags_before, coef_before, a_obj):
    probs = []
    try:
        if x_before is not None and not isinstance(x_obj, (int, float, complex)) and x_obj is not kw.get("out"):
            now = to_host(x_obj)
            if not _same_bits(now, x_before):
                probs.append(("INPUT-MODIFIED", "the input part changed during the call"))
        if flags_before is not None:
            now = to_host(kw["segments"])
            if not _same_bits(now, flags_before):
                probs.append(("INPUT-MODIFIED", "the segment flags changed during the call"))
        if coef_before is not None:
            now = to_host(a_obj)
            if not _same_bits(now, coef_before):
                probs.append(("INPUT-MODIFIED", "the coefficients changed during the call"))
    except Exception as exc:  # noqa: BLE001
        probs.append(("CHECK-ERROR", f"reading the inputs back: {type(exc).__name__}: {exc}"))
    return probs


def _same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind in "fc":
        return bool(np.all((a == b) | (np.isnan(a) & np.isnan(b))))
    return bool(np.array_equal(a, b))


# ----------------------------------------------------------------------------------------------
# scenarios: what must happen
# ----------------------------------------------------------------------------------------------

def classify(sc, plans):
    """'succeed', 'fail', 'either' (a consistent refusal or a right result), 'either-noref'."""
    fn, opts, op = sc["fn"], sc["opts"], sc["op"]
    must = "succeed"
    kinds = [q["kind"] for q in plans]
    if sc["mismatch"] is not None:
        # strategy: segmented, state and float-product scans force reduce_then_scan (may agree)
        # dtype= on one rank of a logical operator: the result is bool whatever dtype= says (may agree)
        if sc["mismatch"][0] == "dtype_arg" and op.startswith("logical"):
            return "either"
        return "either" if sc["mismatch"][0] == "strategy" else "fail"
    if fn == "compensated" and opts.get("segments"):
        return "fail"
    if sc["initial_differs"] and (opts.get("segments") or fn == "linear_recurrence"):
        return "either-noref" if fn != "linear_recurrence" else "fail"
    if any(q["readonly_out"] for q in plans):
        return "fail"
    # out= of another dtype than the result's: NumPy (and distscan) accumulate in out's dtype, so
    # ranks whose outs differ in dtype have different accumulators: refused on every rank, or right
    rdt = sc["rdt"]
    accs = {q["out"]["dtype"] if q["out"] is not None else rdt for q in plans}
    if len(accs) > 1:
        must = "either"
    # dtypes a named function or dtype= cannot take
    try:
        if fn not in ("linear_recurrence", "compensated"):
            result_dtype(op, sc["dtype"], opts.get("dtype"))
    except Exception:  # noqa: BLE001
        must = "either"
    cpu = [k in ("np", "np_strided", "np_rev", "list", "readonly", "F2d", "be", "dl_np", "scalar", "torch_cpu")
           for k in kinds]
    if XP == "cupy" and any(cpu) and not all(cpu) and sc["backend"] is None:
        must = "either"   # mixed backends: refused on every rank (backend differs) or right
    if any(k in ("be", "scalar", "torch_cpu", "dl_np", "list") for k in kinds):
        must = "either"
    if any(q["flags_kind"] in ("int8", "int8cupy") for q in plans) and opts.get("segments"):
        must = "either"
    if any(q.get("coef_host") for q in plans):
        must = "either"
    if any(q["fpe"] for q in plans):
        must = "either"
    if opts.get("algorithm"):
        must = "either"
    if any(k in ("torch", "torch_cpu") for k in kinds) and (np.dtype(sc["rdt"]) == np.uint64):
        must = "either"
    if sc["stream"]:
        pass
    if opts.get("axis", 0) is None and (sc["trail"] == 0 and fn.startswith("cumulative")):
        pass
    if any(q["out"] is not None and (q["out"]["strided"] or q["kind"] in ("dl", "cai", "list", "dl_np")) for q in plans):
        must = "either" if must == "succeed" else must
    if any(q["inplace"] for q in plans):
        must = "either" if must == "succeed" else must
    if fn == "linear_recurrence" and "initial" in opts and np.ndim(opts["initial"]) and opts.get("segments"):
        pass
    return must


def run_scenario(it):
    err = None
    sc = p = None
    try:
        sc = make_scenario(it)
        p = part_plan(sc)
    except Exception as exc:  # noqa: BLE001 - a fuzzer bug: every rank skips the scenario alike
        err = f"{type(exc).__name__}: {exc} {traceback.format_exc(limit=4)[-400:]!r}"
    plans = COMM.allgather(None if err else p)
    errs = COMM.allgather(err)
    if any(e is not None for e in errs):
        STATS["scenarios"] += 1
        if RANK == 0:
            STATS["fail"] += 1
            print(f"FAIL [FUZZER] seed={ARGS.seed} it={it}: making the scenario failed: {errs}", flush=True)
        return None
    try:
        sc["_must"] = classify(sc, plans)
    except Exception:  # noqa: BLE001 - a fuzzer bug (same on every rank): accept a refusal
        sc["_must"] = "either"
    if ARGS.verbose and RANK == 0:
        print(f"it {it}: {describe(sc)} parts={[(q['kind'], q['n'], q['out']) for q in plans]}", flush=True)
    held = {}
    all_probs = []
    for rep in range(sc["reps"]):
        try:
            probs, _ = run_call(sc, p, rep, held)
        except Exception as exc:  # noqa: BLE001 - a fuzzer bug; the collectives above are all or nothing
            probs = [("FUZZER", f"{type(exc).__name__}: {exc} {traceback.format_exc(limit=5)[-600:]!r}")]
            # keep in step: run_call's collectives happen before any code that may raise, mostly;
            # a desynchronisation here would hang: faulthandler reports it.
        for c, m in probs:
            all_probs.append((rep, c, m))
    # held results must not have been overwritten by later calls
    for rep, res, snap in held.get("results", []):
        try:
            now = to_host(res)
            if not _same_bits(now, snap):
                all_probs.append((rep, "HELD-RESULT-CHANGED", "a result kept by the caller changed after later calls"))
        except Exception as exc:  # noqa: BLE001
            all_probs.append((rep, "CHECK-ERROR", f"re-reading a held result: {exc}"))
    held.clear()
    gathered = COMM.gather(all_probs, root=0)
    STATS["scenarios"] += 1
    if RANK == 0:
        nfail = 0
        parts_desc = [(q["kind"], q["n"], None if q["out"] is None else q["out"]["dtype"] +
                       ("/strided" if q["out"]["strided"] else ""), q["flags_kind"] if sc["opts"].get("segments")
                       else None, "inplace" if q["inplace"] else None, "ro-out" if q["readonly_out"] else None,
                       "fpe" if q["fpe"] else None) for q in plans]
        for r, lst in enumerate(gathered):
            for rep, c, m in lst:
                nfail += 1
                if len(FAIL_LINES) < ARGS.max_lines:
                    line = (f"FAIL [{c}] seed={ARGS.seed} it={it} rep={rep} rank={r}: {m[:700]} | scenario="
                            f"{describe(sc)} parts={parts_desc} | repro: mpiexec -n {SIZE} python "
                            f"{os.path.abspath(__file__)} --xp {XP} --seed {ARGS.seed} --only {it}")
                    FAIL_LINES.append(line)
                    print(line, flush=True)
        STATS["fail"] += nfail
    return sc


def main():
    t_start = time.time()
    deadline = t_start + ARGS.seconds
    it = 0 if ARGS.only is None else ARGS.only
    n_done = 0
    while True:
        if ARGS.only is not None:
            go = n_done == 0
        else:
            go = time.time() < deadline and (ARGS.max_iters is None or n_done < ARGS.max_iters)
        go = COMM.bcast(go, root=0)
        if not go:
            break
        run_scenario(it)
        n_done += 1
        it += 1
    fails = COMM.allreduce(STATS["fail"]) if hasattr(COMM, "allreduce") else STATS["fail"]
    if RANK == 0:
        print(f"fuzz detail: {STATS['checked']} calls checked against the reference, {STATS['errors_agreed']} calls "
              f"refused alike on every rank; refusals (fn, expected, type, message): ", flush=True)
        for key, (cnt, first) in sorted(REFUSALS.items(), key=lambda kv: -kv[1][0])[:25]:
            print(f"   {cnt:5d} x {key} (first it={first})", flush=True)
        print(f"fuzz: {STATS['scenarios']} scenarios, {STATS['calls']} calls, {STATS['fail']} failures, "
              f"xp={XP}, ranks={SIZE}", flush=True)
        sys.stdout.flush()
    faulthandler.cancel_dump_traceback_later()
    return 1 if fails else 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(code)
