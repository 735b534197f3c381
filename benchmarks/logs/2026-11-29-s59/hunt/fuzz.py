import sys, os, traceback, pickle
from mpi4py import MPI
import numpy as np, distscan
sys.path.insert(0, "/tmp/hunt")
from ref import seq_scan, seq_recurrence, close, result_dtype, UF
comm = MPI.COMM_WORLD; R = comm.rank; P = comm.size
SEED = int(sys.argv[1]); NCASES = int(sys.argv[2])
MODE = sys.argv[3] if len(sys.argv) > 3 else "scan"
LOG = open(f"/tmp/hunt/fuzz_{MODE}_{SEED}_{P}.log", "w") if R == 0 else None

OPS_BY_KIND = {
 "b": ["sum","prod","max","min","logical_and","logical_or","logical_xor","bitwise_and","bitwise_or","bitwise_xor","nanmax","nanmin","nansum","nanprod"],
 "i": ["sum","prod","max","min","logical_and","logical_or","logical_xor","bitwise_and","bitwise_or","bitwise_xor","nansum","nanprod","nanmax","nanmin","gcd","lcm"],
 "f": ["sum","prod","max","min","logical_and","logical_or","logical_xor","nansum","nanprod","nanmax","nanmin","logaddexp","logaddexp2"],
 "c": ["sum","prod","logical_and","logical_or","logical_xor","nansum","nanprod"],
}
DTYPES = ["bool","int8","int16","int32","int64","uint8","uint16","uint32","uint64","float16","float32","float64","complex64","complex128"]
SPELL = {"sum": ["sum", np.add, "add", "cumsum"], "prod": ["prod", np.multiply, "multiply"], "max": ["max", np.maximum], "min": ["min", np.minimum],
         "nanmax": ["nanmax", np.fmax, "fmax"], "nanmin": ["nanmin", np.fmin, "fmin"], "logaddexp": ["logaddexp", np.logaddexp, "logcumsumexp"],
         "logaddexp2": ["logaddexp2", np.logaddexp2], "gcd": ["gcd", np.gcd], "lcm": ["lcm", np.lcm], "nansum": ["nansum"], "nanprod": ["nanprod"]}
NAMED = {"sum": "cumsum", "prod": "cumprod", "max": "cummax", "min": "cummin", "nansum": "nancumsum", "nanprod": "nancumprod"}

def values(rng, op, dt, shape):
    dt = np.dtype(dt); n = int(np.prod(shape))
    if dt.kind == "b":
        return rng.random(shape) < 0.6
    if dt.kind in "iu":
        if op == "lcm": v = rng.choice([1,2,3,4,6,-1,-2,-3], n) if dt.kind=="i" else rng.choice([1,2,3,4,6], n)
        elif op == "gcd": v = rng.choice([0,2,4,6,8,12,-4,-6,3,9], n) if dt.kind=="i" else rng.choice([0,2,4,6,8,12,3,9],n)
        elif op in ("bitwise_and","bitwise_or","bitwise_xor","max","min","nanmax","nanmin"):
            info = np.iinfo(dt); v = rng.integers(info.min, info.max, n, endpoint=True, dtype=dt)
        elif op in ("prod","nanprod"):
            v = rng.integers(0 if dt.kind=="u" else -3, 4, n)
            if rng.random() < 0.3: v = rng.integers(0, 200, n)
        else:
            info = np.iinfo(dt)
            v = rng.integers(info.min, info.max, n, endpoint=True, dtype=dt) if rng.random() < 0.3 else rng.integers(0 if dt.kind=="u" else -50, 50, n)
        return np.asarray(v).astype(dt).reshape(shape)
    # float / complex
    if op in ("prod","nanprod"):
        v = rng.uniform(0.5, 2.0, n) * rng.choice([1, -1], n)
    elif op in ("logaddexp","logaddexp2"):
        v = rng.uniform(-5, 5, n)
    else:
        v = rng.normal(0, 10, n)
        if rng.random() < 0.3: v = np.round(v)
    if dt.kind == "c":
        w = rng.uniform(0.5, 2.0, n) * rng.choice([1,-1], n) if op in ("prod","nanprod") else rng.normal(0, 3, n)
        v = v + 1j * (w * 0.3)
    if rng.random() < 0.4:
        k = rng.integers(1, 4)
        for _ in range(k):
            if n == 0: break
            i = rng.integers(n)
            special = [np.nan, np.inf, -np.inf, 0.0, -0.0]
            if op in ("sum", "nansum") and dt.kind != "c": special = [np.nan, np.inf, 0.0, -0.0]
            v[i] = rng.choice(special)
    return v.astype(dt).reshape(shape)

