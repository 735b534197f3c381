"""Every failure of the ``distscan`` command ends with one line on stderr, the same non-zero exit on every
rank, and neither the output nor a temporary file left behind: every bad input (also at one rank, and
without mpiexec), a read-only output folder, ``--debug``'s traceback, ``--backend cuda`` without a
GPU, a failure injected on one rank (agreed; a wrong result caught by ``--verify``; a rank that fails
alone makes the job abort instead of hanging), ``.npz`` archives and malformed headers, a FIFO input
and ``/dev/null`` as output.  Several ranks run in the session's batches (tests/cli/conftest.py); what
needs a job of its own (a rank that fails alone and makes the job abort) and running without mpiexec
start processes; every launch has a timeout (a hang fails the test, see ``tests.support.launch.run``).
"""

import os
import stat
import subprocess
import sys
import time

import numpy as np
import pytest

from distscan import cli

from tests.support.command import (T, assert_one_error_line, cli_in_process, distscan_args, input_npy, job,
                                   one_error_line)
from tests.support.files import IS_ROOT, leftover_temps
from tests.support.launch import files_and_sizes, python_env, run, run_mpi

pytestmark = [
    pytest.mark.timeout(180),
    # These tests launch processes (mpiexec) themselves: under `mpiexec ... pytest --with-mpi` every
    # rank would launch nested jobs, so they run in the serial pytest pass only.
    pytest.mark.skipif(bool(os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK")),
                       reason="launches mpiexec itself; run it from a serial pytest"),
]


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
    assert leftover_temps(tmp_path) == []


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
    assert not (tmp_path / "in.cumsum.npy").exists() and leftover_temps(tmp_path) == []


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
    assert not (tmp_path / "in.cumsum.npy").exists() and leftover_temps(tmp_path) == []


def test_verify_catches_wrong_result_and_publishes_nothing(batches):
    tmp_path, proc, _ = batches.get(3, ("inject", "wrong_result"))
    assert_one_error_line(proc, "verification failed on rank 2", code=3)
    assert not (tmp_path / "in.cumsum.npy").exists() and leftover_temps(tmp_path) == []


def test_lone_failure_aborts_instead_of_hanging(tmp_path):
    np.save(tmp_path / "in.npy", np.arange(100))
    t0 = time.monotonic()
    proc = _inject(tmp_path, "lone_crash", 3, tmp_path / "in.npy",
                   env=python_env(DISTSCAN_FINAL_TIMEOUT=1))
    assert time.monotonic() - t0 < T
    assert proc.returncode != 0
    assert "aborting" in proc.stderr and "injected" not in proc.stdout
    assert not (tmp_path / "in.cumsum.npy").exists()


# -- 16: .npz and malformed headers through the command ------------------------------------------

def test_npz_and_deep_header_messages(tmp_path, capsys):
    np.savez(tmp_path / "x.npz", a=np.arange(3))
    assert cli.main([str(tmp_path / "x.npz")]) == 1
    one_error_line(capsys.readouterr().err, "npz archive", "np.save('a.npy'")
    text = b"{'descr': '<i8', 'fortran_order': False, 'shape': (" + b"-" * 200_000 + b"1,), }"
    text += b" " * (-(len(text) + 13) % 64) + b"\n"
    (tmp_path / "deep.npy").write_bytes(b"\x93NUMPY\x02\x00" + len(text).to_bytes(4, "little") + text)
    assert cli.main([str(tmp_path / "deep.npy")]) == 1
    line = one_error_line(capsys.readouterr().err, "malformed .npy header")
    assert "unknown error" not in line and len(line) < 300


@job(3, "fifo")
def _fifo_job(folder):
    os.mkfifo(folder / "input.npy")
    return [folder / "input.npy"], {}


@job(3, "dev_null")
def _dev_null_job(folder):
    return [input_npy(folder), "-o", "/dev/null", "--force"], {}


def test_fifo_input_and_dev_null_output_at_three_ranks(batch3):
    _, proc, _ = batch3("fifo")
    one_error_line(proc.stderr, "input.npy is a FIFO", "not a regular file")
    assert proc.returncode == 1 and proc.codes == [1, 1, 1]
    _, proc, _ = batch3("dev_null")
    assert proc.returncode == 1 and proc.codes == [1, 1, 1]
    one_error_line(proc.stderr, "/dev/null", "character device", "regular files only")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_fifo_input_through_the_command_fails_in_one_line(tmp_path):
    """The whole command, one process: no hang, one line."""
    fifo = tmp_path / "input.npy"
    os.mkfifo(fifo)
    proc = subprocess.run([sys.executable, "-m", "distscan", str(fifo)], capture_output=True, text=True,
                          timeout=30, env=python_env())
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()]
    assert "distscan: error:" in proc.stderr and "FIFO" in proc.stderr
