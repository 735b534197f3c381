"""Defects of the ``distscan`` command found by the red-team pass of 2026-11-27 (fortieth session),
mended: an ``--initial`` past 64 bits for an integer recurrence ended in NumPy's "Python int too
large to convert to C long" (``_call.initial_row``); a run started with its standard error closed
(``2>&-``) published its output and exited 1 (``__main__.run``); a full disk on the ranks but
rank 0 said "rank 0 (and 1 other rank): rank 1: ..." (``io/writer.NpyWriter.__exit__``); an input
replaced (renamed over) between the header's read and the ranks' opens was scanned with the old
header, garbage published with exit 0 (``io/npy.NpyHeader.file_id``, ``pipeline/files.Files``); ranks
given different command lines (``mpiexec -n 1 distscan ... : -n 1 distscan ...``) hung (a usage error
or --help on one rank) or aborted after the final agreement's timeout, their temporary file left
(``cli._agree_on_arguments``).  The --dtype that NumPy's parser chokes on is in
test_args.py, a non-numeric recurrence A or B in test_command_adversarial.py.
"""

import os
import subprocess
import sys

import numpy as np
import pytest

from tests.support.command import T, assert_one_error_line, cli_in_process, distscan_args
from tests.support.files import leftover_temps
from tests.support.launch import CliBatches, files_and_sizes, python_env, require_mpiexec, run

pytestmark = [
    pytest.mark.timeout(120),
    # cli_in_process runs the command on COMM_WORLD: under mpiexec each rank would name its own folder
    pytest.mark.skipif(bool(os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK")),
                       reason="runs the command in this process; run it from a serial pytest"),
]


# -- an --initial past 64 bits: refused naming the value and the dtype ----------------------------------

@pytest.mark.parametrize("initial", [str(2**64), str(-2**63 - 1), "99999999999999999999999"])
def test_an_initial_past_64_bits_is_refused_naming_it(tmp_path, capsys, initial):
    """NumPy keeps such a Python int as an object, which the range check skipped; its cast said
    "Python int too large to convert to C long", naming neither the value nor the dtype."""
    np.save(tmp_path / "a.npy", np.ones(4, np.int64))
    np.save(tmp_path / "b.npy", np.arange(4, dtype=np.int64))
    before = files_and_sizes(tmp_path)
    proc = cli_in_process(capsys, "recurrence", tmp_path / "a.npy", tmp_path / "b.npy", "--initial", initial,
                          "-o", tmp_path / "y.npy", "--backend", "cpu", "--quiet")
    assert_one_error_line(proc, "initial value", initial, "int64")
    assert files_and_sizes(tmp_path) == before and leftover_temps(tmp_path) == []


def test_an_initial_past_64_bits_still_works_for_a_float_recurrence(tmp_path, capsys):
    np.save(tmp_path / "a.npy", np.ones(3))
    np.save(tmp_path / "b.npy", np.zeros(3))
    proc = cli_in_process(capsys, "recurrence", tmp_path / "a.npy", tmp_path / "b.npy", "--initial", str(2**70),
                          "-o", tmp_path / "y.npy", "--backend", "cpu", "--quiet")
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), np.full(3, float(2**70)))


# -- standard error (or output) closed: the exit status still tells whether the run published ----------

def _closed(fds):
    def close():
        for fd in fds:
            os.close(fd)
    return close