def gen_case(rng):
    c = {}
    kind = rng.choice(["f","i","b","c"], p=[0.45,0.35,0.1,0.1])
    dts = [d for d in DTYPES if np.dtype(d).kind == {"f":"f","i":"iu","b":"b","c":"c"}[kind][0] or (kind=="i" and np.dtype(d).kind in "iu")]
    dt = str(rng.choice(dts)); c["dt"] = dt
    op = str(rng.choice(OPS_BY_KIND[np.dtype(dt).kind if np.dtype(dt).kind != "u" else "i"]))
    if np.dtype(dt).kind == "u" and op == "lcm" and False: pass
    c["op"] = op
    trail = [(), (), (), (3,), (2,), (2, 3)][rng.integers(6)]
    n = int(rng.choice([0, 1, 2, 5, 9, 17, 40, 300]))
    c["trail"] = trail
    cuts = np.sort(rng.integers(0, n + 1, P - 1)); bounds = [0, *cuts.tolist(), n]
    if rng.random() < 0.3:  # some rank empty
        r = rng.integers(P); 
        cuts = bounds[1:-1]
        bounds = [0, *cuts, n]
        bounds = bounds[:r+1] + [bounds[r]] + bounds[r+1:]  # insert duplicate -> empty part at r
        bounds = bounds[:P] + [n] if len(bounds) > P + 1 else bounds
        bounds = sorted(bounds[:P]) + [n]
    c["bounds"] = bounds
    c["x"] = values(rng, op, dt, (n, *trail))
    c["exclusive"] = bool(rng.random() < 0.3)
    c["reverse"] = bool(rng.random() < 0.4)
    c["segments"] = (rng.random(n) < rng.choice([0.05, 0.2, 0.6])) if rng.random() < 0.4 else None
    c["initial"] = None
    rdt = result_dtype(op, dt, None)
    c["dtype"] = None
    if rng.random() < 0.15 and op in ("sum","prod","max","min") and np.dtype(dt).kind in "biuf":
        c["dtype"] = str(rng.choice(["int8","int32","int64","float32","float64","uint16"]))
        if op in ("max","min") and np.dtype(c["dtype"]).kind != np.dtype(dt).kind: c["dtype"] = None
        if c["dtype"] is not None: rdt = np.dtype(c["dtype"])
    if rng.random() < 0.3:
        ini = values(rng, op, rdt if rdt.kind != "b" or op not in ("sum","prod") else np.int64, trail if rng.random()<0.5 else ())
        if rdt.kind in "fc" and np.any(~np.isfinite(ini)):
            ini = np.zeros_like(ini)
        c["initial"] = ini[()] if ini.ndim == 0 else ini
    c["include_initial"] = bool(rng.random() < 0.15 and not c["exclusive"])
    c["compensated"] = bool(rng.random() < 0.3 and op == "sum" and np.dtype(rdt).kind in "fc" and c["segments"] is None)
    c["spelling"] = int(rng.integers(10))
    c["mods"] = {r: str(rng.choice(["none","none","none","view","list","fortran","memmap","readonly","scalar","out","outx"])) for r in range(P)}
    c["flagmods"] = {r: str(rng.choice(["none","list","view"])) for r in range(P)}
    c["axis"] = 0
    if rng.random() < 0.15 and c["segments"] is None and not c["include_initial"]:
        c["axis"] = None
        if c["initial"] is not None and np.ndim(c["initial"]): c["initial"] = np.asarray(c["initial"]).ravel()[0]
    elif rng.random() < 0.1 and len(trail) >= 1:
        c["axis"] = -(1 + len(trail))
    return c

def call(c, part, flags, out):
    kw = {}
    for k in ("exclusive","reverse","initial","dtype","compensated","include_initial"):
        if c[k] is not None and c[k] is not False: kw[k] = c[k]
    if flags is not None: kw["segments"] = flags
    if out is not None: kw["out"] = out
    if c["axis"] != 0: kw["axis"] = c["axis"]
    op = c["op"]; s = c["spelling"]
    if s < 3 and op in NAMED and not kw.get("compensated") and not kw.get("include_initial"):
        f = getattr(distscan, NAMED[op]); return f(part, comm=comm, **kw)
    if s == 3 and kw.get("exclusive") and "exclusive" in kw:
        kw.pop("exclusive"); spell = SPELL.get(op, [op]); return distscan.exclusive_scan(part, spell[0], comm=comm, **kw)
    spell = SPELL.get(op, [op]); o = spell[s % len(spell)]
    return distscan.scan(part, o, comm=comm, **kw)

def reference(c):
    x = c["x"]
    if c["axis"] is None:
        x = x.reshape(-1)
    return seq_scan(x, c["op"], exclusive=c["exclusive"], initial=c["initial"], reverse=c["reverse"],
                    segments=c["segments"], dtype=c["dtype"], include_initial=c["include_initial"])

