"""Runs one scenario of tests/dist/test_ranks_differ.py under mpiexec: every rank builds its own part
of each call in the kind it drew (a view, a list, a scalar, a memmap, out= ...), calls distscan
several times in a row, and writes what happened to ``OUT/rank-R.json``.

Usage: ``mpiexec -n P python tests/dist/ranks_differ_worker.py SCENARIO.json OUT_DIR [--cupy]``.
With ``--cupy`` every rank works on GPU ``rank % GPUs``, and the kinds starting with ``cupy``
are CuPy arrays (the others stay NumPy: a mix that every rank must refuse alike).

Every rank prints ``call K`` before each call (flushed), so a run that hangs shows where.
The checks (equal to NumPy, or the same exception everywhere) are the parent's; this file only
builds parts and records outcomes.  It makes no collective of its own: a hang is distscan's.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import traceback

import numpy as np
from mpi4py import MPI

import distscan

ALIASES = {"sum": ["sum", "add", "cumsum", np.add], "prod": ["prod", "multiply", np.multiply],
           "max": ["max", "maximum", np.maximum], "min": ["min", "minimum", np.minimum],
           "bitwise_xor": ["bitwise_xor", "^", np.bitwise_xor]}
# an out= of another dtype that NumPy computes the same scan for (its loop stays the result dtype)
CAST_OUT = {"int64": "int32", "float64": "float32", "float32": "float16", "int32": "int16"}


def global_array(call):
    """The whole array of a call (every rank can build every part)."""
    rng = np.random.default_rng(call["seed"])
    n = sum(call["counts"])
    dt = np.dtype(call["dtype"])
    shape = (n,) + tuple(call["trailing"])
    if dt.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dt.kind in "iu":
        return rng.integers(-50 if dt.kind == "i" else 0, 50, shape).astype(dt)
    return rng.standard_normal(shape).astype(dt)


def part_of(g, call, rank):
    lo = sum(call["counts"][:rank])
    return g[lo:lo + call["counts"][rank]]


def mask_of(part, spec):
    return np.random.default_rng(spec["mask_seed"]).random(part.shape) < 0.3


def effective_parts(g, call, specs):
    """Every rank's part as the scan sees it (masked elements as the operator's identity)."""
    parts = []
    for r, spec in enumerate(specs):
        p = part_of(g, call, r)
        if spec["kind"] == "masked":
            ident = distscan.OPS[call["op"]].identity(p.dtype)
            p = np.where(mask_of(p, spec), ident, p)
        parts.append(p)
    return parts


def build(part, call, spec, tmp):
    """This rank's part in the kind it drew."""
    kind = spec["kind"]
    if kind.startswith("cupy"):
        import cupy
        if kind == "cupy_strided":
            base = cupy.zeros((2 * len(part),) + part.shape[1:], part.dtype)
            base[::2] = cupy.asarray(part)
            return base[::2]
        if kind == "cupy_reversed":
            return cupy.ascontiguousarray(cupy.asarray(part[::-1]))[::-1]
        return cupy.asarray(part)
    if kind == "strided":
        base = np.zeros((2 * len(part),) + part.shape[1:], part.dtype)
        base[::2] = part
        x = base[::2]
    elif kind == "reversed":
        x = np.ascontiguousarray(part[::-1])[::-1]
    elif kind == "fortran":
        x = np.asfortranarray(part)
    elif kind == "list":
        x = part.tolist()
    elif kind == "scalar":
        x = part.dtype.type(part[0])
    elif kind == "zero_d":
        x = np.array(part[0], part.dtype)
    elif kind == "readonly":
        x = part.copy()
        x.setflags(write=False)
    elif kind == "byteswapped":
        x = part.astype(part.dtype.newbyteorder())
    elif kind == "memmap":
        path = os.path.join(tmp, "part.dat")
        rows = max(len(part), 1)  # a file cannot map nothing: an empty part is a slice of one row
        mm = np.memmap(path, dtype=part.dtype, mode="w+", shape=(rows,) + part.shape[1:])
        mm[:len(part)] = part
        mm.flush()
        del mm
        x = np.memmap(path, dtype=part.dtype, mode="r", shape=(rows,) + part.shape[1:])[:len(part)]
    elif kind == "masked":
        x = np.ma.MaskedArray(part.copy(), mask=mask_of(part, spec))
    else:
        x = np.ascontiguousarray(part)
    return x


