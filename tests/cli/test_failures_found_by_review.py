"""Failures of the ``distscan`` command found by adversarial review (branch adv-cli), fixed; each
test failed before its fix:

- ``--report`` onto the ``--segments`` flags or a recurrence's coefficients overwrote that input
  (docs/command.md: "The input is never overwritten"; ``distscan.cli._check_report_path`` compared
  the report with the main input and the output only).
- A header whose trailing dimensions multiply past 2**63 with no data was taken for an empty array:
  exit 0 and a published output that promises the whole array (``NpyHeader.row_items``:
  ``np.prod(..., dtype=np.int64)`` wrapped to 0).
- SIGINT reaching a rank after ``MPI_Init`` but before ``cli.main`` installed its watcher (argument
  parsing, the environment's allgather, the two ``Dup``s) left that rank in ``MPI_Finalize`` with a
  traceback while the others waited in the allgather: the job hung.
- ``-o sub/`` (a folder name that does not exist) ran the whole scan, then failed in the rename with
  a raw OS error naming the temporary file (``os.path.abspath`` drops the slash, so the folder check
  passed); so did ``-o missing/.``, ``out.npy/.``, ``missing/..`` and ``missing/../o.npy`` (the
  folder check took the absolute path, which folds them away, while the rename takes the path as
  typed).  The same for ``--report``.
- ^C while the ranks imported NumPy and MPI (before the watcher) printed a traceback per rank.
"""

import io
import os
import sys

import numpy as np
import pytest

from tests.support.command import assert_one_error_line, cli_in_process
from tests.support.files import leftover_temps
from tests.support.launch import files_and_sizes, run_mpi

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.skipif(bool(os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK")),
                       reason="launches mpiexec itself; run it from a serial pytest"),
]


def test_report_onto_the_segment_flags_is_refused(tmp_path, capsys):
    np.save(tmp_path / "a.npy", np.arange(20))
    np.save(tmp_path / "f.npy", np.arange(20) % 3 == 0)
    before = files_and_sizes(tmp_path)
    proc = cli_in_process(capsys, tmp_path / "a.npy", "--segments", tmp_path / "f.npy", "--report",
                          tmp_path / "f.npy", "-o", tmp_path / "o.npy", "--backend", "cpu", "--quiet")
    assert (tmp_path / "f.npy").read_bytes()[:6] == b"\x93NUMPY", "the flags file was overwritten by the report"
    assert np.array_equal(np.load(tmp_path / "f.npy"), np.arange(20) % 3 == 0)
    assert_one_error_line(proc, "overwrite")
    assert files_and_sizes(tmp_path) == before and leftover_temps(tmp_path) == []


def test_report_onto_the_coefficients_is_refused(tmp_path, capsys):
    np.save(tmp_path / "b.npy", np.arange(20.0))
    np.save(tmp_path / "A.npy", np.full(20, 0.5))
    before = files_and_sizes(tmp_path)
    proc = cli_in_process(capsys, "recurrence", tmp_path / "A.npy", tmp_path / "b.npy", "--report",
                          tmp_path / "A.npy", "-o", tmp_path / "y.npy", "--backend", "cpu", "--quiet")
    assert (tmp_path / "A.npy").read_bytes()[:6] == b"\x93NUMPY", "the coefficient file was overwritten by the report"
    assert np.array_equal(np.load(tmp_path / "A.npy"), np.full(20, 0.5))
    assert_one_error_line(proc, "overwrite")
    assert files_and_sizes(tmp_path) == before and leftover_temps(tmp_path) == []


@pytest.mark.parametrize("flag", ["-o", "--report"])
def test_an_output_named_as_a_folder_is_refused_before_the_scan(tmp_path, capsys, flag):
    np.save(tmp_path / "a.npy", np.arange(20))
    before = files_and_sizes(tmp_path)
    args = ["-o", str(tmp_path / "sub") + os.sep] if flag == "-o" else \
        ["-o", tmp_path / "o.npy", "--report", str(tmp_path / "r") + os.sep]
    proc = cli_in_process(capsys, tmp_path / "a.npy", *args, "--backend", "cpu", "--quiet")
    assert_one_error_line(proc, "names a directory", "give a file name")
    assert files_and_sizes(tmp_path) == before and leftover_temps(tmp_path) == []


