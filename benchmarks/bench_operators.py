"""Issue 30's scans on one GPU against copy bandwidth, torch, JAX and CUB, in one run.

    python benchmarks/bench_operators.py OUT.json [--log2n 27,28] [--reps 15] [--png OUT.png] [--no-gpu-only]

Question: how close to copy bandwidth do the scans beyond the plain sum run (reverse,
segmented, linear recurrences, logcumsumexp, NaN-aware, compensated), and how do they compare
with what the peers offer for the same result?  Bytes are what a fused kernel must move per
element (reads + writes): float32 cumsum 8, segmented float32 with 1-byte flags 9, segmented
int64 17, recurrence (a, b -> y) float32 12, float64 and complex64 24.  Each row's GB/s counts
those bytes; "of copy" divides by the same run's device-to-device copy GB/s.

Timing: CUDA events around each call, the implementations of a row in turn in a new random
order every repetition, the L2 flushed before each call (benchmarks/harness.py), median of
--reps.  distscan is timed through its API on CuPy arrays with ``out=`` (the host's work
included, as a user sees it).  JAX runs its own streams: it is timed by the wall clock around
``block_until_ready`` (median of --reps, after compilation), which adds its dispatch (tens of
microseconds: under 3 % at 2^27 float32).  Peers' segmented scans: torch by the cumsum of the
flags and a gather (its documented idiom: ids = cumsum(flags), y = cumsum(x) - base[ids]); JAX
by ``lax.associative_scan`` over (flag, value) and over the maps (a, b).  Every distscan result
is checked against a float64 (complex128) reference on the GPU before timing.

"GPU only" (unless --no-gpu-only): the same distscan calls timed again with the host's work
hidden (harness.events_interleaved's hide_host: a 2 ms sleep queued on the GPU before the first
event), so that API minus GPU-only is what the host's work before the launch costs the call.
The kernels' modules are compiled first, in parallel processes (module_keys).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # JAX must leave the GPU's memory to the others
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import cupy as cp  # noqa: E402

import distscan  # noqa: E402
from harness import device_copy, events_interleaved, jax_on_gpu, make_cub, wall_median  # noqa: E402

try:
    from mpi4py import MPI
    SELF = MPI.COMM_SELF
except ImportError:  # pragma: no cover
    SELF = None


def _torch():
    try:
        import torch
        return torch if torch.cuda.is_available() else None
    except Exception:  # noqa: BLE001
        return None


def _check(name, got, ref, scale, eps):
    err = float(cp.max(cp.abs(got.astype(cp.complex128) - ref.astype(cp.complex128)) / scale)) if got.size else 0.0
    if not err <= 64 * eps * np.log2(max(2, got.size)):
        raise AssertionError(f"{name}: relative error {err:.3g}")
    return err


def module_keys(n):
    """The kernel modules the distscan calls below compile (the plain forward module of "auto" and
    of the look-ahead, the extended one of reverse and state scans), as the backend routes them;
    a key missed here only costs its compile inside the timing's warm-up."""
    from distscan.ops.options import call_op
    from distscan._dtypes import scan_types
    from distscan.backends.cuda import extended, plans

    calls = [("sum", {}, "float32"), ("sum", {"reverse": True}, "float32"), ("sum", {"segments": 1}, "float32"),
             ("sum", {"segments": 1}, "int64"), ("nansum", {}, "float32"), ("nanmax", {}, "float32"),
             ("max", {}, "float32"), (np.logaddexp, {}, "float32"), ("sum", {"compensated": True}, "float32")]
    calls += [("sum", {"coefficients": 1}, dt) for dt in ("float32", "float64", "complex64")]
    keys = []
    for name, kw, dt in calls:
        op = call_op(name, segments=kw.get("segments"), compensated=kw.get("compensated", False),
                     coefficients=kw.get("coefficients"), reverse=kw.get("reverse", False))
        dt = np.dtype(dt)
        types = scan_types(op, dt)
        if kw.get("reverse") or op.state is not None:
            device = plans.ext_device(op, "auto", n, dt.itemsize, types.result.itemsize, types.result.kind,
                                      reverse=kw.get("reverse", False), fast_dram=plans.fast_dram(0))
            keys.append(extended.ext_module_key(dt, types, op, device, kw.get("reverse", False)))
        else:
            keys.append(plans.module_key(dt, types, op, "auto"))
            if plans.uses_lookahead(n, dt.itemsize, types.result.itemsize):
                keys.append(plans.module_key(dt, types, op, "lookahead"))
    return keys


