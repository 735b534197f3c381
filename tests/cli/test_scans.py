"""The ``distscan`` command's results: NumPy's scan at 1, 2, 3 ranks and 8 (oversubscribed, empty ranks),
float sums within the verify bound with a complete report, ``--force`` and ``--exclusive``, ``--op
xor`` (bitwise on integers, logical on bool), arrays with no elements, a 250-byte output name, and
one process without mpi4py.  One rank runs in-process; several ranks run in the session's batches
(tests/cli/conftest.py); running without mpi4py starts processes of its own.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from distscan import cli

from tests.support.command import T, cli_in_process, input_npy, job, one_error_line
from tests.support.files import leftover_temps
from tests.support.launch import python_env, run
from tests.support.reference import reference_scan

pytestmark = [
    pytest.mark.timeout(180),
    # These tests launch processes (mpiexec) themselves: under `mpiexec ... pytest --with-mpi` every
    # rank would launch nested jobs, so they run in the serial pytest pass only.
    pytest.mark.skipif(bool(os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK")),
                       reason="launches mpiexec itself; run it from a serial pytest"),
]


# -- happy paths -------------------------------------------------------------------------------------

CASES = [
    # (dtype, shape, extra args, op, exclusive, output name suffix)
    ("int32", (100_003,), [], "sum", False, "cumsum"),
    ("int64", (9_999,), ["--op", "max", "--exclusive", "--verify"], "max", True, "exclusive-cummax"),
    ("uint8", (1_001, 3), ["--op", "bitwise_xor", "--verify"], "bitwise_xor", False, "scan-bitwise_xor"),
    ("int16", (5_000,), ["--op", "prod", "--dtype", "int32", "--strategy", "scan_then_add"], "prod", False,
     "cumprod"),
]


def _scan_input(folder, ranks, case):
    dtype, shape, extra, op, exclusive, word = case
    rng = np.random.default_rng(ranks)
    a = rng.integers(-50, 50, size=shape).astype(dtype)
    if op == "prod":
        a = rng.choice(np.array([-1, 1, 2, 1, 1, 3], dtype=dtype), size=shape)
    inp = folder / "in.npy"
    np.save(inp, a)
    return a, [inp, *extra]


for _ranks in (2, 3):
    for _case in CASES:
        job(_ranks, ("scan", _case[5]))(lambda folder, r=_ranks, c=_case: (_scan_input(folder, r, c)[1], {}))


@pytest.mark.parametrize("ranks", [1, 2, 3])
@pytest.mark.parametrize("case", CASES, ids=[c[5] for c in CASES])
def test_scan_matches_numpy(tmp_path, capsys, batches, ranks, case):
    dtype, shape, extra, op, exclusive, word = case
    if ranks == 1:
        a, args = _scan_input(tmp_path, ranks, case)
        proc = cli_in_process(capsys, *args)
        folder = tmp_path
    else:
        folder, proc, _ = batches.get(ranks, ("scan", word))
        a = np.load(folder / "in.npy")
    assert proc.returncode == 0, proc.stderr
    out = folder / f"in.{word}.npy"
    got = np.load(out)
    want = reference_scan(a, op, exclusive=exclusive, dtype="int32" if "--dtype" in extra else None)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    assert "wrote" in proc.stdout and proc.stderr.strip() == ""
    if "--verify" in extra:
        assert "verify passed" in proc.stdout
    assert leftover_temps(folder) == []


def _float_report_job(folder):
    a = np.random.default_rng(5).standard_normal((20_011, 2)).astype(np.float32)
    inp, out, rep = folder / "f.npy", folder / "sub" / "r.npy", folder / "run.json"
    out.parent.mkdir()
    np.save(inp, a)
    return [inp, "-o", out, "--verify", "--report", rep, "--quiet", "--hierarchy", "flat"], {}


for _ranks in (2, 3):
    job(_ranks, "float_report")(_float_report_job)


@pytest.mark.parametrize("ranks", [2, 3])
def test_float_verify_and_report(batches, ranks):
    tmp_path, proc, _ = batches.get(ranks, "float_report")
    a = np.load(tmp_path / "f.npy")
    out, rep = tmp_path / "sub" / "r.npy", tmp_path / "run.json"
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "" and proc.stderr == ""  # --quiet
    got = np.load(out)
    np.testing.assert_allclose(got, np.cumsum(a, axis=0, dtype=np.float64), rtol=1e-4, atol=1e-2)
    r = json.loads(rep.read_text())
    for key in ("input", "output", "op", "shape", "elements", "input_dtype", "result_dtype", "input_bytes",
                "output_bytes", "ranks", "rows_per_rank", "backend", "times_s", "throughput", "verify"):
        assert key in r, key
    assert r["ranks"] == ranks and r["elements"] == a.size and r["shape"] == [20_011, 2]
    assert r["input_dtype"] == "float32" and r["result_dtype"] == "float32" and r["op"] == "sum"
    assert r["rows_per_rank"]["max"] - r["rows_per_rank"]["min"] <= 1
    assert r["backend"]["used"] == "cpu"
    t = r["times_s"]
    for phase in ("read", "scan", "write", "verify", "total"):
        assert t[phase] >= 0
    assert t["total"] >= t["read"] and t["total"] >= t["scan"]
    assert "scan" in t["scan_phases"] and all(v >= 0 for v in t["scan_phases"].values())
    assert r["throughput"]["elements_per_s"] > 0 and r["throughput"]["bytes_per_s"] > 0
    assert r["verify"]["passed"] and r["verify"]["checked_rows"] >= 2 * ranks
    assert "eps" in r["verify"]["tolerance"]
    assert leftover_temps(tmp_path) == [] and leftover_temps(out.parent) == []


EIGHT = (5, 1_000_003)


def _eight_job(n):
    def prepare(folder):
        a = np.random.default_rng(n).integers(-9, 9, n).astype(np.int32)
        inp, rep = folder / f"a{n}.npy", folder / f"a{n}.json"
        np.save(inp, a)
        return [inp, "--verify", "--report", rep], {}
    return prepare


for _n in EIGHT:
    job(8, ("eight", _n))(_eight_job(_n))


def test_eight_ranks_oversubscribed_with_empty_ranks(batches):
    """8 ranks on a 2-core machine; 5 rows leave 3 ranks empty."""
    for n in EIGHT:
        tmp_path, proc, _ = batches.get(8, ("eight", n))
        a = np.load(tmp_path / f"a{n}.npy")
        assert proc.returncode == 0, proc.stderr
        np.testing.assert_array_equal(np.load(tmp_path / f"a{n}.cumsum.npy"), np.cumsum(a))
        r = json.loads((tmp_path / f"a{n}.json").read_text())
        assert r["ranks"] == 8 and r["rows_per_rank"]["min"] == n // 8 and r["verify"]["passed"]


@job(2, "force")
def _force_job(folder):
    np.save(folder / "a.npy", np.arange(1, 1000, dtype=np.int64))
    (folder / "a.exclusive-cumsum.npy").write_bytes(b"old")
    return [folder / "a.npy", "--exclusive", "--force", "--quiet"], {}


def test_force_overwrites_and_exclusive_sum(batches):
    tmp_path, proc, _ = batches.get(2, "force")
    a = np.arange(1, 1000, dtype=np.int64)
    out = tmp_path / "a.exclusive-cumsum.npy"
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(out), np.concatenate([[0], np.cumsum(a)[:-1]]))


# -- 15: --op xor is bitwise on integers, logical on bool ---------------------------------------------

def _xor_input(folder, dtype):
    rng = np.random.default_rng(7)
    a = rng.integers(-2**40, 2**40, 1003).astype(dtype) if dtype != np.bool_ else rng.random(1003) < 0.5
    inp = input_npy(folder, a)
    return a, [inp, "--op", "xor", "-o", folder / "x.npy", "--verify"]


@job(3, "xor")
def _xor_job(folder):
    return _xor_input(folder, np.int64)[1], {}


@pytest.mark.parametrize("ranks, dtype", [(3, np.int64), (1, np.bool_)])
def test_op_xor_end_to_end(tmp_path, capsys, batch3, ranks, dtype):
    if ranks == 1:  # in this process
        a, args = _xor_input(tmp_path, dtype)
        capsys.readouterr()
        code = cli.main([str(x) for x in args])
        proc = subprocess.CompletedProcess(args, code, *capsys.readouterr())
    else:
        tmp_path, proc, _ = batch3("xor")
        a = np.load(tmp_path / "in.npy")
    out = tmp_path / "x.npy"
    assert proc.returncode == 0, proc.stderr
    assert "verify passed" in proc.stdout
    got = np.load(out)
    want = np.bitwise_xor.accumulate(a) if dtype != np.bool_ else np.logical_xor.accumulate(a)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


# -- 6, 7, 8, 9c under mpiexec: zero elements, FIFO input, /dev/null, a 250-byte output name -----------

ZERO_SHAPES = [(2**59, 0), (5, 0, 3)]


def _zero_job(shape):
    def prepare(folder):
        with open(folder / "z.npy", "wb") as f:
            np.lib.format.write_array_header_2_0(f, {"descr": "<f4", "fortran_order": False, "shape": shape})
        return [folder / "z.npy", "--verify"], {}
    return prepare


for _shape in ZERO_SHAPES:
    job(3, ("zero", _shape))(_zero_job(_shape))


@pytest.mark.parametrize("shape", ZERO_SHAPES)
def test_zero_elements_at_three_ranks(batch3, shape):
    tmp_path, proc, _ = batch3(("zero", shape))
    assert proc.returncode == 0, proc.stderr
    assert proc.seconds < 30
    from distscan.io import read_header
    h = read_header(str(tmp_path / "z.cumsum.npy"))
    assert h.shape == shape and h.dtype == np.float32 and "verify passed" in proc.stdout


@job(3, "long_name")
def _long_name_job(folder):
    out = folder / ("o" * 246 + ".npy")
    return [input_npy(folder), "-o", out, "--verify"], {"out": out}


def test_long_output_name_at_three_ranks(batch3):
    tmp_path, proc, opts = batch3("long_name")
    out = opts["out"]
    assert len(out.name) == 250
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(out), np.cumsum(np.arange(100)))
    assert leftover_temps(tmp_path) == []


# -- 16: one process without mpi4py ------------------------------------------------------------------

def _no_mpi4py_env(tmp_path, **extra):
    fake = tmp_path / "fake" / "mpi4py"
    fake.mkdir(parents=True, exist_ok=True)
    (fake / "__init__.py").write_text("raise ImportError('mpi4py is not installed (test)')\n")
    env = python_env(**extra)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path / "fake"), env["PYTHONPATH"]])
    for k in list(env):
        if k.startswith(("PMI_", "OMPI_", "PMIX_")):
            del env[k]
    env.update({k: str(v) for k, v in extra.items()})
    return env


def test_runs_in_one_process_without_mpi4py(tmp_path):
    a = np.random.default_rng(0).integers(-9, 9, 1001)
    inp = input_npy(tmp_path, a)
    proc = run([sys.executable, "-m", "distscan", inp, "--verify", "--report", tmp_path / "r.json"],
               env=_no_mpi4py_env(tmp_path), timeout=T)
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "in.cumsum.npy"), np.cumsum(a))
    assert "verify passed" in proc.stdout
    # started as one of several ranks without mpi4py: refused, not 3 processes racing on one file
    proc = run([sys.executable, "-m", "distscan", inp, "--force"], env=_no_mpi4py_env(tmp_path, PMI_SIZE=3),
               timeout=T)
    assert proc.returncode == 1
    one_error_line(proc.stderr, "mpi4py")