@pytest.mark.parametrize("name", ["missing/.", "out.npy/.", "missing/..", "missing/../o.npy"])
@pytest.mark.parametrize("flag", ["-o", "--report"])
def test_an_output_through_a_missing_folder_or_a_dot_is_refused_before_the_scan(tmp_path, capsys, monkeypatch,
                                                                             flag, name):
    """'-o missing/.' passed check_replaceable (it looks at a trailing separator only, and the folder
    check at os.path.abspath, which folds 'missing/.' away): the scan ran, then the rename onto the
    raw path failed with '[Errno 2] No such file or directory: ...part -> missing/.'."""
    monkeypatch.chdir(tmp_path)
    np.save(tmp_path / "a.npy", np.arange(20))
    before = files_and_sizes(tmp_path)
    args = ["-o", name] if flag == "-o" else ["-o", "o.npy", "--report", name.replace("o.npy", "r.json")]
    proc = cli_in_process(capsys, "a.npy", *args, "--backend", "cpu", "--quiet")
    line = assert_one_error_line(proc)
    assert "Errno" not in line and ".part" not in line, line
    assert files_and_sizes(tmp_path) == before and leftover_temps(tmp_path) == []
    assert leftover_temps(tmp_path.parent) == []


def _header_only(path, shape, descr="|i1"):
    from numpy.lib import format as npformat
    buf = io.BytesIO()
    npformat.write_array_header_1_0(buf, {"descr": descr, "fortran_order": False, "shape": shape})
    path.write_bytes(buf.getvalue())


def test_a_header_whose_row_size_overflows_int64_is_refused(tmp_path, capsys):
    _header_only(tmp_path / "in.npy", (3, 2**32, 2**32))
    before = files_and_sizes(tmp_path)
    proc = cli_in_process(capsys, tmp_path / "in.npy", "-o", tmp_path / "o.npy", "--backend", "cpu")
    assert_one_error_line(proc, "in.npy")
    assert files_and_sizes(tmp_path) == before and leftover_temps(tmp_path) == []


SIGINT_IN_THE_WINDOW = """
import os, signal, sys
from distscan import cli
orig = cli.build_parser
def build_parser(rank):
    if rank == 1:
        os.kill(os.getpid(), signal.SIGINT)   # ^C reaches rank 1 while it parses its arguments
    return orig(rank)
cli.build_parser = build_parser
raise SystemExit(cli.main(sys.argv[1:]))
"""


def test_sigint_to_one_rank_while_it_starts_ends_the_job(tmp_path):
    np.save(tmp_path / "in.npy", np.arange(100))
    script = tmp_path / "early_sigint.py"
    script.write_text(SIGINT_IN_THE_WINDOW)
    proc = run_mpi(2, [sys.executable, script, tmp_path / "in.npy", "-o", tmp_path / "o.npy", "--backend", "cpu"],
                   timeout=20)  # a hang fails the test (the process group is killed)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "o.npy").exists() and leftover_temps(tmp_path) == []


SIGINT_AT_THE_RENAME = """
import os, signal, sys, time
from distscan import cli
from distscan.io import writer
link = writer.os.link
def interrupted_link(src, dst):  # ^C as the output is renamed into place: the watcher removes it first
    os.kill(os.getpid(), signal.SIGINT)
    while os.path.exists(src):
        time.sleep(0.001)
    return link(src, dst)
writer.os.link = interrupted_link
raise SystemExit(cli.main(sys.argv[1:]))
"""