@pytest.mark.parametrize("fds", [(2,), (1, 2), (0, 1, 2)], ids=["stderr", "stdout-stderr", "all"])
@pytest.mark.parametrize("extra", [[], ["--progress", "--report", "r.json"]], ids=["plain", "progress-report"])
def test_a_run_with_its_standard_error_closed_exits_0_when_it_publishes(tmp_path, fds, extra):
    """``2>&-`` (a cron job, a daemon): Python sets ``sys.stderr`` to None, and the command's last
    ``sys.stderr.flush()`` raised AttributeError after the output was published: exit 1 with a
    complete output in place, where a non-zero status must mean nothing was published."""
    np.save(tmp_path / "in.npy", np.arange(100, dtype=np.int64))
    extra = [str(tmp_path / x) if x.endswith(".json") else x for x in extra]
    cmd = distscan_args(tmp_path / "in.npy", "-o", tmp_path / "o.npy", "--backend", "cpu", *extra)
    proc = subprocess.run(cmd, env=python_env(), timeout=T, preexec_fn=_closed(fds), stdout=subprocess.DEVNULL
                          if 1 not in fds else None)
    assert proc.returncode == 0
    np.testing.assert_array_equal(np.load(tmp_path / "o.npy"), np.cumsum(np.arange(100)))
    assert leftover_temps(tmp_path) == []
    again = subprocess.run(cmd, env=python_env(), timeout=T, preexec_fn=_closed(fds), stdout=subprocess.DEVNULL
                           if 1 not in fds else None)
    assert again.returncode == 1  # the output exists: refused, nothing changed
    np.testing.assert_array_equal(np.load(tmp_path / "o.npy"), np.cumsum(np.arange(100)))
    assert leftover_temps(tmp_path) == []


# -- a failure agreed inside the writer's block is not agreed a second time under another rank's name ----

# Every rank but 0 finds the disk full: rank 0 writes its rows, the others fail theirs.
FULL_DISK_BUT_RANK_0 = """
import errno, os
real = os.pwritev
def pwritev(fd, bufs, pos, *rest):
    if rank != 0:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    return real(fd, bufs, pos, *rest)
patch(os, "pwritev", pwritev)
"""


# Rank 0 renames another file (the same size, another dtype) over the input once every header is
# read, before the ranks open the input for their rows; the others wait for it.
REPLACED_BY_RANK_0 = """
import os
import numpy as np
from mpi4py import MPI
import distscan.pipeline.files as files
orig = files.Files.__init__
def init(self, header, writer, layout):
    if rank == 0:
        new = header.path + ".new.npy"
        np.save(new, np.arange(1000, dtype=np.float64))
        os.replace(new, header.path)
    MPI.COMM_WORLD.Barrier()
    orig(self, header, writer, layout)
patch(files.Files, "__init__", init)
"""


@pytest.fixture(scope="module")
def disk_batches(tmp_path_factory):
    b = CliBatches(tmp_path_factory)
    for ranks in (2, 3):
        def prepare(folder):
            np.save(folder / "in.npy", np.arange(10_000, dtype=np.int64))
            return [folder / "in.npy", "-o", folder / "o.npy", "--backend", "cpu", "--quiet"], \
                {"setup": FULL_DISK_BUT_RANK_0}
        b.add(ranks, "full_disk_but_rank_0", prepare)

        def replaced(folder):
            np.save(folder / "in.npy", np.arange(1000, dtype=np.int64))
            return [folder / "in.npy", "-o", folder / "o.npy", "--backend", "cpu", "--quiet"], \
                {"setup": REPLACED_BY_RANK_0}
        b.add(ranks, "input_replaced", replaced)
    return b


@pytest.mark.parametrize("ranks", [2, 3])
def test_a_full_disk_on_some_ranks_is_told_once_under_their_names(disk_batches, ranks):
    """The store phase agreed "rank 1: ... No space left on device"; the writer's exit agreed again,
    rank 0 with that agreed error and the others with their own raw one, which differ: the line was
    "rank 0 (and 1 other rank): rank 1: ...", naming rank 0, which wrote all its rows."""
    folder, proc, opts = disk_batches.get(ranks, "full_disk_but_rank_0")
    line = assert_one_error_line(proc, "No space left on device", str(folder / "o.npy"))
    others = "" if ranks == 2 else " (and 1 other rank)"
    assert f"error: rank 1{others}: [Errno 28] cannot write" in line and "rank 0" not in line, line
    assert files_and_sizes(folder) == opts["before"] and leftover_temps(folder) == []


# -- an input replaced while the run reads it: refused, not scanned with the old header ----------------