def run_case(i, c):
    lo, hi = c["bounds"][R], c["bounds"][R+1]
    part = c["x"][lo:hi]
    mod = c["mods"][R]
    flags = None if c["segments"] is None else c["segments"][lo:hi]
    if flags is not None:
        fm = c["flagmods"][R]
        if fm == "list": flags = flags.tolist()
        elif fm == "view": big = np.zeros(2*len(flags), bool); big[::2] = flags; flags = big[::2]
    out = None; is_scalar = False
    if mod == "view" and part.size:
        big = np.zeros((2*part.shape[0], *part.shape[1:]), part.dtype); big[::2] = part; part = big[::2]
    elif mod == "list" and part.size and part.dtype in (np.int64, np.float64, np.bool_, np.complex128):
        part = part.tolist()
    elif mod == "fortran" and part.ndim > 1:
        part = np.asfortranarray(part)
    elif mod == "memmap" and part.size:
        fn = f"/tmp/hunt/mm/{SEED}_{i}_{R}.dat"; os.makedirs("/tmp/hunt/mm", exist_ok=True)
        mm = np.memmap(fn, dtype=part.dtype, mode="w+", shape=part.shape); mm[...] = part; mm.flush(); part = mm
    elif mod == "readonly":
        part = part.copy(); part.setflags(write=False)
    elif mod == "scalar" and part.shape == (1,) and flags is None and not c["include_initial"]:
        part = part[0]; is_scalar = True
    elif mod == "out" and c["axis"] == 0:
        rdt = result_dtype(c["op"], c["x"].dtype, c["dtype"])
        shp = list(np.shape(part))
        if c["include_initial"] and R == (P - 1 if c["reverse"] else 0): shp[0] += 1
        out = np.full(shp, 7, rdt)
    elif mod == "outx" and c["axis"] == 0 and not c["include_initial"]:
        rdt = result_dtype(c["op"], c["x"].dtype, c["dtype"])
        if np.asarray(part).dtype == rdt and part.size:
            part = part.copy(); out = part   # out overlapping the input
    err = None; res = None
    try:
        res = call(c, part, flags, out)
        if out is not None and res is not out: err = ("NOT_OUT", "result is not out")
        res = np.asarray(res) if not is_scalar else np.asarray(res).reshape(1, *np.shape(res))
        if is_scalar and not np.isscalar(call.__class__) and False: pass
    except Exception as e:
        err = (type(e).__name__, str(e)[:300])
    allres = comm.gather((err, res), root=0)
    bad = None
    if R == 0:
        errs = [a[0] for a in allres]
        if any(e is not None for e in errs):
            types = set(e[0] if e else None for e in errs)
            bad = f"ERROR (types per rank {[e[0] if e else None for e in errs]}): {[e for e in errs if e][0]}"
            if len(types) > 1: bad = "INCONSISTENT " + bad
        else:
            got = [a[1] for a in allres]
            try:
                ref = reference(c)
                if c["axis"] is None:
                    pass
                g = np.concatenate([np.asarray(v).reshape(-1, *ref.shape[1:]) if c["axis"] is None else np.asarray(v) for v in got])
                rdt = ref.dtype
                xs = c["x"]
                scale = None
                if c["op"] in ("sum","nansum") and rdt.kind in "fc":
                    with np.errstate(all="ignore"):
                        a = np.abs(np.nan_to_num(xs.astype(np.complex128 if rdt.kind=="c" else np.float64), nan=0, posinf=0, neginf=0))
                        scale = a.sum() if a.size else 0
                ok, why = close(g, ref, rdt, n=max(2, xs.shape[0] if c["op"] not in ("max","min","nanmax","nanmin") else 1), scale=scale)
                if not ok: bad = "MISMATCH " + why
                if len(sys.argv) > 4: print("got", g, "\nref", ref)
            except Exception as e:
                bad = "REFERR " + traceback.format_exc()[-400:]
    bad = comm.bcast(bad, root=0)
    return bad

def spec_str(c):
    d = dict(c); d["x"] = c["x"].tolist() if c["x"].size < 60 else f"<{c['x'].shape}>"
    if c["segments"] is not None: d["segments"] = np.flatnonzero(c["segments"]).tolist()
    return repr(d)

rng = np.random.default_rng(SEED)
nbad = 0
for i in range(NCASES):
    c = comm.bcast(gen_case(rng) if R == 0 else None, root=0)
    if len(sys.argv) > 4 and i != int(sys.argv[4]): continue
    if len(sys.argv) > 4 and R == 0: print(spec_str(c))
    if MODE == "repeat":
        c0 = dict(c); c0["mods"] = {r: "none" for r in range(P)}; c0["flagmods"] = {r: "none" for r in range(P)}
        bad = run_case(i, c0) or run_case(i, c0) or run_case(i, c) or run_case(i, c0)
    else:
        bad = run_case(i, c)
    if bad and R == 0:
        nbad += 1
        LOG.write(f"case {i}: {bad}\n  {spec_str(c)}\n"); LOG.flush()
if R == 0:
    print(f"seed {SEED} P {P}: {nbad} bad of {NCASES}"); LOG.close()
