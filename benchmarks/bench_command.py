#!/usr/bin/env python3
"""Time the command against the NumPy one-liner and the I/O floor, in one run, on the same file.

    python benchmarks/bench_command.py --size 2**29 --dtype int64 --ranks 2 --backend cuda \\
        --launcher "mpirun --allow-run-as-root" --reps 1 --warm --json out.json --plot out.png
    python benchmarks/bench_command.py --input /tmp/big.npy --ranks 1,2 --reps 3

Per configuration, each timed wall-clock end to end in a fresh process (start-up included):

- ``numpy``: ``np.save(out, np.cumsum(np.load(inp)))`` in one Python process;
- ``floor``: the I/O floor, ``io_floor.floor(inp, threads)`` from ``shared/tools/io_floor.py``
  when it is found (else the same function below): T threads read the file, then write the
  same bytes to a new file (a fresh Python process too, so it pays the interpreter start-up);
- ``distscan``: ``LAUNCHER -n R python -m distscan inp -o out --force --report r.json`` for
  each rank count and backend.

Before every timed run, dirty pages are flushed (``sync``) so that no run pays for the
previous run's writeback; nothing else is flushed (the input stays in the page cache, as it
does for the user who just wrote it).  The output of every command run is checked against
NumPy (every element for files up to 2 GB, sampled blocks beyond).  Big files are removed as
soon as they are no longer needed.  The table comes last; ``--json`` writes every figure,
``--plot`` draws where the command's time goes phase by phase (from ``--report``'s spans)
against the floor (matplotlib, skipped if it is not installed).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
_FLOOR_PATHS = [os.path.join(ROOT, "..", "shared", "tools"), os.path.join(ROOT, "shared", "tools")]

# The floor, as shared/tools/io_floor.py has it, for checkouts without that file.
_FLOOR_FALLBACK = r'''
import os, sys, time
from concurrent.futures import ThreadPoolExecutor
import numpy as np

def floor(src, threads):
    size = os.path.getsize(src)
    buf = np.empty(size, np.uint8); mv = memoryview(buf)
    chunk = -(-size // threads)
    dst = src + '.floor-tmp'
    fi = os.open(src, os.O_RDONLY)
    fo = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.ftruncate(fo, size)
    def part(i, fn, fd):
        a, b = i * chunk, min((i + 1) * chunk, size)
        while a < b:
            a += fn(fd, [mv[a:b]], a)
    try:
        t = time.perf_counter()
        with ThreadPoolExecutor(threads) as ex:
            list(ex.map(lambda i: part(i, os.preadv, fi), range(threads)))
        t_read = time.perf_counter() - t
        t = time.perf_counter()
        with ThreadPoolExecutor(threads) as ex:
            list(ex.map(lambda i: part(i, os.pwritev, fo), range(threads)))
        t_write = time.perf_counter() - t
    finally:
        os.close(fi); os.close(fo); os.remove(dst)
    return size, t_read, t_write
'''


def _floor_source() -> tuple:
    for folder in _FLOOR_PATHS:
        path = os.path.normpath(os.path.join(folder, "io_floor.py"))
        if os.path.exists(path):
            return f"import sys; sys.path.insert(0, {os.path.dirname(path)!r}); from io_floor import floor", path
    return _FLOOR_FALLBACK, "bench_command.py (built-in copy)"


def _size(text: str) -> int:
    text = text.replace(" ", "")
    if "**" in text:
        a, b = text.split("**")
        return int(a) ** int(b)
    if "^" in text:
        a, b = text.split("^")
        return int(a) ** int(b)
    return int(float(text))


def _sync() -> None:
    try:
        os.sync()
    except AttributeError:  # pragma: no cover
        subprocess.run(["sync"], check=False)


def _timed(cmd, env=None) -> tuple:
    _sync()
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return wall, proc.stdout


def _config(text: str) -> tuple:
    """``BACKEND:RANKS[:VAR=VALUE[+VAR=VALUE...]]`` -> (backend, ranks, "VAR=VALUE+...")."""
    parts = text.split(":", 2)
    return parts[0], int(parts[1]), parts[2] if len(parts) > 2 else ""


def _config_env(env: dict, extra: str) -> dict:
    """``env`` with a configuration's ``VAR=VALUE[+VAR=VALUE...]`` (its third field) set."""
    return dict(env, **dict(kv.split("=", 1) for kv in extra.split("+") if kv))


def _label(backend: str, ranks: int, extra: str) -> str:
    return f"distscan {backend} {ranks} rank{'s' if ranks > 1 else ''}" + (f" {extra}" if extra else "")


