"""End-to-end tests of ``python -m distscan`` under ``mpiexec`` (1, 2, 3 ranks; 8 oversubscribed).

Every launch has a timeout (a hang fails the test, see ``_mpi_run.run``).  Results are
compared with NumPy (integers exactly); every failure must end with one line on
stderr, a non-zero exit, and neither the output nor a temporary file left behind.
"""

import glob
import json
import os
import sys
import time

import numpy as np
import pytest

from _mpi_run import REPO, python_env, run, run_mpi
from distscan.ops import get_op
from distscan._dtypes import scan_types

pytestmark = [
    pytest.mark.timeout(180),
    # These tests launch mpiexec themselves: under `mpiexec ... pytest --with-mpi` every rank would
    # launch nested jobs, so they run in the serial pytest pass only.
    pytest.mark.skipif(bool(os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK")),
                       reason="launches mpiexec itself; run it from a serial pytest"),
]

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
T = 60  # seconds per launch: generous on a loaded 2-core CI machine; a hang still fails


def distscan_args(*args):
    return [sys.executable, "-m", "distscan", *map(str, args)]


def reference(a, op, exclusive=False, dtype=None):
    op = get_op(op)
    types = scan_types(op, a.dtype, dtype)
    acc = (a != 0) if op.logical else a.astype(types.acc)
    ref = op.ufunc.accumulate(acc, axis=0, dtype=types.acc) if len(a) else acc.copy()
    if exclusive and len(a):
        first = np.full((1,) + a.shape[1:], op.identity(types.acc), types.acc)
        ref = np.concatenate([first, ref[:-1]])
    return ref.astype(types.result)


def leftovers(folder):
    return sorted(glob.glob(os.path.join(str(folder), ".*.part")) + glob.glob(os.path.join(str(folder), "*.part")))


def assert_one_error_line(proc, *words, code=1):
    assert proc.returncode == code, f"exit {proc.returncode}\nstdout:{proc.stdout}\nstderr:{proc.stderr}"
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, f"expected one line on stderr, got:\n{proc.stderr}"
    assert lines[0].startswith("distscan: error: "), lines[0]
    assert "Traceback" not in proc.stderr
    for w in words:
        assert w.lower() in lines[0].lower(), f"{w!r} not in {lines[0]!r}"
    return lines[0]


# -- happy paths -------------------------------------------------------------------------------------

CASES = [
    # (dtype, shape, extra args, op, exclusive, output name suffix)
    ("int32", (100_003,), [], "sum", False, "cumsum"),
    ("int64", (9_999,), ["--op", "max", "--exclusive", "--verify"], "max", True, "exclusive-cummax"),
    ("uint8", (1_001, 3), ["--op", "bitwise_xor", "--verify"], "bitwise_xor", False, "scan-bitwise_xor"),
    ("int16", (5_000,), ["--op", "prod", "--dtype", "int32", "--strategy", "scan_then_add"], "prod", False,
     "cumprod"),
]


@pytest.mark.parametrize("ranks", [1, 2, 3])
@pytest.mark.parametrize("case", CASES, ids=[c[5] for c in CASES])
def test_scan_matches_numpy(tmp_path, ranks, case):
    dtype, shape, extra, op, exclusive, word = case
    rng = np.random.default_rng(ranks)
    a = rng.integers(-50, 50, size=shape).astype(dtype)
    if op == "prod":
        a = rng.choice(np.array([-1, 1, 2, 1, 1, 3], dtype=dtype), size=shape)
    inp = tmp_path / "in.npy"
    np.save(inp, a)
    proc = run_mpi(ranks, distscan_args(inp, *extra), timeout=T)
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / f"in.{word}.npy"
    got = np.load(out)
    want = reference(a, op, exclusive, dtype="int32" if "--dtype" in extra else None)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    assert "wrote" in proc.stdout and proc.stderr.strip() == ""
    if "--verify" in extra:
        assert "verify passed" in proc.stdout
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("ranks", [2, 3])
def test_float_verify_and_report(tmp_path, ranks):
    a = np.random.default_rng(5).standard_normal((20_011, 2)).astype(np.float32)
    inp, out, rep = tmp_path / "f.npy", tmp_path / "sub" / "r.npy", tmp_path / "run.json"
    out.parent.mkdir()
    np.save(inp, a)
    proc = run_mpi(ranks, distscan_args(inp, "-o", out, "--verify", "--report", rep, "--quiet",
                                        "--hierarchy", "flat"), timeout=T)
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
    assert leftovers(tmp_path) == [] and leftovers(out.parent) == []


def test_eight_ranks_oversubscribed_with_empty_ranks(tmp_path):
    """8 ranks on a 2-core machine; 5 rows leave 3 ranks empty."""
    for n in (5, 1_000_003):
        a = np.random.default_rng(n).integers(-9, 9, n).astype(np.int32)
        inp, rep = tmp_path / f"a{n}.npy", tmp_path / f"a{n}.json"
        np.save(inp, a)
        proc = run_mpi(8, distscan_args(inp, "--verify", "--report", rep), timeout=2 * T)
        assert proc.returncode == 0, proc.stderr
        np.testing.assert_array_equal(np.load(tmp_path / f"a{n}.cumsum.npy"), np.cumsum(a))
        r = json.loads(rep.read_text())
        assert r["ranks"] == 8 and r["rows_per_rank"]["min"] == n // 8 and r["verify"]["passed"]


def test_force_overwrites_and_exclusive_sum(tmp_path):
    a = np.arange(1, 1000, dtype=np.int64)
    inp = tmp_path / "a.npy"
    np.save(inp, a)
    out = tmp_path / "a.exclusive-cumsum.npy"
    out.write_bytes(b"old")
    proc = run_mpi(2, distscan_args(inp, "--exclusive", "--force", "--quiet"), timeout=T)
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(out), np.concatenate([[0], np.cumsum(a)[:-1]]))