@pytest.mark.parametrize("ranks", [2, 3])
def test_an_input_replaced_after_its_header_was_read_is_refused(disk_batches, ranks):
    """``os.replace`` of another file over the input (a tool that saves by renaming, another
    distscan run with ``-o`` the input's name and ``--force``) between rank 0's read of the header and
    the ranks' opens: the float64 file's bytes were scanned as the int64 the old header said, and
    that garbage published with exit 0."""
    folder, proc, _ = disk_batches.get(ranks, "input_replaced")
    assert_one_error_line(proc, str(folder / "in.npy"), "replaced")
    assert not (folder / "o.npy").exists() and leftover_temps(folder) == []


def test_an_input_replaced_after_its_header_was_read_is_refused_at_one_rank(tmp_path, capsys, monkeypatch):
    import distscan.pipeline.files as files
    np.save(tmp_path / "in.npy", np.arange(1000, dtype=np.int64))
    orig = files.Files.__init__

    def init(self, header, writer, layout):
        np.save(tmp_path / "new.npy", np.arange(1000, dtype=np.float64))
        os.replace(tmp_path / "new.npy", header.path)
        orig(self, header, writer, layout)
    monkeypatch.setattr(files.Files, "__init__", init)
    proc = cli_in_process(capsys, tmp_path / "in.npy", "-o", tmp_path / "o.npy", "--backend", "cpu", "--quiet")
    assert_one_error_line(proc, str(tmp_path / "in.npy"), "replaced")
    assert not (tmp_path / "o.npy").exists() and leftover_temps(tmp_path) == []


# -- ranks given different command lines: refused on every rank in one line, at once ------------------

def _mpmd(folder, first, second):
    """``mpiexec -n 1 distscan FIRST : -n 1 distscan SECOND`` (MPICH's and Open MPI's MPMD form)."""
    mpiexec = require_mpiexec()
    return run([mpiexec, "-n", "1", *distscan_args(*first), ":", "-n", "1", *distscan_args(*second)], timeout=T)


_SAME = ["--backend", "cpu", "--quiet"]


@pytest.mark.parametrize("extra, words, code", [
    (["--op", "bogus"], ["different command lines"], 2),       # a usage error on rank 1 alone: it hung
    (["--help"], ["different command lines"], 2),               # --help on rank 1 alone: it hung
    (["--report", "r.json"], ["--report differs across ranks", "rank 1 has"], 2),  # a 20 s abort, temp left
    (["--segments", "flags.npy"], ["--segments differs across ranks"], 2),         # the same
    (["--compensated"], ["--compensated differs across ranks"], 2),                # the same
    (["--verify"], ["--verify differs across ranks"], 2),       # "tuple index out of range"
], ids=["usage", "help", "report", "segments", "compensated", "verify"])
def test_ranks_given_different_arguments_are_refused_at_once(tmp_path, extra, words, code):
    np.save(tmp_path / "in.npy", np.arange(100, dtype=np.int64))
    np.save(tmp_path / "flags.npy", np.arange(100) % 7 == 0)
    before = files_and_sizes(tmp_path)
    base = [tmp_path / "in.npy", "-o", tmp_path / "o.npy", *_SAME]
    extra = [str(tmp_path / x) if x.endswith((".npy", ".json")) else x for x in extra]
    proc = _mpmd(tmp_path, base, base + extra)
    assert_one_error_line(proc, *words, code=code)
    assert files_and_sizes(tmp_path) == before and leftover_temps(tmp_path) == []


def test_options_of_a_rank_s_own_may_differ(tmp_path):
    """``--memory-limit``, ``--quiet``, ``--debug`` (and the GPU options) are each rank's own."""
    np.save(tmp_path / "in.npy", np.arange(100, dtype=np.int64))
    base = [tmp_path / "in.npy", "-o", tmp_path / "o.npy", "--backend", "cpu"]
    proc = _mpmd(tmp_path, base + ["--quiet"], base + ["--memory-limit", "1", "--debug"])
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "o.npy"), np.cumsum(np.arange(100)))