def make_input(path: str, n: int, dtype: str) -> None:
    """``n`` elements of ``dtype``, written in blocks: small random integers (exact sums) for integer
    dtypes, standard normal values for floats (a sum of 0..100 integers would leave float32's exact
    range after 2^24 items, where NumPy's own sequential float32 sum stops growing)."""
    dt = np.dtype(dtype)
    header = np.lib.format.open_memmap(path, mode="w+", dtype=dt, shape=(n,))
    rng = np.random.default_rng(0)
    block = 1 << 24
    for lo in range(0, n, block):
        hi = min(n, lo + block)
        header[lo:hi] = (rng.standard_normal(hi - lo) if dt.kind == "f" else rng.integers(0, 100, hi - lo)).astype(dt)
    header.flush()
    del header


def check_output(inp: str, out: str, full_limit: int = 2 << 30) -> str:
    """Compare ``out`` with NumPy's cumsum of ``inp``: all of it up to ``full_limit`` bytes, else blocks.

    Integers exactly.  Floats against a float64 sum, within ``16 eps sqrt(N)`` times the prefix sum
    of ``|x|``: a sequential float32 sum of 2^29 items may be that far from the exact one, and a
    wrong offset is far outside it.
    """
    a = np.load(inp, mmap_mode="r")
    o = np.load(out, mmap_mode="r")
    ref_dt = np.cumsum(a[:1]).dtype
    if o.shape != a.shape or o.dtype != ref_dt:
        raise AssertionError(f"output is {o.shape} {o.dtype}, expected {a.shape} {ref_dt}")
    n = a.shape[0]
    exact = ref_dt.kind in "biu"
    acc = ref_dt if exact else np.dtype(np.float64)
    rtol = 0.0 if exact else 16 * np.finfo(ref_dt).eps * np.sqrt(n)

    def same(got, want, scale):
        return np.array_equal(got, want) if exact else bool(np.all(np.abs(got - want) <= rtol * scale))

    if a.nbytes <= full_limit:
        scale = None if exact else np.cumsum(np.abs(a), dtype=np.float64)
        if not same(o, np.cumsum(a, dtype=acc), scale):
            raise AssertionError("output differs from numpy.cumsum")
        return "all elements" + ("" if exact else f" (within {rtol:.1e} x the prefix sum of |x|)")
    # Sampled: running sums of the blocks between sample points (exact for integer inputs).
    rng = np.random.default_rng(1)
    starts = np.unique(np.concatenate([[0, n - (1 << 16)], rng.integers(0, n - (1 << 16), 30)]))
    step = 1 << 24
    carry, carry_abs = np.zeros((), acc), 0.0
    checked = 0
    pos = 0
    for s in starts:
        for lo in range(pos, s, step):  # the prefix up to the block, in pieces
            carry = carry + a[lo:min(s, lo + step)].sum(dtype=acc)
            if not exact:
                carry_abs += float(np.abs(a[lo:min(s, lo + step)]).sum(dtype=np.float64))
        pos = s
        blk = np.cumsum(a[s:s + (1 << 16)], dtype=acc) + carry
        scale = None if exact else np.cumsum(np.abs(a[s:s + (1 << 16)]), dtype=np.float64) + carry_abs
        if not same(o[s:s + (1 << 16)], blk, scale):
            raise AssertionError(f"output differs from numpy.cumsum in rows [{s}, {s + (1 << 16)})")
        checked += 1 << 16
    return f"{checked:,} elements in {len(starts)} blocks" + ("" if exact else f" (within {rtol:.1e})")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", action="append", help="elements, e.g. 2**29 (repeatable); default 1e8")
    p.add_argument("--dtype", default="int64")
    p.add_argument("--input", help="an existing .npy (instead of --size); kept")
    p.add_argument("--dir", default=None, help="folder for the files (default: the system temp folder)")
    p.add_argument("--ranks", default="1,2", help="comma-separated rank counts, e.g. 2 or 1,2")
    p.add_argument("--backend", default="cpu", help="comma-separated: cpu, cuda (each with every rank count)")
    p.add_argument("--config", action="append", default=[],
                   help="BACKEND:RANKS[:VAR=VALUE[+VAR=VALUE...]] instead of the cross product, e.g. --config cuda:2 "
                        "--config cpu:8 --config cuda:8:DISTSCAN_ALLOW_SHARED_GPU=1 (environment for that run)")
    p.add_argument("--launcher", default="mpiexec",
                   help="launcher command before -n, e.g. 'mpirun --allow-run-as-root' (Open MPI as root)")
    p.add_argument("--extra", default="", help="more arguments for distscan, e.g. '--strategy scan_then_add'")
    p.add_argument("--reps", type=int, default=2, help="repetitions of each configuration (the best is kept)")
    p.add_argument("--warm", action="store_true",
                   help="run each distscan configuration once, untimed, on the same file first: the GPU "
                        "kernels are then compiled and cached at the file's own chunk sizes (which pick the "
                        "kernel), as for a user's second run, instead of inside a timed one")
    p.add_argument("--threads", type=int, default=16, help="threads of the I/O floor")
    p.add_argument("--skip-numpy", action="store_true", help="skip the NumPy one-liner (it needs 2x the file in RAM)")
    p.add_argument("--json", help="write every figure here")
    p.add_argument("--plot", help="PNG of the command's phases against the floor (needs matplotlib)")
    a = p.parse_args(argv)

    folder = a.dir or tempfile.gettempdir()
    py = sys.executable
    launcher = shlex.split(a.launcher)
    configs = ([_config(c) for c in a.config] if a.config else
               [(b, int(r), "") for b in a.backend.split(",") for r in a.ranks.split(",")])
    floor_code, floor_from = _floor_source()
    env = dict(os.environ)
    env.setdefault("DISTSCAN_PROGRESS", "0")
    results = {"machine": os.uname().nodename, "cpus": os.cpu_count(), "floor_from": floor_from,
               "launcher": a.launcher, "reps": a.reps, "warm": a.warm, "time_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               "runs": []}
    sizes = [None] if a.input else [_size(s) for s in (a.size or ["1e8"])]
    t_all = time.perf_counter()
    for n in sizes:
        made = a.input is None
        inp = a.input or os.path.join(folder, f"bench_command_{n}_{a.dtype}.npy")
        if made:
            t0 = time.perf_counter()
            make_input(inp, n, a.dtype)
            print(f"# made {inp} ({os.path.getsize(inp) / 1e9:.2f} GB) in {time.perf_counter() - t0:.1f} s", flush=True)
        nbytes = os.path.getsize(inp)
        out = os.path.join(folder, "bench_command_out.npy")
        report = os.path.join(folder, "bench_command_report.json")
        entry = {"input": inp, "bytes": nbytes, "dtype": str(np.load(inp, mmap_mode="r").dtype),
                 "elements": int(np.load(inp, mmap_mode="r").shape[0]), "numpy": [], "floor": [], "commands": []}

        def command(backend: str, ranks: int) -> list:
            return launcher + ["-n", str(ranks), py, "-m", "distscan", inp, "-o", out, "--force",
                               "--backend", backend, "--report", report, "--quiet"] + shlex.split(a.extra)

        try:
            if a.warm:
                for backend, ranks, extra in configs:
                    wall, _ = _timed(command(backend, ranks), env=_config_env(env, extra))
                    os.remove(out)
                    os.remove(report)
                    print(f"# warm-up {_label(backend, ranks, extra)}: {wall:.2f} s (not counted)", flush=True)
            for rep in range(a.reps):
                if not a.skip_numpy:
                    code = f"import numpy as np; np.save({out!r}, np.cumsum(np.load({inp!r})))"
                    wall, _ = _timed([py, "-c", code])
                    entry["numpy"].append(wall)
                    os.remove(out)
                    print(f"# numpy one-liner: {wall:.2f} s", flush=True)
                code = (floor_code + f"\nimport json; s, r, w = floor({inp!r}, {a.threads}); "
                        "print(json.dumps([r, w]))")
                wall, text = _timed([py, "-c", code])
                r, w = json.loads(text.strip().splitlines()[-1])
                entry["floor"].append({"wall": wall, "read": r, "write": w})
                print(f"# floor: {wall:.2f} s (read {r:.2f} s, write {w:.2f} s)", flush=True)
                for backend, ranks, extra in configs:
                    wall, _ = _timed(command(backend, ranks), env=_config_env(env, extra))
                    with open(report) as f:
                        rep_json = json.load(f)
                    checked = check_output(inp, out) if rep == 0 else "checked in the first repetition"
                    os.remove(out)
                    os.remove(report)
                    entry["commands"].append({"backend": backend, "ranks": ranks, "env": extra, "wall": wall,
                                              "times_s": rep_json["times_s"], "backend_report": rep_json["backend"],
                                              "gpu": rep_json.get("gpu"), "checked": checked})
                    t = rep_json["times_s"]
                    print(f"# {_label(backend, ranks, extra)}: {wall:.2f} s (in the command {t['total']:.2f} s, "
                          f"process start-up {t.get('startup') or 0:.2f} s; ran: {rep_json['backend']['used']}, "
                          f"{rep_json['backend']['why']}; checked: {checked})", flush=True)
        finally:
            for path in (out, report):
                if os.path.exists(path):
                    os.remove(path)
            if made and os.path.exists(inp):
                os.remove(inp)
        results["runs"].append(entry)
    results["bench_wall_s"] = time.perf_counter() - t_all

    # -- the table ----------------------------------------------------------------------------
    lines = []
    for e in results["runs"]:
        fl = min(f["wall"] for f in e["floor"])
        npw = min(e["numpy"]) if e["numpy"] else None
        lines.append(f"{e['elements']:,} {e['dtype']} ({e['bytes'] / 1e9:.2f} GB), best of {a.reps}:")
        lines.append(f"  {'what':<44}{'wall s':>8}{'x floor':>9}{'x numpy':>9}{'command s':>10}{'start s':>9}"
                     f"  ran")
        if npw is not None:
            lines.append(f"  {'numpy one-liner':<44}{npw:>8.2f}{npw / fl:>9.2f}{1:>9.2f}")
        lines.append(f"  {'I/O floor':<44}{fl:>8.2f}{1:>9.2f}{(fl / npw if npw else float('nan')):>9.2f}")
        for backend, ranks, extra in configs:
            runs = [c for c in e["commands"] if (c["backend"], c["ranks"], c["env"]) == (backend, ranks, extra)]
            best = min(runs, key=lambda c: c["wall"])
            w, t = best["wall"], best["times_s"]
            lines.append(f"  {_label(backend, ranks, extra):<44}{w:>8.2f}{w / fl:>9.2f}"
                         f"{(w / npw if npw else float('nan')):>9.2f}{t['total']:>10.2f}{t.get('startup') or 0:>9.2f}"
                         f"  {best['backend_report']['used']}")
    results["table"] = lines
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=2)
    if a.plot:
        plot(results, a.plot)
    print("\n".join(lines))
    return 0


