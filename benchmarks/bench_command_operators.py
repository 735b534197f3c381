#!/usr/bin/env python3
"""The command's state scans against the I/O floor of *their* bytes, in one run (issue 31's rows for
issue 30's scans): ``--reverse``, ``--segments FLAGS.npy`` and ``distscan recurrence A.npy B.npy``,
beside the plain scan of the same values.

    python benchmarks/bench_command_operators.py --size 2**29 --config cpu:8 --config cuda:1 \\
        --launcher "mpirun --allow-run-as-root --bind-to none" --json out.json

Bytes: a scan reads its values (and, with ``--segments``, one byte of flag per item; a recurrence
its coefficients, as many bytes as its values) and writes its output (as many bytes as its values
here).  The floor of a row is ``shared/tools/io_floor.py``'s ``floor`` of each file it reads (the
read spans of the aux files, the read and write spans of the values file) plus the slowest floor's
start-up, so every row is judged against reading and writing the bytes it moves, as bench_command.py
judges the plain scan.  The NumPy column is the one-process form of the same scan where NumPy has
a vectorised one (reverse: ``cumsum(x[::-1])[::-1]``; segmented: ``cumsum`` minus each segment's
start); a time-varying recurrence has none.  Outputs are checked: integers exactly against NumPy,
the float recurrence against the library's float64 call in this process (sampled blocks).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_command import _config, _config_env, _floor_source, _size, _timed, make_input  # noqa: E402

SCANS = ("plain", "reverse", "segments", "recurrence")

# NumPy's one-process form of each scan (None: there is none).
NUMPY = {
    "plain": "y = np.cumsum(np.load({x!r}))",
    "reverse": "y = np.cumsum(np.load({x!r})[::-1])[::-1]",
    "segments": ("x = np.load({x!r}); f = np.load({f!r}); c = np.cumsum(x); "
                 "s = np.maximum.accumulate(np.where(f, np.arange(len(x)), 0)); y = c - (c[s] - x[s])"),
    "recurrence": None,
}


def make_aux(folder: str, n: int, dtype: str) -> dict:
    """Segment flags (one start per ~1000 items) and recurrence coefficients in [0.5, 1)."""
    rng = np.random.default_rng(2)
    flags = np.lib.format.open_memmap(os.path.join(folder, "bench_ops_flags.npy"), "w+", np.bool_, (n,))
    coef = np.lib.format.open_memmap(os.path.join(folder, "bench_ops_coef.npy"), "w+", np.dtype(dtype), (n,))
    block = 1 << 24
    for lo in range(0, n, block):
        hi = min(n, lo + block)
        flags[lo:hi] = rng.random(hi - lo) < 1e-3
        coef[lo:hi] = rng.uniform(0.5, 1.0, hi - lo).astype(dtype)
    flags.flush(), coef.flush()
    return {"flags": flags.filename, "coef": coef.filename}


def command(scan: str, files: dict, out: str, backend: str, report: str) -> list:
    tail = ["-o", out, "--force", "--backend", backend, "--report", report, "--quiet"]
    if scan == "recurrence":
        return ["-m", "distscan", "recurrence", files["coef"], files["values_f"]] + tail
    extra = {"plain": [], "reverse": ["--reverse"], "segments": ["--segments", files["flags"]]}[scan]
    return ["-m", "distscan", files["values"]] + extra + tail


def numpy_scan(scan: str, files: dict) -> np.ndarray:
    """The scan as NumPy's one-process form (:data:`NUMPY`, the code the NumPy column times)."""
    scope = {"np": np}
    exec(NUMPY[scan].format(x=files["values"], f=files["flags"]), scope)
    return scope["y"]


