"""The CPU state loops (distscan.ops.jit) made from several threads at once: found by review
(jit._cached put a loop's module in sys.modules before running it, and numba compiles or loads
while it runs, so another thread took the half-made module: AttributeError, no attribute 'scan')."""

import os
import subprocess
import sys

import pytest

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.skipif(bool(os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK")),
                       reason="starts processes of its own; run it from a serial pytest"),
]
pytest.importorskip("numba")

THREADS = r"""
import threading, numpy as np, distscan
errors = []
def work(k):
    try:
        r = np.random.default_rng(k); x = r.standard_normal(1000); f = r.random(1000) < 0.1
        got = distscan.cumsum(x, segments=f, comm=None)
        ref = np.concatenate([np.cumsum(s) for s in np.split(x, np.flatnonzero(f[1:]) + 1)])
        assert np.allclose(got, ref)
    except Exception as e:
        errors.append(f"{type(e).__name__}: {e}")
ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
[t.start() for t in ts]; [t.join() for t in ts]
print(errors)
"""


def test_first_calls_from_several_threads_at_once(tmp_path):
    """jit._cached registers the loop's module in sys.modules before running it: a second thread
    took the half-run module and failed with AttributeError (no attribute 'scan')."""
    env = dict(os.environ, DISTSCAN_CACHE_DIR=str(tmp_path / "cache"))
    for _ in range(2):  # cold, then warm disk cache
        proc = subprocess.run([sys.executable, "-c", THREADS], env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == "[]", proc.stdout