def rows_for(log2n, reps, torch, jax_mod, gpu_only=True):
    n = 1 << log2n
    rs = cp.random.RandomState(log2n)
    x = rs.standard_normal(n, dtype=cp.float32)
    y = cp.empty_like(x)
    flags = rs.random_sample(n) < 1e-3
    xi = rs.randint(-1000, 1000, n).astype(cp.int64)
    yi = cp.empty_like(xi)
    a32 = rs.uniform(0.5, 1.0, n).astype(cp.float32)
    a64, b64 = a32.astype(cp.float64), x.astype(cp.float64)
    a_c = (a32 * cp.exp(1j * rs.uniform(0, 6.28, n))).astype(cp.complex64)
    b_c = (x + 1j * x[::-1]).astype(cp.complex64)
    y64, y_c = cp.empty_like(b64), cp.empty_like(b_c)
    xnan = x.copy()
    xnan[rs.random_sample(n) < 0.01] = cp.nan
    eps32 = float(np.finfo(np.float32).eps)

    # correctness first: each distscan result against a double-precision reference
    ref = cp.cumsum(x[::-1], dtype=cp.float64)[::-1]
    _check("reverse", distscan.cumsum(x, reverse=True, comm=SELF), ref, float(cp.sum(cp.abs(x))), eps32)
    seg = distscan.cumsum(xi, segments=flags, comm=SELF)
    ids = cp.cumsum(flags)
    csum = cp.cumsum(xi)
    base = cp.concatenate([cp.zeros(1, cp.int64), (csum - xi)[flags]])
    assert bool(cp.array_equal(seg, csum - base[ids])), "segmented int64 differs"
    rec = distscan.linear_recurrence(a32, x, comm=SELF)
    step = distscan.linear_recurrence(a64, b64, comm=SELF)  # float64 reference, checked on a slice below
    tail = cp.asnumpy(a64[:4096]), cp.asnumpy(b64[:4096])
    yr, prev = np.empty(4096), 0.0
    for i in range(4096):
        prev = tail[0][i] * prev + tail[1][i]
        yr[i] = prev
    assert np.allclose(cp.asnumpy(step[:4096]), yr, rtol=0, atol=1e-12 * (np.abs(yr).max() + 1))
    _check("recurrence f32", rec, step, float(cp.max(cp.abs(step))) + 1, eps32)
    lse = distscan.scan(x, np.logaddexp, comm=SELF)
    if torch is not None:
        _check("logcumsumexp", lse, cp.asarray(torch.logcumsumexp(torch.as_tensor(x, device="cuda").double(), 0)),
               float(cp.max(cp.abs(lse))) + 1, eps32)

    def row(name, bytes_per, impls):
        med = events_interleaved(impls, reps)
        r = {"scan": name, "log2n": log2n, "bytes_per_elt": bytes_per,
             **{k: bytes_per * n / t / 1e9 for k, t in med.items()}}
        if gpu_only:  # distscan's calls again, the host's work hidden: the kernels' own time
            mine = {k: f for k, f in impls.items() if k.startswith("distscan")}
            med = events_interleaved(mine, reps, hide_host=True)
            r["gpu_only"] = {k: bytes_per * n / t / 1e9 for k, t in med.items()}
        return r

    copy = device_copy(y, x)

    out = []
    fwd = {"copy": copy, "distscan": lambda: distscan.cumsum(x, out=y, comm=SELF)}
    cub, _ = make_cub(x, y, n)
    if cub is not None:
        fwd["cub"] = cub
    rev = {"distscan": lambda: distscan.cumsum(x, reverse=True, out=y, comm=SELF),
           "distscan forward": lambda: distscan.cumsum(x, out=y, comm=SELF)}
    segf = {"distscan": lambda: distscan.cumsum(x, segments=flags, out=y, comm=SELF)}
    segi = {"distscan": lambda: distscan.cumsum(xi, segments=flags, out=yi, comm=SELF)}
    rec32 = {"distscan": lambda: distscan.linear_recurrence(a32, x, out=y, comm=SELF)}
    rec64 = {"distscan": lambda: distscan.linear_recurrence(a64, b64, out=y64, comm=SELF)}
    recc = {"distscan": lambda: distscan.linear_recurrence(a_c, b_c, out=y_c, comm=SELF)}
    lsef = {"distscan": lambda: distscan.scan(x, np.logaddexp, out=y, comm=SELF)}
    nanf = {"distscan nancumsum": lambda: distscan.nancumsum(xnan, out=y, comm=SELF),
            "distscan cumsum": lambda: distscan.cumsum(xnan, out=y, comm=SELF),
            "distscan nanmax": lambda: distscan.scan(xnan, "nanmax", out=y, comm=SELF),
            "distscan cummax": lambda: distscan.cummax(xnan, out=y, comm=SELF)}
    comp = {"distscan compensated": lambda: distscan.cumsum(x, compensated=True, out=y, comm=SELF),
            "distscan cumsum": lambda: distscan.cumsum(x, out=y, comm=SELF)}
    if torch is not None:
        tx, txi = torch.as_tensor(x, device="cuda"), torch.as_tensor(xi, device="cuda")
        tf = torch.as_tensor(flags, device="cuda")
        ty = torch.as_tensor(y, device="cuda")
        fwd["torch"] = lambda: torch.cumsum(tx, 0, out=ty)
        rev["torch (flip)"] = lambda: torch.cumsum(tx.flip(0), 0).flip(0)

        def torch_segmented(v):
            ids = torch.cumsum(tf, 0)
            c = torch.cumsum(v, 0)
            start = torch.cat([torch.zeros(1, dtype=v.dtype, device="cuda"), (c - v)[tf]])
            return c - start[ids]

        segf["torch (cumsum of flags + gather)"] = lambda: torch_segmented(tx)
        segi["torch (cumsum of flags + gather)"] = lambda: torch_segmented(txi)
        lsef["torch"] = lambda: torch.logcumsumexp(tx, 0)
    rows = [("copy / forward cumsum f32", 8, fwd), ("reverse cumsum f32", 8, rev), ("segmented sum f32", 9, segf),
            ("segmented sum i64", 17, segi), ("linear recurrence f32", 12, rec32), ("linear recurrence f64", 24, rec64),
            ("linear recurrence c64", 24, recc), ("logcumsumexp f32", 8, lsef), ("NaN-aware f32", 8, nanf),
            ("compensated sum f32", 8, comp)]
    for name, bpe, impls in rows:
        out.append(row(name, bpe, impls))
    if jax_mod is not None:
        jax, jnp = jax_mod
        from jax import lax
        jx, jf = jnp.asarray(cp.asnumpy(x)), jnp.asarray(cp.asnumpy(flags))
        jxi = jnp.asarray(cp.asnumpy(xi))
        ja, jb = jnp.asarray(cp.asnumpy(a32)), jx
        ja64, jb64 = jnp.asarray(cp.asnumpy(a64)), jnp.asarray(cp.asnumpy(b64))
        jac, jbc = jnp.asarray(cp.asnumpy(a_c)), jnp.asarray(cp.asnumpy(b_c))

        def seg_op(p, q):
            return p[0] | q[0], jnp.where(q[0], q[1], p[1] + q[1])

        def aff_op(p, q):
            return q[0] * p[0], q[0] * p[1] + q[1]

        jits = {
            "copy / forward cumsum f32": (jax.jit(lambda v: jnp.cumsum(v)), (jx,)),
            "reverse cumsum f32": (jax.jit(lambda v: lax.cumsum(v, reverse=True)), (jx,)),
            "segmented sum f32": (jax.jit(lambda f, v: lax.associative_scan(seg_op, (f, v))[1]), (jf, jx)),
            "segmented sum i64": (jax.jit(lambda f, v: lax.associative_scan(seg_op, (f, v))[1]), (jf, jxi)),
            "linear recurrence f32": (jax.jit(lambda p, q: lax.associative_scan(aff_op, (p, q))[1]), (ja, jb)),
            "linear recurrence f64": (jax.jit(lambda p, q: lax.associative_scan(aff_op, (p, q))[1]), (ja64, jb64)),
            "linear recurrence c64": (jax.jit(lambda p, q: lax.associative_scan(aff_op, (p, q))[1]), (jac, jbc)),
            "logcumsumexp f32": (jax.jit(lambda v: lax.cumlogsumexp(v)), (jx,)),
        }
        for r in out:
            if r["scan"] in jits:
                fn, args = jits[r["scan"]]
                t = wall_median(lambda: fn(*args).block_until_ready(), reps)
                r["jax"] = r["bytes_per_elt"] * n / t / 1e9
        del jx, jf, jxi, ja, jb, ja64, jb64, jac, jbc
    copy_gbs = out[0]["copy"]
    for r in out:
        r["copy_gbs"] = copy_gbs
    return out


