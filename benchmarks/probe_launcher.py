#!/usr/bin/env python3
"""What the launcher and the processes cost around the command, apart from the command's work.

    python benchmarks/probe_launcher.py [--launcher "mpirun --allow-run-as-root --bind-to none"] [--ranks 2,8] [--reps 5]

Question: of a command's wall time less its report's ``startup`` and ``total`` (what
bench_command.py draws as "launch + exit"), how much is the launcher starting the ranks and how
much comes after the command (the rename, ``MPI_Finalize``, the exits)?  Per rank count, medians
of --reps fresh launches of: ``python -c pass`` alone; the launcher around ``true``, around
``python -c pass``, around ``import numpy; from mpi4py import MPI``; and the command on a
1000-item file, run through a wrapper that notes when each rank's ``main()`` starts and returns,
so that the time from the launch to the last start and from the last return to the launcher's
exit are measured from outside.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

# Runs the command as ``python -m distscan`` does, noting this rank's main() start and end.
WRAPPER = """
import os, sys, time
t0 = time.time()
sys.argv = ["distscan"] + sys.argv[1:]
from distscan.__main__ import run
rc = run()
rank = next((os.environ[v] for v in ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK") if v in os.environ), "0")
with open(os.path.join(os.environ["PROBE_FOLDER"], "end." + rank), "w") as f:
    f.write(f"{t0} {time.time()}")
sys.exit(rc)
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--launcher", default="mpiexec")
    ap.add_argument("--ranks", default="2,8")
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    launcher, py = shlex.split(a.launcher), sys.executable
    folder = tempfile.mkdtemp(prefix="probe_launcher_")
    env = dict(os.environ, PROBE_FOLDER=folder, DISTSCAN_PROGRESS="0")
    wrapper = os.path.join(folder, "wrap.py")
    with open(wrapper, "w") as f:
        f.write(WRAPPER)
    tiny, out, report = (os.path.join(folder, n) for n in ("tiny.npy", "tiny_out.npy", "report.json"))
    np.save(tiny, np.arange(1000))

    def wall(cmd) -> float:
        t = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, env=env)
        return time.perf_counter() - t

    for n in (int(k) for k in a.ranks.split(",")):
        rows: dict = {}
        run = launcher + ["-n", str(n)]
        for _ in range(a.reps):
            rows.setdefault("python -c pass (one process, no launcher)", []).append(wall([py, "-c", "pass"]))
            rows.setdefault("launcher: true", []).append(wall(run + ["true"]))
            rows.setdefault("launcher: python -c pass", []).append(wall(run + [py, "-c", "pass"]))
            rows.setdefault("launcher: import numpy; from mpi4py import MPI", []).append(
                wall(run + [py, "-c", "import numpy; from mpi4py import MPI"]))
            for f in glob.glob(os.path.join(folder, "end.*")):
                os.remove(f)
            t0 = time.time()
            subprocess.run(run + [py, wrapper, tiny, "-o", out, "--force", "--quiet", "--backend", "cpu",
                                  "--report", report], check=True, env=env)
            t1 = time.time()
            ends = [tuple(map(float, open(f).read().split())) for f in glob.glob(os.path.join(folder, "end.*"))]
            t = json.load(open(report))["times_s"]
            rows.setdefault("the command, 1000 items: wall", []).append(t1 - t0)
            rows.setdefault("  launch to the last rank's main()", []).append(max(e[0] for e in ends) - t0)
            rows.setdefault("  report: startup (process age at the command)", []).append(t["startup"])
            rows.setdefault("  report: total", []).append(t["total"])
            rows.setdefault("  last main() return to the launcher's exit", []).append(t1 - max(e[1] for e in ends))
        print(f"{n} ranks, {a.launcher}, medians of {a.reps} (s):")
        for k, v in rows.items():
            print(f"  {k:<52}{statistics.median(v):7.3f}")


if __name__ == "__main__":
    main()
