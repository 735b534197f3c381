"""Multi-GPU tests (marked gpu; skipped without enough GPUs): one rank per GPU, shared GPUs, the command.

Each test launches ``mpirun``/``mpiexec`` itself (run from a serial pytest, as tests/cli/ does):

* ``tests/gpu/mpi_check.py`` at 1 rank on 1 GPU, 2 ranks on 2 GPUs, 4 ranks on 4 GPUs, and 3 ranks
  on 1 GPU and 4 ranks on 2 GPUs (``DISTSCAN_ALLOW_SHARED_GPU=1``): device-resident scans of CuPy arrays, exact against
  NumPy for integers, both strategies identical, balanced / uneven / empty shards;
* the command with more ranks than GPUs: ranks beyond the GPUs scan on the host (no error), or share
  them with ``DISTSCAN_ALLOW_SHARED_GPU=1``;
* issue 30's state scans through the command on GPUs (reverse segmented sums and gcd, reverse
  recurrences with segments and ``--initial``), flags around every rank boundary, in pieces too;
* ``python -m distscan --backend cuda`` on files, exact against NumPy: held in memory, and streamed
  through a ``--memory-limit`` smaller than the part, chunks in pieces through a small
  ``--gpu-memory-limit``, both strategies, 1-D and 2-D, exclusive, more ranks than rows (empty
  shards); the report's GPU phase times.

GPUs are chosen with ``CUDA_VISIBLE_DEVICES``; every launch has a timeout (a hang fails the test).
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest

from tests.support.launch import REPO, python_env, run_mpi
from tests.support.reference import recurrence_reference, reference_scan, segmented_reference

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
# seconds per launch (kernels compile on the first one): the one-rank check took 89 s on a fresh
# H100 beside one other pytest run, and ran past 150 s beside seven (tests/gpu/run_suite.sh, 2026-11-26)
T = 300


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


@pytest.mark.parametrize("ranks,gpus", [(1, 1), (3, 1), (2, 2), (4, 4), (4, 2)],
                         ids=["1r1g", "3r1g", "2r2g", "4r4g", "4r2g"])
def test_device_resident_scans_exact(ranks, gpus):
    """3 ranks sharing one GPU: the carries between GPU ranks (the ordered reductions, seeds and
    totals of every operator) checked on a one-GPU machine too."""
    _need(gpus)
    shared = ranks > gpus
    env = _env(gpus, DISTSCAN_ALLOW_SHARED_GPU="1" if shared else "0")
    args = [sys.executable, REPO / "tests" / "gpu" / "mpi_check.py"] + (["--expect-shared"] if shared else [])
    proc = run_mpi(ranks, args, timeout=T, env=env)
    assert proc.returncode == 0, f"stdout:\n{proc.stdout[-6000:]}\nstderr:\n{proc.stderr[-6000:]}"
    assert f"GPU-MPI OK ranks={ranks} gpus={gpus}" in proc.stdout, proc.stdout[-3000:]


def _distscan(*args):
    return [sys.executable, "-m", "distscan", *map(str, args)]


def test_more_ranks_than_gpus_scan_on_the_host_or_share(tmp_path):
    _need(1)
    gpus = min(GPUS, 2)
    inp, rep = tmp_path / "a.npy", tmp_path / "r.json"
    a = np.arange(3_000_000, dtype=np.int64)
    np.save(inp, a)
    for shared in ("0", "1"):
        proc = run_mpi(gpus * 2, _distscan(inp, "--backend", "cuda", "--quiet", "--force", "--report", rep),
                       timeout=T, env=_env(gpus, DISTSCAN_ALLOW_SHARED_GPU=shared))
        assert proc.returncode == 0, proc.stderr
        np.testing.assert_array_equal(np.load(tmp_path / "a.cumsum.npy"), np.cumsum(a))
        per_rank = json.loads(rep.read_text())["gpu"]["per_rank"]
        devices = [g["device"] for g in per_rank]
        if shared == "1":
            assert devices == [r % gpus for r in range(gpus * 2)], devices
        else:
            assert devices == list(range(gpus)) + [None] * gpus, devices
            assert all("scans on the host" in g["why"] for g in per_rank[gpus:])


FILE_CASES = [
    # (dtype, shape, GPU memory limit, strategy, exclusive, host memory limit and the mode it gives)
    ("int64", (3_000_017,), "4M", "auto", False, ("4M", "streamed")),
    ("int64", (3_000_017,), "4M", "reduce_then_scan", True, ("4M", "streamed")),
    ("int32", (1_000_003, 3), "5M", "scan_then_add", False, ("5M", "streamed")),
    ("int32", (1_000_003, 3), None, "scan_then_add", True, (None, "resident")),
    ("int64", (3_000_017,), None, "reduce_then_scan", False, (None, "resident")),
    ("uint16", (3,), None, "auto", False, (None, "resident")),  # fewer rows than ranks: empty shards
]


@pytest.mark.parametrize("ranks,gpus", [(3, 1), (2, 2), (4, 4), (4, 2)], ids=["3r1g", "2r2g", "4r4g", "4r2g"])
@pytest.mark.parametrize("case", FILE_CASES, ids=[f"{c[0]}-{len(c[1])}d-{c[2]}-{c[3]}-{'ex' if c[4] else 'in'}"
                                                  for c in FILE_CASES])
def test_command_on_gpus_exact(tmp_path, ranks, gpus, case):
    _need(gpus)
    dtype, shape, limit, strategy, exclusive, (host_limit, mode) = case
    rng = np.random.default_rng(ranks * 7 + len(shape))
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dtype)
    inp, out, rep = tmp_path / "in.npy", tmp_path / "out.npy", tmp_path / "r.json"
    np.save(inp, a)
    args = [inp, "-o", out, "--backend", "cuda", "--strategy", strategy, "--report", rep, "--quiet"]
    args += ["--gpu-memory-limit", limit] if limit else []
    args += ["--memory-limit", host_limit] if host_limit else []
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
    # Integer sums give the same bytes on the host and the GPU, so a rank's chunks go to the host
    # while its CUDA starts (GpuEngine.exact): a part of a few MB may be done before CUDA is up,
    # and "cpu" is then a right answer.  --backend cuda still makes every rank given a GPU wait for
    # its start and fail if it failed (GpuEngine.check), which the return code above covers.
    # test_command_float_sums_on_gpus is the one whose chunks must all go to the GPUs.
    assert r["backend"]["used"] in ("cuda", "cuda+cpu", "cpu")
    for g in r["gpu"]["per_rank"]:
        assert g["device"] is not None and "did not" not in g["why"], g
    assert {g["mode"] for g in r["pipeline"]["per_rank"]} <= {mode, "resident"}
    if limit:
        assert all(g["slot_rows"] * a[:1].nbytes * 2 <= 4 << 20 for g in r["gpu"]["per_rank"]
                   if g["slot_rows"] is not None)
    devices = [g["device"] for g in r["gpu"]["per_rank"]]
    assert sorted(set(devices)) == list(range(gpus)), devices
    t = r["times_s"]
    for phase in ("read", "h2d", "scan", "exscan", "d2h", "write", "total"):
        assert t[phase] >= 0, phase
    if any(g["chunks_on_gpu"] for g in r["gpu"]["per_rank"]):
        assert t["h2d"] > 0 and t["d2h"] > 0


@pytest.mark.parametrize("ranks,gpus", [(3, 1), (2, 2), (4, 2)], ids=["3r1g", "2r2g", "4r2g"])
def test_command_float_sums_on_gpus(tmp_path, ranks, gpus):
    """Float sums wait for the GPU (a chunk's bits must not depend on where it ran): every chunk of
    every rank goes to a GPU, one rank per GPU or two sharing one, held in memory or streamed."""
    _need(gpus)
    rng = np.random.default_rng(ranks)
    a = rng.standard_normal((2_000_003, 2)).astype(np.float32)
    inp, out, rep = tmp_path / "in.npy", tmp_path / "out.npy", tmp_path / "r.json"
    np.save(inp, a)
    # |error| <= 64 eps times the running sum of magnitudes (a generous multiple of the kernels' depth)
    bound = 64 * np.finfo(np.float32).eps * np.cumsum(np.abs(a.astype(np.float64)), axis=0)
    want = np.cumsum(a.astype(np.float64), axis=0)
    for limits in ([], ["--memory-limit", "4M", "--gpu-memory-limit", "2M"]):
        args = [inp, "-o", out, "--backend", "cuda", "--report", rep, "--quiet", "--force", *limits]
        env = _env(gpus, DISTSCAN_ALLOW_SHARED_GPU="1" if ranks > gpus else "0")
        proc = run_mpi(ranks, _distscan(*args), timeout=T, env=env)
        assert proc.returncode == 0, proc.stderr
        got = np.load(out)
        assert got.dtype == np.float32 and got.shape == a.shape
        assert np.all(np.abs(got - want) <= bound), limits
        r = json.loads(rep.read_text())
        assert r["backend"]["used"] == "cuda", r["backend"]
        per_rank = r["gpu"]["per_rank"]
        assert sorted({g["device"] for g in per_rank}) == list(range(gpus)), per_rank
        assert all(g["chunks_on_host"] == 0 and g["chunks_on_gpu"] > 0 for g in per_rank), per_rank
        assert r["times_s"]["h2d"] > 0 and r["times_s"]["d2h"] > 0


@pytest.mark.parametrize("ranks,gpus", [(3, 1), (2, 2), (4, 2)], ids=["3r1g", "2r2g", "4r2g"])
def test_command_state_scans_on_gpus_carry_across_ranks_and_pieces(tmp_path, ranks, gpus):
    """``--reverse --segments`` sums, an exclusive reverse segmented gcd and a reverse recurrence
    with segments and ``--initial`` through the command on GPUs, against sequential references:
    flags on the rows around every plausible rank boundary (a part's first row flagged is, in
    reverse, the segment end its carry must keep: kernels/util/states.cuh), held in memory and in
    pieces through a small ``--gpu-memory-limit`` (a piece's total seeds the next)."""
    _need(gpus)
    rng = np.random.default_rng(ranks * 11 + gpus)
    n = 300_007
    ints = rng.integers(-50, 50, n).astype(np.int32)
    g = rng.integers(-60, 60, n)
    a, b = rng.uniform(-1, 1, n), rng.standard_normal(n)
    flags = rng.random(n) < 0.005
    for r in range(1, ranks):
        flags[[max(0, n * r // ranks + d) for d in (-1, 0, 1)]] = True
    for name, arr in [("ints", ints), ("g", g), ("a", a), ("b", b), ("flags", flags)]:
        np.save(tmp_path / f"{name}.npy", arr)
    f = str(tmp_path / "flags.npy")
    cases = [
        (["ints.npy", "--reverse", "--segments", f, "--dtype", "int64"],
         segmented_reference(ints, flags, "sum", reverse=True, dtype=np.int64), 0),
        (["g.npy", "--op", "gcd", "--reverse", "--exclusive", "--segments", f],
         segmented_reference(g, flags, "gcd", reverse=True, exclusive=True), 0),
        (["recurrence", "a.npy", "b.npy", "--initial", "2", "--reverse", "--segments", f],
         recurrence_reference(a, b, initial=2.0, segments=flags, reverse=True), 1e-12),
    ]
    env = _env(gpus, DISTSCAN_ALLOW_SHARED_GPU="1" if ranks > gpus else "0")
    for words, want, rtol in cases:
        for limit in ([], ["--gpu-memory-limit", "1M"]):
            out, rep = tmp_path / "out.npy", tmp_path / "r.json"
            args = [str(tmp_path / w) if w.endswith(".npy") and "/" not in w else w for w in words]
            proc = run_mpi(ranks, _distscan(*args, "-o", out, "--backend", "cuda", "--report", rep, "--quiet",
                                            "--force", *limit), timeout=T, env=env)
            what = " ".join(words[:4] + limit)
            assert proc.returncode == 0, f"{what}: {proc.stderr[-3000:]}"
            got = np.load(out)
            if rtol:
                np.testing.assert_allclose(got, want, rtol=0, atol=rtol * (np.abs(want).max() + 1), err_msg=what)
            else:
                np.testing.assert_array_equal(got, want, err_msg=what)
            per_rank = json.loads(rep.read_text())["gpu"]["per_rank"]
            assert all(p["device"] is not None for p in per_rank), per_rank
            assert all(p["chunks_on_gpu"] for p in per_rank), per_rank  # state scans wait for the GPU