def result_dtype(call):
    op = distscan.OPS[call["op"]]
    if call["op"] in ("sum", "prod"):
        dt = np.dtype(call["dtype"])
        if dt.kind in "bi" and dt.itemsize < 8:
            return np.dtype(np.int64)
        if dt.kind == "u" and dt.itemsize < 8:
            return np.dtype(np.uint64)
    return np.dtype(call["dtype"]) if not op.logical else np.dtype(bool)


def make_out(x_shape, call, spec):
    res = result_dtype(call)
    if spec["kind"].startswith("cupy") and spec["out"] in ("same", "cast"):
        import cupy
        dt = CAST_OUT.get(res.name, res) if spec["out"] == "cast" else res
        return cupy.full(x_shape, 99, dt)
    if spec["out"] == "same":
        return np.full(x_shape, 99, res)
    if spec["out"] == "swapped":
        return np.full(x_shape, 99, res.newbyteorder())
    if spec["out"] == "cast" and res.name in CAST_OUT:
        return np.full(x_shape, 99, CAST_OUT[res.name])
    return None


def run_call(call, spec, comm, tmp):
    rank = comm.Get_rank()
    g = global_array(call)
    part = part_of(g, call, rank)
    x = build(part, call, spec, tmp)
    kw = {"comm": comm, "exclusive": call["exclusive"], "axis": call["axis"]}
    if call.get("initial") is not None:
        kw["initial"] = call["initial"]
    if spec["dtype_kw"]:
        kw["dtype"] = result_dtype(call) if spec["dtype_kw"] == "result" else np.dtype(spec["dtype_kw"])
    shape = np.shape(x) if spec["kind"] not in ("scalar",) else ()
    if call["axis"] is None:
        shape = (int(np.prod(shape)),) if spec["kind"] != "scalar" else ()
    out = make_out(shape, call, spec)
    if out is not None:
        kw["out"] = out
    op = call["op"]
    if spec["bad"] == "op":
        op = "no-such-operator"
    elif spec["bad"] == "axis":
        kw["axis"] = 7
    alias = ALIASES.get(op, [op])[spec["alias"] % len(ALIASES.get(op, [op]))]
    got = distscan.scan(x, alias, **kw)
    if out is not None and got is not out:
        raise AssertionError("out= given but another array returned")
    data = np.ma.getdata(got) if isinstance(got, np.ma.MaskedArray) else got
    return data.get() if hasattr(data, "get") and not isinstance(data, np.ndarray) else np.asarray(data)


def main():
    scenario = json.load(open(sys.argv[1]))
    out_dir = sys.argv[2]
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    if "--cupy" in sys.argv:
        try:
            import cupy
            cupy.cuda.Device(rank % cupy.cuda.runtime.getDeviceCount()).use()
        except Exception:  # noqa: BLE001 - a rank that cannot start ends the job, rather than leave the
            traceback.print_exc()  # others waiting in a collective (MPI_Finalize at exit would wait too)
            sys.stderr.flush()
            comm.Abort(1)
    records = []
    with tempfile.TemporaryDirectory() as tmp:
        for k, call in enumerate(scenario["calls"]):
            spec = call["specs"][rank]
            print(f"call {k}", flush=True)
            try:
                got = run_call(call, spec, comm, tmp)
                records.append({"ok": True, "dtype": str(got.dtype), "shape": list(got.shape),
                                "values": got.astype(np.float64 if got.dtype.kind == "f" else got.dtype).tolist()
                                if got.dtype.kind in "biuf" else got.astype(np.complex128).real.tolist()})
            except Exception as exc:  # noqa: BLE001 - recorded for the parent to compare across ranks
                records.append({"ok": False, "type": type(exc).__name__, "message": str(exc)})
    with open(os.path.join(out_dir, f"rank-{rank}.json"), "w") as f:
        json.dump(records, f)
    print("done", flush=True)


if __name__ == "__main__":
    main()