def check(scan: str, files: dict, out: str) -> str:
    """``out`` against the scan computed here: every element against NumPy's form (integers:
    exactly); the recurrence, which has none, in sampled blocks against the library's float64 call."""
    o = np.load(out, mmap_mode="r")
    if scan != "recurrence":
        if not np.array_equal(o, numpy_scan(scan, files)):
            raise AssertionError(f"{scan}: output differs from NumPy")
        return "every element exact"
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # run from any folder
    import distscan  # the reference: this checkout's (a config's PYTHONPATH only reaches the commands)
    n = o.shape[0]
    starts = np.unique(np.concatenate([[0, n - 4096], np.random.default_rng(3).integers(0, n - 4096, 12)]))
    want = distscan.linear_recurrence(np.load(files["coef"]), np.load(files["values_f"]), dtype=np.float64)
    worst = max(float(np.max(np.abs(o[s:s + 4096] - want[s:s + 4096]) / (1 + np.abs(want[s:s + 4096]))))
                for s in starts)
    if worst > 1e-3:
        raise AssertionError(f"recurrence differs from the float64 reference by {worst:.1e}")
    return f"{len(starts)} blocks within {worst:.1e} (relative, float64 reference)"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", default="2**29")
    p.add_argument("--dtype", default="int64", help="values of plain/reverse/segments (integers: exact)")
    p.add_argument("--recurrence-dtype", default="float32")
    p.add_argument("--scans", default=",".join(SCANS))
    p.add_argument("--config", action="append", default=[], help="BACKEND:RANKS[:VAR=VALUE+...] (bench_command.py)")
    p.add_argument("--launcher", default="mpiexec")
    p.add_argument("--threads", type=int, default=16)
    p.add_argument("--dir", default=None)
    p.add_argument("--skip-numpy", action="store_true")
    p.add_argument("--json")
    a = p.parse_args(argv)
    folder = a.dir or tempfile.gettempdir()
    n, py, launcher = _size(a.size), sys.executable, shlex.split(a.launcher)
    configs = [_config(c) for c in (a.config or ["cpu:2"])]
    scans = a.scans.split(",")
    env = dict(os.environ, DISTSCAN_PROGRESS="0")
    floor_code, floor_from = _floor_source()
    files = {"values": os.path.join(folder, "bench_ops_values.npy"),
             "values_f": os.path.join(folder, "bench_ops_values_f.npy")}
    out, report = os.path.join(folder, "bench_ops_out.npy"), os.path.join(folder, "bench_ops_report.json")
    res = {"machine": os.uname().nodename, "cpus": os.cpu_count(), "floor_from": floor_from, "elements": n,
           "time_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "rows": []}
    try:
        t0 = time.perf_counter()
        make_input(files["values"], n, a.dtype)
        if "recurrence" in scans:
            make_input(files["values_f"], n, a.recurrence_dtype)
        files.update(make_aux(folder, n, a.recurrence_dtype))
        print(f"# inputs made in {time.perf_counter() - t0:.1f} s", flush=True)
        floors = {}
        for name in ("values", "flags", "coef", "values_f"):
            if name == "values_f" and "recurrence" not in scans:
                continue
            code = floor_code + f"\nimport json; s, r, w = floor({files[name]!r}, {a.threads}); print(json.dumps([r, w]))"
            wall, text = _timed([py, "-c", code])
            r, w = json.loads(text.strip().splitlines()[-1])
            floors[name] = {"wall": wall, "read": r, "write": w, "bytes": os.path.getsize(files[name])}
            print(f"# floor of {name}: {wall:.2f} s (read {r:.2f}, write {w:.2f})", flush=True)
        start = max(f["wall"] - f["read"] - f["write"] for f in floors.values())
        reads = {"plain": ["values"], "reverse": ["values"], "segments": ["values", "flags"],
                 "recurrence": ["coef", "values_f"]}
        for scan in scans:
            written = "values_f" if scan == "recurrence" else "values"
            fl = start + sum(floors[k]["read"] for k in reads[scan]) + floors[written]["write"]
            moved = sum(floors[k]["bytes"] for k in reads[scan]) + floors[written]["bytes"]
            row = {"scan": scan, "floor": fl, "bytes_moved": moved, "numpy": None, "commands": []}
            if NUMPY[scan] and not a.skip_numpy:
                code = "import numpy as np; " + NUMPY[scan].format(x=files["values"], f=files["flags"]) + \
                       f"; np.save({out!r}, y)"
                row["numpy"], _ = _timed([py, "-c", code])
                os.remove(out)
            for backend, ranks, extra in configs:
                run_env = _config_env(env, extra)
                wall, _ = _timed(launcher + ["-n", str(ranks), py] + command(scan, files, out, backend, report),
                                 env=run_env)
                with open(report) as f:
                    rep = json.load(f)
                checked = check(scan, files, out)
                os.remove(out), os.remove(report)
                row["commands"].append({"backend": backend, "ranks": ranks, "env": extra, "wall": wall,
                                        "ran": rep["backend"]["used"], "why": rep["backend"]["why"],
                                        "times_s": rep["times_s"], "host": rep.get("host"), "checked": checked})
                print(f"# {scan} {backend}:{ranks}: {wall:.2f} s ({rep['backend']['used']}; {checked})", flush=True)
            res["rows"].append(row)
    finally:
        for path in list(files.values()) + [out, report]:
            if os.path.exists(path):
                os.remove(path)
    lines = [f"{n:,} items ({a.dtype}; recurrence {a.recurrence_dtype}), {res['machine']}, {res['time_utc']}",
             f"  {'scan':<11}{'GB moved':>9}{'floor s':>9}{'numpy s':>9}  " +
             "".join(f"{b + ':' + str(r) + (' ' + e if e else ''):>22}" for b, r, e in configs)]
    for row in res["rows"]:
        cells = "".join(f"{c['wall']:>8.2f} s {c['wall'] / row['floor']:>5.2f}x {c['ran'][:4]:>4}"
                        for c in row["commands"])
        npw = f"{row['numpy']:>9.2f}" if row["numpy"] else f"{'-':>9}"
        lines.append(f"  {row['scan']:<11}{row['bytes_moved'] / 1e9:>9.2f}{row['floor']:>9.2f}{npw}  {cells}")
    res["table"] = lines
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=2)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