def test_sigint_at_the_rename_is_one_line(tmp_path):
    """A SIGINT as the output was renamed: the watcher removed the temporary file and said so, and
    the main thread's failed rename added its own line ("[Errno 2] No such file or directory:
    '...part' -> 'o.npy'", 1 rank, 2026-11-25).  Now the watcher's line alone, exit 130, no file."""
    import subprocess

    np.save(tmp_path / "in.npy", np.arange(100))
    script = tmp_path / "rename_sigint.py"
    script.write_text(SIGINT_AT_THE_RENAME)
    env = {k: v for k, v in os.environ.items() if k not in ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK",
                                                             "SLURM_PROCID")}
    proc = subprocess.run([sys.executable, str(script), str(tmp_path / "in.npy"), "-o", str(tmp_path / "o.npy"),
                           "--backend", "cpu"], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 130, (proc.returncode, proc.stderr)
    ours = [line for line in proc.stderr.splitlines() if line.startswith("distscan")]  # (MPI_Abort's own line aside)
    assert ours == ["distscan: error: interrupted by SIGINT; the temporary output was removed and nothing was "
                    "published"], proc.stderr
    assert not (tmp_path / "o.npy").exists() and leftover_temps(tmp_path) == []


INTERRUPTED_IMPORT = """
import sys
import distscan.__main__ as entry


class InterruptedImport:  # a meta path finder that raises KeyboardInterrupt on importing distscan.cli
    def find_spec(self, name, path=None, target=None):
        if name == "distscan.cli":
            raise KeyboardInterrupt
        return None


sys.modules.pop("distscan.cli", None)
sys.meta_path.insert(0, InterruptedImport())
sys.exit(entry.run())
"""


TERMINATED_IMPORT = """
import os
import signal
import sys
import distscan.__main__ as entry


class TerminatedImport:  # a meta path finder that sends this process SIGTERM on importing distscan.cli
    def find_spec(self, name, path=None, target=None):
        if name == "distscan.cli":
            os.kill(os.getpid(), signal.SIGTERM)
        return None


sys.modules.pop("distscan.cli", None)
sys.meta_path.insert(0, TerminatedImport())
sys.exit(entry.run())
"""


INTERRUPTED_BEFORE_THE_WATCHER = """
import sys
import distscan.__main__ as entry
from distscan.cli import signals


def interrupted(self):  # ^C after MPI is up, before the watcher's handlers are in place
    raise KeyboardInterrupt


signals.Interrupts.__enter__ = interrupted
sys.exit(entry.run())
"""


def test_an_interrupt_before_the_watcher_is_one_line(tmp_path):
    """Between MPI's start and the signal watcher, a ^C printed KeyboardInterrupt's traceback
    (1 rank, seen twice in a sweep of SIGINT delays, 2026-11-25); now the one line, and the
    rank dies of the SIGINT, as while it starts."""
    import signal
    import subprocess

    env = {k: v for k, v in os.environ.items() if k not in ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK",
                                                             "SLURM_PROCID")}
    np.save(tmp_path / "in.npy", np.arange(10))
    proc = subprocess.run([sys.executable, "-c", INTERRUPTED_BEFORE_THE_WATCHER, str(tmp_path / "in.npy"), "-o",
                           str(tmp_path / "o.npy"), "--backend", "cpu"], env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == -signal.SIGINT, (proc.returncode, proc.stderr)
    assert proc.stderr == "distscan: error: interrupted by SIGINT; nothing was published\n"
    assert not (tmp_path / "o.npy").exists() and leftover_temps(tmp_path) == []


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("rank", [None, "2"])
def test_a_signal_while_the_command_loads_is_one_line(rank, signame):
    """^C to mpiexec while the ranks import NumPy and MPI (before the signal watcher) printed a
    traceback of KeyboardInterrupt per rank, and SIGTERM ended them without a word (Python's
    default action; an audit, 2026-11-26: SIGTERM after 0.15-0.3 s, rc 15, empty stderr), where
    docs/command.md promises one line for both; now one line each, and the rank dies of the signal
    itself (an exit with status 130 left the other ranks of an MPICH job waiting in MPI_Init: a
    launcher tears the job down when a rank dies of a signal)."""
    import signal
    import subprocess

    env = {k: v for k, v in os.environ.items() if k not in ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK",
                                                             "SLURM_PROCID")}
    if rank is not None:
        env["PMI_RANK"] = rank
    script = INTERRUPTED_IMPORT if signame == "SIGINT" else TERMINATED_IMPORT
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == -getattr(signal, signame), (proc.returncode, proc.stderr)
    where = f"rank {rank}: " if rank else ""
    assert proc.stderr == f"distscan: error: {where}interrupted by {signame} while starting; nothing was published\n"