def test_default_output_names():
    from distscan.pipeline import default_output
    assert default_output("d/input.npy", "sum") == "d/input.cumsum.npy"
    assert default_output("input.npy", "cumprod") == "input.cumprod.npy"
    assert default_output("input.npy", "maximum") == "input.cummax.npy"
    assert default_output("input.npy", "min", True) == "input.exclusive-cummin.npy"
    assert default_output("input.npy", "bxor") == "input.scan-bitwise_xor.npy"
    assert default_output("input.npy", "logical_or", True) == "input.exclusive-scan-logical_or.npy"


# -- help and usage ---------------------------------------------------------------------------------

def test_help_once_with_example(tmp_path):
    proc = run_mpi(2, distscan_args("--help"), timeout=T)
    assert proc.returncode == 0
    assert proc.stdout.count("usage: distscan") == 1
    for word in ("mpiexec -n 4 python -m distscan", "--verify", "--report", "--force", "--debug", "exit status",
                 "cumsum.npy", "--strategy", "--hierarchy", "--backend"):
        assert word in proc.stdout, word


def test_usage_error_once(tmp_path):
    proc = run_mpi(2, distscan_args("x.npy", "--op", "nope"), timeout=T)
    assert proc.returncode == 2
    assert proc.stderr.count("distscan: error:") == 1 and "unknown operator" in proc.stderr


# -- every bad input: one line, non-zero exit on every rank, nothing left --------------------------

def _bad_input(tmp_path, case):
    """Create the bad input for ``case``; returns (args, words expected in the error line)."""
    p = tmp_path / "in.npy"
    good = np.arange(1000, dtype=np.int64)
    if case == "missing":
        return [tmp_path / "nope.npy"], ["not found"]
    if case == "directory":
        (tmp_path / "dir.npy").mkdir()
        return [tmp_path / "dir.npy"], ["directory"]
    if case == "not_npy":
        p.write_text("a,b,c\n1,2,3\n")
        return [p], ["not a valid .npy"]
    if case == "truncated_data":
        np.save(p, good)
        p.write_bytes(p.read_bytes()[:-100])
        return [p], ["truncated"]
    if case == "truncated_header":
        np.save(p, good)
        p.write_bytes(p.read_bytes()[:20])
        return [p], ["truncated"]
    if case == "object":
        np.save(p, np.array([1, None, "x"], dtype=object), allow_pickle=True)
        return [p], ["pickled"]
    if case == "fortran":
        np.save(p, np.asfortranarray(np.arange(20).reshape(4, 5)))
        return [p], ["fortran"]
    if case == "zero_d":
        np.save(p, np.array(7))
        return [p], ["0-d"]
    if case == "dtype_for_op":
        np.save(p, np.ones(10, np.float64))
        return [p, "--op", "bitwise_and"], ["bitwise_and", "float64"]
    if case == "complex_max":
        np.save(p, np.ones(10, np.complex64))
        return [p, "--op", "max"], ["max", "complex64"]
    if case == "no_output_folder":
        np.save(p, good)
        return [p, "-o", tmp_path / "no" / "such" / "o.npy"], ["does not exist"]
    if case == "file_as_folder":
        np.save(p, good)
        (tmp_path / "plain").write_text("I am a file")
        return [p, "-o", tmp_path / "plain" / "o.npy"], ["not a directory"]
    if case == "output_exists":
        np.save(p, good)
        (tmp_path / "in.cumsum.npy").write_bytes(b"precious")
        return [p], ["exists", "--force"]
    if case == "output_is_input":
        np.save(p, good)
        return [p, "-o", tmp_path / "." / "in.npy", "--force"], ["is the input"]
    if case == "output_is_input_link":
        np.save(p, good)
        os.symlink(p, tmp_path / "link.npy")
        return [p, "-o", tmp_path / "link.npy", "--force"], ["is the input"]
    if case == "report_folder_missing":
        np.save(p, good)
        return [p, "--report", tmp_path / "no" / "r.json"], ["report folder"]
    raise AssertionError(case)


