"""End-to-end tests of the ``distscan`` command at 1, 2, 3 ranks and 8 (oversubscribed).

One rank runs in-process (``distscan.cli.main(argv)``).  Several ranks run under ``mpiexec``:
every command line of this file for 2, 3 or 8 ranks runs in one mpiexec job per rank count
(``_mpi_run.CliBatches``: each rank calls ``cli.main`` for each job in turn, its output captured
per rank), so a launch is paid once, not per case.  What needs a job of its own (a rank that
fails alone and makes the job abort) and running without mpiexec still start processes.
Every launch has a timeout (a hang fails the test, see ``_mpi_run.run``).  Results are
compared with NumPy (integers exactly); every failure must end with one line on
stderr, a non-zero exit on every rank, and neither the output nor a temporary file left behind.
"""

import contextlib
import glob
import io
import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from tests.support.launch import CliBatches, files_and_sizes, python_env, run, run_mpi
from distscan import cli
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
    # a batched run knows every rank's status: the same on every rank
    assert getattr(proc, "codes", [code]) == [code] * len(getattr(proc, "codes", [code])), proc.codes
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, f"expected one line on stderr, got:\n{proc.stderr}"
    assert lines[0].startswith("distscan: error: "), lines[0]
    assert "Traceback" not in proc.stderr
    for w in words:
        assert w.lower() in lines[0].lower(), f"{w!r} not in {lines[0]!r}"
    return lines[0]


def cli_in_process(capsys, *args):
    """``distscan ARGS`` in this process (one rank: COMM_WORLD of this pytest process)."""
    capsys.readouterr()
    code = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(["distscan", *map(str, args)], code, out, err)


# Every command line of this file at 2, 3 and 8 ranks, registered below next to its test and run in
# one mpiexec job per rank count when a test first asks for one of them.
JOBS = []  # (ranks, key, prepare)


@pytest.fixture(scope="module")
def batches(tmp_path_factory):
    b = CliBatches(tmp_path_factory)
    for ranks, key, prepare in JOBS:
        b.add(ranks, key, prepare)
    return b


def job(ranks, key):
    """Register ``prepare(folder) -> (argv, options)`` as the command line ``key`` at ``ranks`` ranks."""
    def register(prepare):
        JOBS.append((ranks, key, prepare))
        return prepare
    return register


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
    want = reference(a, op, exclusive, dtype="int32" if "--dtype" in extra else None)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    assert "wrote" in proc.stdout and proc.stderr.strip() == ""
    if "--verify" in extra:
        assert "verify passed" in proc.stdout
    assert leftovers(folder) == []


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
    assert leftovers(tmp_path) == [] and leftovers(out.parent) == []


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


def test_default_output_names():
    from distscan.pipeline import default_output
    assert default_output("d/input.npy", "sum") == "d/input.cumsum.npy"
    assert default_output("input.npy", "cumprod") == "input.cumprod.npy"
    assert default_output("input.npy", "maximum") == "input.cummax.npy"
    assert default_output("input.npy", "min", True) == "input.exclusive-cummin.npy"
    assert default_output("input.npy", "bxor") == "input.scan-bitwise_xor.npy"
    assert default_output("input.npy", "logical_or", True) == "input.exclusive-scan-logical_or.npy"


# -- help and usage ---------------------------------------------------------------------------------

job(2, "help")(lambda folder: (["--help"], {}))
job(2, "usage")(lambda folder: (["x.npy", "--op", "nope"], {}))


def test_help_once_with_example(batches):
    _, proc, _ = batches.get(2, "help")
    assert proc.returncode == 0 and proc.codes == [0, 0]
    assert proc.stdout.count("usage: distscan") == 1
    for word in ("mpiexec -n 4 python -m distscan", "--verify", "--report", "--force", "--debug", "exit status",
                 "cumsum.npy", "--strategy", "--hierarchy", "--backend"):
        assert word in proc.stdout, word