def plot(results: dict, path: str) -> None:
    """Where the command's time goes: one row per phase span (best run of each configuration) and the floor."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("# matplotlib is not installed: no plot", flush=True)
        return
    rows = []
    for e in results["runs"]:
        fl = min(e["floor"], key=lambda f: f["wall"])
        tag = f"{e['bytes'] / 1e9:.1f} GB"
        start = fl["wall"] - fl["read"] - fl["write"]
        rows.append((f"{tag} floor", [("start-up", 0, start), ("read", start, fl["read"]),
                                      ("write", start + fl["read"], fl["write"])], fl["wall"]))
        best = {}
        for c in e["commands"]:
            key = (c["backend"], c["ranks"], c.get("env", ""))
            if key not in best or c["wall"] < best[key]["wall"]:
                best[key] = c
        for (backend, ranks, extra), c in best.items():
            t = c["times_s"]
            # wall - total - startup is the launcher's start *and* what follows the command (the
            # rename, MPI_Finalize, the exits): not split by the report, drawn first as one bar
            # ("launch + exit"; on the one-H200 host, mpirun's start is about 0.35 s of it and the
            # ranks' exit about 0.17 s: benchmarks/RESULTS.md, "The command")
            start = c["wall"] - t["total"]
            proc = min(t.get("startup") or 0.0, start)
            bars = [("launch + exit", 0, start - proc), ("start-up", start - proc, proc)]
            for name, (s0, s1) in t.get("spans", {}).items():
                bars.append((name, start + s0, s1 - s0))
            rows.append((f"{tag} {backend} x{ranks}" + (f" {extra}" if extra else ""), bars, c["wall"]))
    colors = {"launch + exit": "#cccccc", "start-up": "#999999", "read": "#4e79a7", "write": "#e15759", "load": "#76b7b2",
              "store": "#f28e2b", "exscan": "#59a14f", "compute": "#edc948", "context": "#b07aa1", "gpu": "#9c755f"}
    fig, ax = plt.subplots(figsize=(10, 0.9 + 0.9 * len(rows)))
    for i, (label, bars, wall) in enumerate(rows):
        sub = {}
        for name, s, d in bars:
            sub.setdefault(name, []).append((s, d))
        names = [nm for nm in ("launch + exit", "start-up", "context", "load", "store", "read", "gpu", "write", "exscan")
                 if nm in sub]
        for j, nm in enumerate(names):
            h = 0.8 / len(names)
            ax.broken_barh(sub[nm], (i - 0.4 + j * h, h), color=colors.get(nm, "#bab0ac"),
                           label=nm if nm not in ax.get_legend_handles_labels()[1] else None)
        ax.text(wall, i, f" {wall:.2f} s", va="center")
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([r[0] for r in rows])
    ax.invert_yaxis()
    ax.set_xlabel("seconds from the launch (wall)")
    ax.set_title("distscan: where the time goes, against the I/O floor")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    ax.set_xlim(0, max(r[2] for r in rows) * 1.15)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"# plot written to {path}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