BAD = ["missing", "directory", "not_npy", "truncated_data", "truncated_header", "object", "fortran", "zero_d",
       "dtype_for_op", "complex_max", "no_output_folder", "file_as_folder", "output_exists", "output_is_input",
       "output_is_input_link", "report_folder_missing"]


@pytest.mark.parametrize("case", BAD)
def test_bad_input_fails_cleanly(tmp_path, case):
    ranks = 3 if case in ("truncated_data", "object", "output_exists") else 2
    args, words = _bad_input(tmp_path, case)
    before = {f: os.path.getsize(f) for f in glob.glob(str(tmp_path / "**"), recursive=True) if os.path.isfile(f)}
    t0 = time.monotonic()
    proc = run_mpi(ranks, distscan_args(*args), timeout=T)
    assert time.monotonic() - t0 < T
    assert_one_error_line(proc, *words)
    after = {f: os.path.getsize(f) for f in glob.glob(str(tmp_path / "**"), recursive=True) if os.path.isfile(f)}
    assert after == before, "a failed run must not create or change files"
    assert leftovers(tmp_path) == []


def test_bad_input_single_rank_same_line(tmp_path):
    args, words = _bad_input(tmp_path, "fortran")
    assert_one_error_line(run_mpi(1, distscan_args(*args), timeout=T), *words)
    # and without mpiexec at all (singleton MPI)
    assert_one_error_line(run(distscan_args(*args), timeout=T), *words)


@pytest.mark.skipif(IS_ROOT, reason="root can write into a folder without write permission")
def test_read_only_output_folder(tmp_path):
    np.save(tmp_path / "in.npy", np.arange(10))
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        proc = run_mpi(2, distscan_args(tmp_path / "in.npy", "-o", ro / "o.npy"), timeout=T)
        assert_one_error_line(proc, "permission denied")
        assert os.listdir(ro) == []
    finally:
        ro.chmod(0o700)


def test_debug_shows_traceback(tmp_path):
    args, _ = _bad_input(tmp_path, "object")
    proc = run_mpi(2, distscan_args(*args, "--debug"), timeout=T)
    assert proc.returncode == 1
    assert "Traceback" in proc.stderr and proc.stderr.count("distscan: error:") == 1


def _gpu_present():
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001
        return False


@pytest.mark.skipif(_gpu_present(), reason="a GPU is present: the cuda backend would succeed")
def test_cuda_backend_without_gpu_fails_after_output_opened(tmp_path):
    """The temporary output exists when the scan fails: it must be removed."""
    np.save(tmp_path / "in.npy", np.arange(100))
    proc = run_mpi(2, distscan_args(tmp_path / "in.npy", "--backend", "cuda"), timeout=T)
    assert_one_error_line(proc)
    assert not (tmp_path / "in.cumsum.npy").exists() and leftovers(tmp_path) == []


# -- failures injected on one rank ------------------------------------------------------------------