def test_usage_error_once(batches):
    _, proc, _ = batches.get(2, "usage")
    assert proc.returncode == 2 and proc.codes == [2, 2]
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


def _bad_ranks(case):
    return 3 if case in ("truncated_data", "object", "output_exists") else 2


def _bad_job(case):
    def prepare(folder):
        args, words = _bad_input(folder, case)
        return args, {"words": words}
    return prepare


for _case in BAD:
    job(_bad_ranks(_case), ("bad", _case))(_bad_job(_case))


@pytest.mark.parametrize("case", BAD)
def test_bad_input_fails_cleanly(batches, case):
    tmp_path, proc, opts = batches.get(_bad_ranks(case), ("bad", case))
    assert proc.seconds < T
    assert_one_error_line(proc, *opts["words"])
    assert files_and_sizes(tmp_path) == opts["before"], "a failed run must not create or change files"
    assert leftovers(tmp_path) == []


def test_bad_input_single_rank_same_line(tmp_path, capsys):
    args, words = _bad_input(tmp_path, "fortran")
    assert_one_error_line(cli_in_process(capsys, *args), *words)
    # and as a process of its own, without mpiexec at all (singleton MPI)
    assert_one_error_line(run(distscan_args(*args), timeout=T), *words)


if not IS_ROOT:
    @job(2, "read_only")
    def _read_only_job(folder):
        np.save(folder / "in.npy", np.arange(10))
        ro = folder / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        return [folder / "in.npy", "-o", ro / "o.npy"], {"after": lambda: ro.chmod(0o700)}


@pytest.mark.skipif(IS_ROOT, reason="root can write into a folder without write permission")
def test_read_only_output_folder(batches):
    tmp_path, proc, _ = batches.get(2, "read_only")  # the folder was read-only during the run
    assert_one_error_line(proc, "permission denied")
    assert os.listdir(tmp_path / "ro") == []


@job(2, "debug")
def _debug_job(folder):
    args, _ = _bad_input(folder, "object")
    return [*args, "--debug"], {}


def test_debug_shows_traceback(batches):
    _, proc, _ = batches.get(2, "debug")
    assert proc.returncode == 1
    assert "Traceback" in proc.stderr and proc.stderr.count("distscan: error:") == 1


def _gpu_present():
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001
        return False


GPU_PRESENT = _gpu_present()

if not GPU_PRESENT:
    @job(2, "cuda")
    def _cuda_job(folder):
        np.save(folder / "in.npy", np.arange(100))
        return [folder / "in.npy", "--backend", "cuda"], {}


@pytest.mark.skipif(GPU_PRESENT, reason="a GPU is present: the cuda backend would succeed")
def test_cuda_backend_without_gpu_fails_after_output_opened(batches):
    """The temporary output exists when the scan fails: it must be removed."""
    tmp_path, proc, _ = batches.get(2, "cuda")
    assert_one_error_line(proc)
    assert not (tmp_path / "in.cumsum.npy").exists() and leftovers(tmp_path) == []


# -- failures injected on one rank ------------------------------------------------------------------

# Each mode replaces a function on some ranks (``patch`` undoes it after the batched job).
MODES = {
    "write_fails": """
import distscan.io as dio
if rank == 1:
    def write_rows(self, *a, **k):
        raise OSError("injected: disk full")
    patch(dio.NpyWriter, "write_rows", write_rows)
""",
    "read_fails": """
import distscan.io as dio
if rank == size - 1:
    def read_rows(*a, **k):
        raise MemoryError("injected: cannot allocate the slice")
    patch(dio, "read_rows", read_rows)
""",
    # a wrong value in the last rank's part of the output, however the pipeline computed it
    "wrong_result": """
import distscan.io as dio
write_rows = dio.NpyWriter.write_rows
def wrong(self, start, rows, *a, **k):
    if rank == size - 1 and len(rows):
        rows = rows.copy()
        rows[len(rows) // 2] += 1
    return write_rows(self, start, rows, *a, **k)
patch(dio.NpyWriter, "write_rows", wrong)
""",
    "lone_crash": """
import distscan.pipeline as pipeline
if rank == 1:
    def crash(*a, **k):
        raise RuntimeError("injected: a bug that skips every agreement")
    patch(pipeline, "run", crash)
""",
}

