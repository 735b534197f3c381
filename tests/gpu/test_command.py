"""The file command on one GPU (marked gpu; skipped without one): the GPU engine of
distscan.pipeline.cuda with real CUDA (DeviceChunks), launched under mpirun/mpiexec.

* float sums wait for the GPU: every chunk on the GPU, the same bytes run after run and with
  either staging (``DISTSCAN_GPU_STAGING``), within a stated bound of a float64 sum;
* chunks through a small ``--gpu-memory-limit`` in pieces; 2-D rows, exclusive scans, both strategies;
* 2 ranks sharing the GPU (``DISTSCAN_ALLOW_SHARED_GPU=1``): the second rank's carries
  (``reduce_then_scan``: the GPU's reductions) and seeded scans on the GPU;
* 3 ranks on one GPU by default: rank 0 on the GPU, the others on the host, the same result;
* ``--backend auto`` leaves a part that the host scans faster than CUDA starts on the host, and says
  why; ``--backend cuda`` on the same file runs on the GPU; the summary says where chunks ran.
"""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from tests.support.devices import require_gpu
from tests.support.launch import python_env, run_mpi

cp = require_gpu()

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.timeout(600),
]

T = 240


def _env(**extra):
    env = python_env(CUDA_VISIBLE_DEVICES="0", **extra)
    env.pop("DISTSCAN_GPU", None)
    env.setdefault("DISTSCAN_ALLOW_SHARED_GPU", "0")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    return env


def _run(ranks, args, **env):
    proc = run_mpi(ranks, [sys.executable, "-m", "distscan", *map(str, args)], timeout=T, env=_env(**env))
    assert proc.returncode == 0, f"stdout:\n{proc.stdout[-4000:]}\nstderr:\n{proc.stderr[-4000:]}"
    return proc


def _float_bound(a, axis=0):
    """|distscan - exact| <= 64 * eps * sum |x| per column (a generous multiple of the kernels' depth)."""
    eps = np.finfo(a.dtype).eps
    return 64 * eps * np.sum(np.abs(a.astype(np.float64)), axis=axis)


@pytest.mark.parametrize("dtype,shape,limit,strategy,exclusive", [
    ("float32", (6_000_011,), None, "auto", False),
    ("float64", (2_000_003, 3), "1M", "reduce_then_scan", True),
    ("float32", (3_000_017,), "256K", "scan_then_add", False),
])
def test_float_sums_run_on_the_gpu_and_repeat_bitwise(tmp_path, dtype, shape, limit, strategy, exclusive):
    rng = np.random.default_rng(5)
    a = rng.standard_normal(shape).astype(dtype)
    inp, rep = tmp_path / "in.npy", tmp_path / "r.json"
    np.save(inp, a)
    outs = []
    for ranks, staging, shared in ((1, "pageable", "0"), (1, "register", "0"), (2, "pageable", "1")):
        out = tmp_path / f"out-{ranks}-{staging}.npy"
        args = [inp, "-o", out, "--backend", "cuda", "--strategy", strategy, "--report", rep, "--quiet"]
        args += ["--gpu-memory-limit", limit] if limit else []
        args += ["--exclusive"] if exclusive else []
        _run(ranks, args, DISTSCAN_GPU_STAGING=staging, DISTSCAN_ALLOW_SHARED_GPU=shared)
        r = json.loads(rep.read_text())
        assert r["backend"]["used"] == "cuda", r["backend"]
        for g in r["gpu"]["per_rank"]:
            assert g["device"] == 0 and g["chunks_on_host"] == 0 and g["chunks_on_gpu"] > 0, g
            assert g["staging"] == staging
            steps = g["start_steps_s"]  # every step of a real CUDA start, in order, within it
            assert list(steps) == ["import", "context", "modules"], steps
            assert 0 <= steps["import"] <= steps["context"] <= steps["modules"] <= g["context_s"] + 1e-6, g
            if limit:
                assert g["slot_rows"] * a[:1].nbytes * 2 <= 2 * 1024 ** 2
        t = r["times_s"]
        assert t["h2d"] > 0 and t["d2h"] > 0 and t["context"] > 0
        assert "context" in t["spans"] and "gpu" in t["spans"]
        outs.append(np.load(out))
    ref = np.cumsum(a.astype(np.float64), axis=0)
    if exclusive:
        ref = np.concatenate([np.zeros((1,) + a.shape[1:]), ref[:-1]])
    assert np.all(np.abs(outs[0] - ref) <= _float_bound(a))
    # one rank: the same bytes with either staging (and run after run); two ranks differ in rounding only
    np.testing.assert_array_equal(outs[0], outs[1])
    assert np.all(np.abs(outs[2] - ref) <= _float_bound(a))