ACTION_AFTER_THE_RUN = """
import signal
import sys
import distscan.__main__ as entry


def earlier(signum, frame):
    pass


signal.signal(signal.SIGTERM, earlier)
default_int = signal.getsignal(signal.SIGINT)
try:
    entry.run()
except SystemExit:
    pass
print(signal.getsignal(signal.SIGTERM) is earlier, signal.getsignal(signal.SIGINT) is default_int)
"""


def test_a_sigterm_after_the_run_takes_its_action_from_before(tmp_path):
    """The start-up's SIGTERM handler outlived the run (review of cfeb62f): after a failed run, a
    SIGTERM during MPI's finalisation at exit raised _Terminated in an atexit callback, a traceback
    and status 1 where the process had ended of the signal; now SIGTERM gets its earlier action
    back once the command returns."""
    import subprocess

    env = {k: v for k, v in os.environ.items() if k not in ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK",
                                                             "SLURM_PROCID")}
    proc = subprocess.run([sys.executable, "-c", ACTION_AFTER_THE_RUN, str(tmp_path / "missing.npy"), "-o",
                           str(tmp_path / "o.npy"), "--backend", "cpu"], env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.stdout == "True True\n", (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stderr.startswith("distscan: error: ") and proc.stderr.count("\n") == 1, proc.stderr


SIGNAL_LOST_IN_AN_IMPORT = """
import os
import signal
import sys
import time
import distscan.__main__ as entry

SIGNUM, HOW = int(sys.argv.pop(1)), sys.argv.pop(1)


class SignalledImport:  # the signal arrives inside an import, whose machinery mishandles exceptions
    def find_spec(self, name, path=None, target=None):
        if name == "distscan.cli":
            try:
                os.kill(os.getpid(), SIGNUM)
                time.sleep(0.2)  # the handler runs here
            except BaseException:
                if HOW == "swallowed":  # as the import lock's weakref callback does: printed and ignored
                    return None
                raise ImportError("PyCapsule_Import could not import module \\"datetime\\"")  # NumPy's C import
        return None


sys.modules.pop("distscan.cli", None)
sys.meta_path.insert(0, SignalledImport())
sys.exit(entry.run())
"""


@pytest.mark.parametrize("how", ["swallowed", "made an ImportError"])
@pytest.mark.parametrize("signame", ["SIGTERM", "SIGINT"])
def test_a_signal_inside_an_import_still_ends_the_start(tmp_path, signame, how):
    """A SIGTERM while the ranks imported NumPy (an audit, 2026-11-27, 0.05-0.075 s after the
    start) raised the start-up's exception inside the import system: where a callback ignored it
    the command ran on and published its output with status 0; where NumPy's C import turned it
    into ImportError, a traceback and status 1.  Now the handler itself writes the one line and
    the rank dies of the signal: no exception for the import to lose."""
    import signal
    import subprocess

    signum = getattr(signal, signame)
    env = {k: v for k, v in os.environ.items() if k not in ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK",
                                                             "SLURM_PROCID")}
    np.save(tmp_path / "in.npy", np.arange(10))
    proc = subprocess.run([sys.executable, "-c", SIGNAL_LOST_IN_AN_IMPORT, str(int(signum)), how,
                           str(tmp_path / "in.npy"), "-o", str(tmp_path / "o.npy"), "--backend", "cpu"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == -signum, (proc.returncode, proc.stderr)
    assert proc.stderr == f"distscan: error: interrupted by {signame} while starting; nothing was published\n"
    assert not (tmp_path / "o.npy").exists() and leftover_temps(tmp_path) == []