# The lone crash aborts the whole job: it runs as a job of its own, through this script.
INJECT = r'''
import sys
from mpi4py import MPI
mode, argv = sys.argv[1], sys.argv[2:]
rank, size = MPI.COMM_WORLD.Get_rank(), MPI.COMM_WORLD.Get_size()
def patch(obj, name, value):
    setattr(obj, name, value)
exec(MODES[mode])
from distscan.cli import main
raise SystemExit(main(argv))
'''


def _inject(tmp_path, mode, ranks, *args, env=None):
    script = tmp_path / "inject.py"
    script.write_text(f"MODES = {MODES!r}\n" + INJECT)
    return run_mpi(ranks, [sys.executable, script, mode, *args], timeout=T, env=env)


def _inject_job(mode, *extra):
    def prepare(folder):
        np.save(folder / "in.npy", np.arange(10_000, dtype=np.int32 if mode == "wrong_result" else np.int64))
        return [folder / "in.npy", *extra], {"setup": MODES[mode]}
    return prepare


job(3, ("inject", "write_fails"))(_inject_job("write_fails"))
job(3, ("inject", "read_fails"))(_inject_job("read_fails"))
job(3, ("inject", "wrong_result"))(_inject_job("wrong_result", "--verify"))


@pytest.mark.parametrize("mode, words", [("write_fails", ["rank 1", "disk full"]),
                                         ("read_fails", ["rank 2", "cannot allocate"])])
def test_failure_on_one_rank_is_agreed(batches, mode, words):
    tmp_path, proc, _ = batches.get(3, ("inject", mode))
    assert_one_error_line(proc, *words)
    assert not (tmp_path / "in.cumsum.npy").exists() and leftovers(tmp_path) == []


def test_verify_catches_wrong_result_and_publishes_nothing(batches):
    tmp_path, proc, _ = batches.get(3, ("inject", "wrong_result"))
    assert_one_error_line(proc, "verification failed on rank 2", code=3)
    assert not (tmp_path / "in.cumsum.npy").exists() and leftovers(tmp_path) == []


def test_lone_failure_aborts_instead_of_hanging(tmp_path):
    np.save(tmp_path / "in.npy", np.arange(100))
    t0 = time.monotonic()
    proc = _inject(tmp_path, "lone_crash", 3, tmp_path / "in.npy",
                   env=python_env(DISTSCAN_FINAL_TIMEOUT=1))
    assert time.monotonic() - t0 < T
    assert proc.returncode != 0
    assert "aborting" in proc.stderr and "injected" not in proc.stdout
    assert not (tmp_path / "in.cumsum.npy").exists()


# -- distscan-example ---------------------------------------------------------------------------------

def _example(*args):
    """``distscan-example ARGS`` in this process: (exit status, stdout, stderr)."""
    from distscan.cli import example
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = example.main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


@job(2, "example")
def _example_job(folder):
    first = _example("--n", "1009", "--dtype", "int16", "--seed", "3", "-o", folder / "ex.npy")
    again = _example("-o", folder / "ex.npy")
    return [folder / "ex.npy", "--verify"], {"first": first, "again": again}


def test_example_then_scan(batches):
    tmp_path, proc, opts = batches.get(2, "example")
    code, out, err = opts["first"]  # written before the batch ran
    assert code == 0, err
    assert "mpiexec -n 4" in out and "-m distscan" in out
    a = np.load(tmp_path / "ex.npy")
    assert a.shape == (1009,) and a.dtype == np.int16 and a.any()
    code, out, err = opts["again"]
    assert code == 1 and "exists" in err
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
    from distscan.pipeline.progress import Progress
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