def test_ranks_beyond_the_gpu_scan_on_the_host_by_default(tmp_path):
    rng = np.random.default_rng(6)
    a = rng.integers(-10 ** 6, 10 ** 6, 5_000_011).astype(np.int64)
    inp, out, rep = tmp_path / "in.npy", tmp_path / "out.npy", tmp_path / "r.json"
    np.save(inp, a)
    proc = _run(3, [inp, "-o", out, "--backend", "cuda", "--report", rep])
    np.testing.assert_array_equal(np.load(out), np.cumsum(a))
    r = json.loads(rep.read_text())
    assert [g["device"] for g in r["gpu"]["per_rank"]] == [0, None, None]
    assert r["backend"]["ranks"]["cpu"] == [1, 2] or r["backend"]["ranks"]["cpu"] == [0, 1, 2]
    assert "rank" in proc.stdout and "GPU" in proc.stdout  # the summary says what ran where


def test_auto_leaves_a_small_part_on_the_host_and_cuda_takes_the_gpu(tmp_path):
    rng = np.random.default_rng(7)
    a = rng.standard_normal(1 << 25).astype(np.float32)  # the host scans it in about 0.1 s
    inp, out, rep = tmp_path / "in.npy", tmp_path / "out.npy", tmp_path / "r.json"
    np.save(inp, a)
    ref = np.cumsum(a.astype(np.float64))
    proc = _run(1, [inp, "-o", out, "--report", rep, "--force"])
    r = json.loads(rep.read_text())
    assert r["backend"]["requested"] == "auto" and r["backend"]["used"] == "cpu"
    assert "less than CUDA takes to start" in r["backend"]["why"] and "cpu on 1 rank" in proc.stdout
    assert np.all(np.abs(np.load(out) - ref) <= _float_bound(a) * np.sqrt(a.size))  # the host's sequential sum
    proc = _run(1, [inp, "-o", out, "--report", rep, "--force", "--backend", "cuda"])
    r = json.loads(rep.read_text())
    assert r["backend"] == {"requested": "cuda", "used": "cuda", "ranks": {"cuda": [0]}, "why": "--backend cuda"}
    assert "cuda on 1 rank" in proc.stdout and "chunks" in proc.stdout
    assert np.all(np.abs(np.load(out) - ref) <= _float_bound(a))


@pytest.mark.parametrize("limit", [None, "64K"])
def test_dtype_float16_rounds_the_input_first_on_the_gpu(tmp_path, limit):
    """``--dtype float16`` of float64 and int64 files: the GPU's chunks round their input to float16
    on the device before the float32 accumulator sees it, as numpy.cumsum(dtype=) and the host
    engine do (an audit, 2026-11-27: the command scanned the input unrounded); 1 and 2 ranks, whole
    chunks and pieces through small device slots.  1000.3 is 1000.5 in float16 and 70000 is inf; the
    prefix sums are exact in float32, so the result is bit for bit the reference."""
    inputs = {"float64": np.tile([1000.3, -1000.0, 0.125], 40_001),
              "int64": np.tile(np.array([70000, -69999, 3], np.int64), 1_001)}
    for name, a in inputs.items():
        inp = tmp_path / f"{name}.npy"
        np.save(inp, a)
        with np.errstate(invalid="ignore"):
            want = np.cumsum(a.astype(np.float16).astype(np.float64)).astype(np.float16)
        for ranks in (1, 2):
            out = tmp_path / f"o-{name}-{ranks}.npy"
            args = [inp, "-o", out, "--backend", "cuda", "--dtype", "float16", "--quiet"]
            args += ["--gpu-memory-limit", limit] if limit else []
            _run(ranks, args, DISTSCAN_ALLOW_SHARED_GPU="1")
            np.testing.assert_array_equal(np.load(out), want, err_msg=f"{name} at {ranks} ranks")
