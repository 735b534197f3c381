"""Multi-GPU tests (marked gpu; skipped without enough GPUs): one rank per GPU, shared GPUs, the command.

Each test launches ``mpirun``/``mpiexec`` itself (run from a serial pytest, as tests/cli/ does):

* ``tests/gpu/mpi_check.py`` at 1 rank on 1 GPU, 2 ranks on 2 GPUs, 4 ranks on 4 GPUs and 4 ranks
  on 2 GPUs (``DISTSCAN_ALLOW_SHARED_GPU=1``): device-resident scans of CuPy arrays, exact against
  NumPy for integers, both strategies identical, balanced / uneven / empty shards;
* more ranks than GPUs without sharing: one clear error line, non-zero exit, no hang;
* ``python -m distscan --backend cuda`` on files, exact against NumPy: resident, and streamed
  through a ``--gpu-memory-limit`` smaller than the file, both strategies, 1-D and 2-D, exclusive,
  more ranks than rows (empty shards); the report's GPU phase times.

GPUs are chosen with ``CUDA_VISIBLE_DEVICES``; every launch has a timeout (a hang fails the test).
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest

from tests.support.launch import REPO, python_env, run_mpi
from tests.support.reference import reference_scan

cp = pytest.importorskip("cupy")

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.timeout(600),
    pytest.mark.skipif(bool(os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK")),
                       reason="launches mpirun itself; run it from a serial pytest"),
]


def _gpus() -> int:
    try:
        return int(cp.cuda.runtime.getDeviceCount())
    except Exception:  # noqa: BLE001
        return 0


GPUS = _gpus()
T = 150  # seconds per launch (kernels compile on the first one)


def _env(gpus: int, **extra):
    env = python_env(CUDA_VISIBLE_DEVICES=",".join(str(i) for i in range(gpus)), **extra)
    env.pop("DISTSCAN_GPU", None)
    env.setdefault("DISTSCAN_ALLOW_SHARED_GPU", "0")
    # The GPU machines run tests as root under Open MPI, whose mpirun refuses root without these.
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    return env


@pytest.fixture(scope="module", autouse=True)
def _precompiled():
    """The check script's kernel modules, compiled here in parallel processes (CuPy's disk cache):
    compiled by the ranks one after another they would take minutes of the launches' time."""
    if GPUS:
        from distscan.backends.cuda import compile as cc
        from tests.gpu import mpi_check

        cc.precompile(mpi_check.module_keys())
    yield


def _need(gpus: int):
    if GPUS < gpus:
        pytest.skip(f"needs {gpus} GPUs, {GPUS} visible")


@pytest.mark.parametrize("ranks,gpus", [(1, 1), (2, 2), (4, 4), (4, 2)], ids=["1r1g", "2r2g", "4r4g", "4r2g"])
def test_device_resident_scans_exact(ranks, gpus):
    _need(gpus)
    shared = ranks > gpus
    env = _env(gpus, DISTSCAN_ALLOW_SHARED_GPU="1" if shared else "0")
    args = [sys.executable, REPO / "tests" / "gpu" / "mpi_check.py"] + (["--expect-shared"] if shared else [])
    proc = run_mpi(ranks, args, timeout=T, env=env)
    assert proc.returncode == 0, f"stdout:\n{proc.stdout[-6000:]}\nstderr:\n{proc.stderr[-6000:]}"
    assert f"GPU-MPI OK ranks={ranks} gpus={gpus}" in proc.stdout, proc.stdout[-3000:]


def _distscan(*args):
    return [sys.executable, "-m", "distscan", *map(str, args)]


def test_more_ranks_than_gpus_is_a_clear_error(tmp_path):
    _need(1)
    gpus = min(GPUS, 2)
    inp = tmp_path / "a.npy"
    np.save(inp, np.arange(1000, dtype=np.int64))
    proc = run_mpi(gpus * 2, _distscan(inp, "--backend", "cuda"), timeout=T, env=_env(gpus))
    assert proc.returncode == 1, proc.stderr
    # Open MPI's mpirun adds its own banner ("... exited with non-zero status ...") after the job; ours is one line.
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("distscan")]
    assert len(lines) == 1 and lines[0].startswith("distscan: error: "), proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    assert f"only {gpus} GPU" in lines[0] and "DISTSCAN_ALLOW_SHARED_GPU" in lines[0], lines[0]
    assert not (tmp_path / "a.cumsum.npy").exists()
    # Sharing allowed: the same command works, each rank on local_rank % gpus.
    proc = run_mpi(gpus * 2, _distscan(inp, "--backend", "cuda", "--quiet"), timeout=T,
                   env=_env(gpus, DISTSCAN_ALLOW_SHARED_GPU="1"))
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "a.cumsum.npy"), np.cumsum(np.arange(1000, dtype=np.int64)))


FILE_CASES = [
    # (dtype, shape, limit, strategy, exclusive, expected mode)
    ("int64", (3_000_017,), "4M", "auto", False, "streamed"),
    ("int64", (3_000_017,), "4M", "reduce_then_scan", True, "streamed"),
    ("int32", (1_000_003, 3), "5M", "scan_then_add", False, "streamed"),
    ("int32", (1_000_003, 3), None, "scan_then_add", True, "resident"),
    ("int64", (3_000_017,), None, "reduce_then_scan", False, "resident"),
    ("uint16", (3,), None, "auto", False, "resident"),  # fewer rows than ranks: empty shards
]


@pytest.mark.parametrize("ranks,gpus", [(2, 2), (4, 4), (4, 2)], ids=["2r2g", "4r4g", "4r2g"])
@pytest.mark.parametrize("case", FILE_CASES, ids=[f"{c[0]}-{len(c[1])}d-{c[2]}-{c[3]}-{'ex' if c[4] else 'in'}"
                                                  for c in FILE_CASES])
def test_command_on_gpus_exact(tmp_path, ranks, gpus, case):
    _need(gpus)
    dtype, shape, limit, strategy, exclusive, mode = case
    rng = np.random.default_rng(ranks * 7 + len(shape))
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dtype)
    inp, out, rep = tmp_path / "in.npy", tmp_path / "out.npy", tmp_path / "r.json"
    np.save(inp, a)
    args = [inp, "-o", out, "--backend", "cuda", "--strategy", strategy, "--report", rep, "--quiet"]
    args += ["--gpu-memory-limit", limit] if limit else []
    args += ["--exclusive"] if exclusive else []
    if a.size < 100:
        args += ["--verify"]
    env = _env(gpus, DISTSCAN_ALLOW_SHARED_GPU="1" if ranks > gpus else "0")
    proc = run_mpi(ranks, _distscan(*args), timeout=T, env=env)
    assert proc.returncode == 0, proc.stderr
    want = reference_scan(a, "sum", exclusive=exclusive)  # int64 (uint64) sums, exact
    got = np.load(out)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    r = json.loads(rep.read_text())
    assert r["backend"]["used"] == "cuda"
    assert r["gpu"]["per_rank"][0]["modes"] == [mode]
    if limit:
        assert a.nbytes > 2 * 1024 * 1024 and all(g["budget_bytes"] < a.nbytes for g in r["gpu"]["per_rank"])
    devices = [g["device"] for g in r["gpu"]["per_rank"]]
    assert sorted(set(devices)) == list(range(gpus)), devices
    t = r["times_s"]
    for phase in ("read", "h2d", "scan", "exscan", "d2h", "write", "total"):
        assert t[phase] >= 0, phase
    if a.size > 1000:
        assert t["h2d"] > 0 and t["d2h"] > 0
