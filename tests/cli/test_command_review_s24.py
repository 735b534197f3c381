"""Defects of the ``distscan`` file command found by the review of 2026-11-25 (twenty-fourth
session), mended (branch s24-review-mends; on main they were strict xfails until then): a run that
failed after its report was placed lost the old report (``io/names.keep_aside``); ``recurrence
--initial`` rounded integers past 2^53; an unclosed header dict gave a tokenizer's message.
"""

import os

import numpy as np
import pytest

from distscan.io import writer

from tests.support.command import assert_one_error_line, cli_in_process
from tests.support.files import leftover_temps

pytestmark = [
    # cli_in_process runs the command on COMM_WORLD: under mpiexec each rank would name its own folder
    pytest.mark.skipif(bool(os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK")),
                       reason="runs the command in this process; run it from a serial pytest"),
]


def test_an_output_that_appears_before_the_commit_keeps_the_old_report(tmp_path, capsys, monkeypatch):
    """An output file made by someone else while the scan ran (no --force): the run fails with one
    line and changes nothing, the report of the run before included."""
    np.save(tmp_path / "in.npy", np.arange(10.0))
    (tmp_path / "r.json").write_text('{"old": 1}\n')
    real = writer.check_replaceable
    seen = []

    def output_appears(path, force, what="output"):
        seen.append(what)
        if what == "output" and "report" in seen:  # the output's turn at the commit: it exists by now
            (tmp_path / "o.npy").write_bytes(b"precious")
        return real(path, force, what)

    monkeypatch.setattr(writer, "check_replaceable", output_appears)
    proc = cli_in_process(capsys, tmp_path / "in.npy", "-o", tmp_path / "o.npy", "--report", tmp_path / "r.json",
                          "--backend", "cpu", "--quiet")
    assert_one_error_line(proc, "output file exists")
    assert (tmp_path / "o.npy").read_bytes() == b"precious"
    assert (tmp_path / "r.json").read_text() == '{"old": 1}\n'
    assert leftover_temps(tmp_path) == []


@pytest.mark.parametrize("initial", [2**53 + 1, 123456789012345678, 2**63 - 1])
def test_a_recurrence_s_integer_initial_is_exact(tmp_path, capsys, initial):
    np.save(tmp_path / "a.npy", np.ones(4, np.int64))
    np.save(tmp_path / "b.npy", np.zeros(4, np.int64))
    proc = cli_in_process(capsys, "recurrence", tmp_path / "a.npy", tmp_path / "b.npy", "--initial", str(initial),
                          "-o", tmp_path / "y.npy", "--backend", "cpu", "--quiet")
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), np.full(4, initial, np.int64))


def test_an_unclosed_header_dict_is_refused_in_one_line_naming_the_file(tmp_path, capsys):
    header = b"{'descr': '<i8', 'fortran_order': False, 'shape': (17,), \n"
    pad = 64 - (10 + len(header)) % 64
    raw = b"\x93NUMPY\x01\x00" + (len(header) + pad).to_bytes(2, "little") + header[:-1] + b" " * pad + b"\n"
    (tmp_path / "in.npy").write_bytes(raw + np.arange(17, dtype="<i8").tobytes())
    proc = cli_in_process(capsys, tmp_path / "in.npy", "-o", tmp_path / "o.npy", "--backend", "cpu", "--quiet")
    assert_one_error_line(proc, "in.npy")
    assert not (tmp_path / "o.npy").exists()
