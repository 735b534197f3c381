"""An input rewritten in place during a run (the same inode, its bytes changed: ``open(path, 'r+b')``
writes, a truncation) is refused before anything is published (``io/npy.check_unchanged``, agreed in
``pipeline._inputs_unchanged``): until the forty-first session it was scanned half old, half new,
and published with exit 0; only a file renamed over it was told (``check_same_file``).  What is
compared is the file's size and modification time when its header was read: a rewrite that keeps
both is not seen (docs/command.md says so).

The change is made at a chosen point of the run (the reads' end, ``Files.close``; or before the ranks
open the input, ``Files.__init__``), so each case is the same every time.  The input's modification
time is first set an hour back, so that a write in the same clock tick as ``np.save`` still moves it.
"""

import os
import time

import numpy as np
import pytest

from tests.support.command import assert_one_error_line, cli_in_process
from tests.support.files import leftover_temps
from tests.support.launch import CliBatches, files_and_sizes

pytestmark = [
    pytest.mark.timeout(120),
    # cli_in_process runs the command on COMM_WORLD: under mpiexec each rank would name its own folder
    pytest.mark.skipif(bool(os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK")),
                       reason="runs the command in this process; run it from a serial pytest"),
]

N = 10_000


def _save_old(path, a):
    """``np.save``, then the file's times an hour back."""
    np.save(path, a)
    past = time.time_ns() - 3600 * 10**9
    os.utime(path, ns=(past, past))


# What each case does to the file (every case keeps the inode).
CHANGES = """
import os
def truncate(path):
    os.truncate(path, os.path.getsize(path) - 8 * 100)   # the last 100 int64 rows gone
def write(path):
    with open(path, "r+b") as f:                            # the same size, other bytes
        f.seek(-8 * 100, os.SEEK_END)
        f.write(bytes(range(256)) * 3 + bytes(32))
CHANGE = {"truncate": truncate, "write": write}
"""


def _change(how, path):
    ns = {}
    exec(CHANGES, ns)
    ns["CHANGE"][how](path)


def _args(folder, *extra):
    return [folder / "in.npy", "-o", folder / "o.npy", "--backend", "cpu", "--quiet", *extra]


@pytest.mark.parametrize("how, words", [("truncate", ["truncated from 80128 to 79328 bytes"]),
                                        ("write", ["its modification time changed"])])
@pytest.mark.parametrize("extra", [[], ["--verify"], ["--report", "r.json"]], ids=["plain", "verify", "report"])
def test_an_input_changed_in_place_during_the_run_is_refused(tmp_path, capsys, monkeypatch, how, words, extra):
    """The change comes once every row was read (the scan is done, its output complete under the
    temporary name): the run refuses before the rename, in one line, and publishes nothing (nor the
    report)."""
    import distscan.pipeline.files as files
    _save_old(tmp_path / "in.npy", np.arange(N, dtype=np.int64))
    close = files.Files.close

    def closing(self):
        _change(how, self.hdr.path)
        return close(self)
    monkeypatch.setattr(files.Files, "close", closing)
    extra = [str(tmp_path / x) if x.endswith(".json") else x for x in extra]
    proc = cli_in_process(capsys, *_args(tmp_path, *extra))
    assert_one_error_line(proc, str(tmp_path / "in.npy"), "changed in place while it was scanned",
                          "nothing was published", *words)
    assert not (tmp_path / "o.npy").exists() and not (tmp_path / "r.json").exists()
    assert leftover_temps(tmp_path) == []


@pytest.mark.parametrize("how", ["truncate", "write"])
def test_an_input_changed_in_place_before_the_ranks_open_it_is_refused_unscanned(tmp_path, capsys, monkeypatch, how):
    import distscan.pipeline.files as files
    _save_old(tmp_path / "in.npy", np.arange(N, dtype=np.int64))
    init = files.Files.__init__

    def opening(self, header, writer, layout):
        _change(how, header.path)
        init(self, header, writer, layout)
    monkeypatch.setattr(files.Files, "__init__", opening)
    proc = cli_in_process(capsys, *_args(tmp_path))
    assert_one_error_line(proc, str(tmp_path / "in.npy"), "changed in place after its header was read",
                          "nothing was scanned")
    assert not (tmp_path / "o.npy").exists() and leftover_temps(tmp_path) == []


def test_segment_flags_changed_in_place_during_the_run_are_refused(tmp_path, capsys, monkeypatch):
    import distscan.pipeline.files as files
    _save_old(tmp_path / "in.npy", np.arange(N, dtype=np.int64))
    _save_old(tmp_path / "flags.npy", np.arange(N) % 7 == 0)
    close = files.Files.close

    def closing(self):
        with open(tmp_path / "flags.npy", "r+b") as f:
            f.seek(-10, os.SEEK_END)
            f.write(b"\x01" * 10)
        return close(self)
    monkeypatch.setattr(files.Files, "close", closing)
    proc = cli_in_process(capsys, *_args(tmp_path, "--segments", tmp_path / "flags.npy"))
    assert_one_error_line(proc, str(tmp_path / "flags.npy"), "changed in place while it was scanned")
    assert not (tmp_path / "o.npy").exists() and leftover_temps(tmp_path) == []


def test_an_input_left_alone_is_published(tmp_path, capsys):
    """The check passes an input that was only read (its access time may move: not compared)."""
    _save_old(tmp_path / "in.npy", np.arange(N, dtype=np.int64))
    proc = cli_in_process(capsys, *_args(tmp_path, "--verify"))
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "o.npy"), np.cumsum(np.arange(N)))


# Rank 0 changes the input once every rank has read its rows; the others wait for it.
CHANGED_BY_RANK_0 = CHANGES + """
from mpi4py import MPI
import distscan.pipeline.files as files
orig = files.Files.close
def close(self):
    if rank == 0:
        CHANGE[HOW](self.hdr.path)
    MPI.COMM_WORLD.Barrier()
    orig(self)
patch(files.Files, "close", close)
"""


@pytest.fixture(scope="module")
def batches(tmp_path_factory):
    b = CliBatches(tmp_path_factory)
    for ranks in (2, 3):
        for how in ("truncate", "write"):
            def prepare(folder, how=how):
                _save_old(folder / "in.npy", np.arange(N, dtype=np.int64))
                return _args(folder), {"setup": f"HOW = {how!r}\n" + CHANGED_BY_RANK_0}
            b.add(ranks, how, prepare)
    return b


@pytest.mark.parametrize("ranks", [2, 3])
@pytest.mark.parametrize("how", ["truncate", "write"])
def test_an_input_changed_in_place_during_the_run_is_refused_on_every_rank(batches, ranks, how):
    folder, proc, opts = batches.get(ranks, how)
    assert_one_error_line(proc, str(folder / "in.npy"), "changed in place while it was scanned")
    assert not (folder / "o.npy").exists() and leftover_temps(folder) == []
    assert set(files_and_sizes(folder)) == set(opts["before"])
