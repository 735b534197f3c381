"""Defects of the ``distscan`` file command left by the review of 2026-11-25 (benchmarks/NOTES-gpu.md,
"Open after 2026-11-25 (twenty-fourth session)"), mended: a full disk's line did not name the file
(``io/writer.NpyWriter._write_at``, the report's ``attach``); ``-o ""`` and ``--report ""`` were
taken as not given (``cli/args._path_arg``); a header shape ``(True,)`` was read as ``(1,)``
(``io/npy._parse``).  The SIGTERM to a rank other than 0 is in test_signal_on_another_rank.py.
"""

import errno
import os

import numpy as np
import pytest

from distscan import cli
from distscan.io import read_header

from tests.support.command import assert_one_error_line, cli_in_process, files_in
from tests.support.files import leftover_temps

pytestmark = [
    pytest.mark.timeout(120),
    # cli_in_process runs the command on COMM_WORLD: under mpiexec each rank would name its own folder
    pytest.mark.skipif(bool(os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK")),
                       reason="runs the command in this process; run it from a serial pytest"),
]


def _full_disk(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


# -- a full disk: the line names the file --------------------------------------------------------------

def test_a_full_disk_while_writing_the_output_names_the_output(tmp_path, capsys, monkeypatch):
    np.save(tmp_path / "in.npy", np.arange(100, dtype=np.int64))
    monkeypatch.setattr(os, "pwritev", _full_disk)  # the writer's positional writes (io/writer.py)
    proc = cli_in_process(capsys, tmp_path / "in.npy", "-o", tmp_path / "o.npy", "--backend", "cpu", "--quiet")
    line = assert_one_error_line(proc, "No space left on device")
    assert str(tmp_path / "o.npy") in line, line
    assert files_in(tmp_path) == ["in.npy"]


def test_a_full_disk_while_writing_the_report_names_the_report(tmp_path, capsys, monkeypatch):
    np.save(tmp_path / "in.npy", np.arange(100, dtype=np.int64))

    def report_writer(report):
        return _full_disk
    monkeypatch.setattr(cli, "_report_writer", report_writer)
    proc = cli_in_process(capsys, tmp_path / "in.npy", "-o", tmp_path / "o.npy", "--report", tmp_path / "r.json",
                          "--backend", "cpu", "--quiet")
    line = assert_one_error_line(proc, "No space left on device")
    assert str(tmp_path / "r.json") in line, line
    assert files_in(tmp_path) == ["in.npy"]


# -- an empty path is refused, not taken as "not given" ---------------------------------------------------

@pytest.mark.parametrize("option, named", [("-o", "-o/--output"), ("--output", "-o/--output"),
                                           ("--report", "--report")])
def test_an_empty_path_is_refused(tmp_path, capsys, option, named):
    np.save(tmp_path / "in.npy", np.arange(10, dtype=np.int64))
    proc = cli_in_process(capsys, tmp_path / "in.npy", option, "", "--backend", "cpu", "--quiet")
    assert proc.returncode == 2, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if "error:" in line]  # (argparse's usage lines aside)
    assert errors == [f"distscan: error: argument {named}: an empty path names no file"], proc.stderr
    assert files_in(tmp_path) == ["in.npy"]  # no in.cumsum.npy beside the input


def test_an_empty_output_of_a_recurrence_is_refused(tmp_path, capsys):
    np.save(tmp_path / "a.npy", np.ones(4))
    np.save(tmp_path / "b.npy", np.ones(4))
    proc = cli_in_process(capsys, "recurrence", tmp_path / "a.npy", tmp_path / "b.npy", "-o", "", "--quiet")
    assert proc.returncode == 2, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if "error:" in line]
    assert errors == ["distscan recurrence: error: argument -o/--output: an empty path names no file"], proc.stderr
    assert files_in(tmp_path) == ["a.npy", "b.npy"]


# -- a header shape of booleans ------------------------------------------------------------------------------

def _npy_with_header(path, header: bytes, data: bytes):
    pad = 64 - (10 + len(header) + 1) % 64
    header = header + b" " * pad + b"\n"
    path.write_bytes(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + data)
    return path


@pytest.mark.parametrize("shape", ["(True,)", "(False,)", "(2, True)", "(1.0,)"])
def test_a_shape_that_is_not_integers_is_refused_naming_the_file(tmp_path, capsys, shape):
    data = np.arange(2, dtype="<i8").tobytes()
    p = _npy_with_header(tmp_path / "in.npy", f"{{'descr': '<i8', 'fortran_order': False, 'shape': {shape}, }}"
                         .encode(), data)
    with pytest.raises((TypeError, ValueError)):
        np.load(p)  # NumPy refuses it too
    proc = cli_in_process(capsys, p, "-o", tmp_path / "o.npy", "--backend", "cpu", "--quiet")
    assert_one_error_line(proc, "in.npy", "shape")
    assert not (tmp_path / "o.npy").exists() and leftover_temps(tmp_path) == []


@pytest.mark.parametrize("shape, dims", [("(2,)", (2,)), ("(1, 2)", (1, 2)), ("(0,)", (0,)), ("(2, 0)", (2, 0))])
def test_integer_shapes_still_read(tmp_path, capsys, shape, dims):
    a = np.arange(int(np.prod(dims)), dtype="<i8").reshape(dims)
    p = _npy_with_header(tmp_path / "in.npy", f"{{'descr': '<i8', 'fortran_order': False, 'shape': {shape}, }}"
                         .encode(), a.tobytes())
    assert np.load(p).shape == dims and read_header(p).shape == dims
    proc = cli_in_process(capsys, p, "-o", tmp_path / "o.npy", "--backend", "cpu", "--quiet")
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "o.npy"), np.cumsum(a, axis=0))