def report(data):
    print(f"{data['gpu']} ({data['date']}): GB/s over each scan's bytes per element; 'of copy' = distscan / copy")
    for r in data["rows"]:
        peers = {k: v for k, v in r.items() if k not in ("scan", "log2n", "bytes_per_elt", "copy_gbs", "gpu_only")}
        main = next((k for k in ("distscan", "distscan compensated", "distscan nancumsum") if k in peers), None)
        cells = "  ".join(f"{k.replace('distscan', 'ds').replace('(cumsum of flags + gather)', '(gather)')} {v:5.0f}"
                          for k, v in peers.items())
        ratio = f"  of copy {peers[main] / r['copy_gbs']:.3f}" if main else ""
        gpu = r.get("gpu_only")
        if gpu:
            ratio += "  | GPU only: " + " ".join(f"{v:5.0f}" for v in gpu.values())
            if main in gpu:
                ratio += f" ({gpu[main] / r['copy_gbs']:.3f})"
        print(f"{r['scan'][:22]:22s} {r['bytes_per_elt']:2d}B {cells}{ratio}")


def plot(data, png):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in data["rows"] if r["log2n"] == max(x["log2n"] for x in data["rows"])]
    names = [r["scan"] for r in rows]
    # the rows' own distscan scan (NaN-aware: nancumsum; compensated: the compensated sum), and
    # the plain cumsum those two rows time beside it
    own = ("distscan", "distscan nancumsum", "distscan compensated")
    series = ["distscan", "distscan cumsum", "torch", "torch (flip)", "torch (cumsum of flags + gather)", "jax", "cub"]
    fig, ax = plt.subplots(figsize=(11, 5))
    width = 0.12
    for k, s in enumerate(series):
        vals = [next((r[o] for o in own if o in r), 0.0) if s == "distscan" else r.get(s, 0.0) for r in rows]
        ax.bar(np.arange(len(rows)) + k * width, vals, width, label=s)
    ax.axhline(rows[0]["copy_gbs"], color="k", lw=0.8, ls="--", label="copy")
    ax.set_xticks(np.arange(len(rows)) + 2 * width)
    ax.set_xticklabels(names, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("GB/s over the scan's bytes")
    ax.set_title(f"{data['gpu']}: scans of 2^{rows[0]['log2n']} elements")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))  # beside the bars, not over them
    fig.tight_layout()
    fig.savefig(png, dpi=120)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json_out")
    ap.add_argument("--log2n", default="27")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--png")
    ap.add_argument("--no-gpu-only", action="store_true", help="skip the timing with the host's work hidden")
    a = ap.parse_args()
    from distscan.backends.cuda import compile as cc
    t0 = time.perf_counter()
    cc.precompile([k for log2n in map(int, a.log2n.split(",")) for k in module_keys(1 << log2n)])
    print(f"kernels compiled in {time.perf_counter() - t0:.0f} s", flush=True)
    torch, jax_mod = _torch(), jax_on_gpu()
    cp.cuda.Device(0).use()  # JAX's start leaves the last GPU current on a host of several (bench_state_columns.py)
    rows = []
    for log2n in map(int, a.log2n.split(",")):
        rows += rows_for(log2n, a.reps, torch, jax_mod, gpu_only=not a.no_gpu_only)
    gpu = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    data = {"gpu": gpu, "date": datetime.date.today().isoformat(), "host": platform.node(), "rows": rows}
    Path(a.json_out).write_text(json.dumps(data, indent=1))
    if a.png:
        plot(data, a.png)
    report(data)


if __name__ == "__main__":
    main()