INJECT = r'''
import sys
from mpi4py import MPI
import distscan.io as dio, distscan.pipeline as pipeline, distscan.api as api
mode, argv = sys.argv[1], sys.argv[2:]
rank, size = MPI.COMM_WORLD.Get_rank(), MPI.COMM_WORLD.Get_size()
if mode == "write_fails" and rank == 1:
    def write_rows(self, *a, **k):
        raise OSError("injected: disk full")
    dio.NpyWriter.write_rows = write_rows
elif mode == "read_fails" and rank == size - 1:
    def read_rows(*a, **k):
        raise MemoryError("injected: cannot allocate the slice")
    dio.read_rows = read_rows
elif mode == "wrong_result":
    scan = api.scan
    def wrong(*a, **k):
        r = scan(*a, **k)
        if rank == size - 1 and len(r):
            r[len(r) // 2] += 1
        return r
    api.scan = wrong
elif mode == "lone_crash" and rank == 1:
    def crash(*a, **k):
        raise RuntimeError("injected: a bug that skips every agreement")
    pipeline.run = crash
from distscan.cli import main
raise SystemExit(main(argv))
'''


def _inject(tmp_path, mode, ranks, *args, env=None):
    script = tmp_path / "inject.py"
    script.write_text(INJECT)
    return run_mpi(ranks, [sys.executable, script, mode, *args], timeout=T, env=env)


@pytest.mark.parametrize("mode, words", [("write_fails", ["rank 1", "disk full"]),
                                         ("read_fails", ["rank 2", "cannot allocate"])])
def test_failure_on_one_rank_is_agreed(tmp_path, mode, words):
    np.save(tmp_path / "in.npy", np.arange(10_000))
    proc = _inject(tmp_path, mode, 3, tmp_path / "in.npy")
    assert_one_error_line(proc, *words)
    assert not (tmp_path / "in.cumsum.npy").exists() and leftovers(tmp_path) == []


def test_verify_catches_wrong_result_and_publishes_nothing(tmp_path):
    np.save(tmp_path / "in.npy", np.arange(10_000, dtype=np.int32))
    proc = _inject(tmp_path, "wrong_result", 3, tmp_path / "in.npy", "--verify")
    assert_one_error_line(proc, "verification failed on rank 2", code=3)
    assert not (tmp_path / "in.cumsum.npy").exists() and leftovers(tmp_path) == []


def test_lone_failure_aborts_instead_of_hanging(tmp_path):
    np.save(tmp_path / "in.npy", np.arange(100))
    t0 = time.monotonic()
    proc = _inject(tmp_path, "lone_crash", 3, tmp_path / "in.npy",
                   env=python_env(DISTSCAN_FINAL_TIMEOUT=2))
    assert time.monotonic() - t0 < T
    assert proc.returncode != 0
    assert "aborting" in proc.stderr and "injected" not in proc.stdout
    assert not (tmp_path / "in.cumsum.npy").exists()


# -- distscan-example ---------------------------------------------------------------------------------

def test_example_then_scan(tmp_path):
    proc = run([sys.executable, "-m", "distscan.example", "--n", "1009", "--dtype", "int16", "--seed", "3",
                "-o", tmp_path / "ex.npy"], timeout=T)
    assert proc.returncode == 0, proc.stderr
    assert "mpiexec -n 4" in proc.stdout and "-m distscan" in proc.stdout
    a = np.load(tmp_path / "ex.npy")
    assert a.shape == (1009,) and a.dtype == np.int16 and a.any()
    again = run([sys.executable, "-m", "distscan.example", "-o", tmp_path / "ex.npy"], timeout=T)
    assert again.returncode == 1 and "exists" in again.stderr
    proc = run_mpi(2, distscan_args(tmp_path / "ex.npy", "--verify"), timeout=T)
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "ex.cumsum.npy"), np.cumsum(a))


# -- the progress bar ---------------------------------------------------------------------------------

class _Stream:
    def __init__(self, tty):
        self.tty, self.text = tty, ""

    def isatty(self):
        return self.tty

    def write(self, s):
        self.text += s

    def flush(self):
        pass


def test_progress_bar_only_on_a_terminal():
    from distscan._progress import Progress
    tty, pipe = _Stream(True), _Stream(False)
    for stream in (tty, pipe):
        bar = Progress(1000, "read", stream=stream, delay=0, interval=0)
        for _ in range(10):
            bar.update(100)
        bar.done()
    assert "100.0%" in tty.text and "[" in tty.text and tty.text.endswith("\n")
    assert pipe.text == ""
    quiet = _Stream(True)
    bar = Progress(1000, "read", stream=quiet)  # default delay: short runs draw nothing
    bar.update(1000)
    bar.done()
    assert quiet.text == ""
