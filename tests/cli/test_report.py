"""The command's ``--report``: written before the output is published, so that a report that cannot be
written (a full disk, a FIFO, a folder, a missing folder) publishes nothing, and a report is
complete when the output is."""

import os

import pytest

from distscan import cli

from tests.support.command import files_in, input_npy, one_error_line
from tests.support.files import leftover_temps

pytestmark = [
    pytest.mark.timeout(180),
    # These tests launch processes (mpiexec) themselves: under `mpiexec ... pytest --with-mpi` every
    # rank would launch nested jobs, so they run in the serial pytest pass only.
    pytest.mark.skipif(bool(os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK")),
                       reason="launches mpiexec itself; run it from a serial pytest"),
]


# -- 10: a report that cannot be written: nothing published --------------------------------------

def test_report_write_failure_publishes_nothing(tmp_path, monkeypatch, capsys):
    inp = input_npy(tmp_path)

    def full_disk(report):
        def write(f):
            raise OSError(28, "No space left on device")
        return write
    monkeypatch.setattr(cli, "_report_writer", full_disk)
    assert cli.main([inp, "--report", str(tmp_path / "r.json"), "--quiet"]) == 1
    one_error_line(capsys.readouterr().err, "No space left")
    assert files_in(tmp_path) == ["in.npy"]


@pytest.mark.parametrize("kind", ["fifo", "directory", "missing_folder"])
def test_bad_report_path_fails_before_anything(tmp_path, capsys, kind):
    inp = input_npy(tmp_path)
    rep = tmp_path / "r.json"
    if kind == "fifo":
        os.mkfifo(rep)
    elif kind == "directory":
        rep.mkdir()
    else:
        rep = tmp_path / "no" / "r.json"
    assert cli.main([inp, "--report", str(rep), "--force"]) == 1
    one_error_line(capsys.readouterr().err)
    assert not os.path.exists(tmp_path / "in.cumsum.npy") and leftover_temps(tmp_path) == []


def test_report_is_complete_when_the_output_is(tmp_path, capsys):
    import json
    inp = input_npy(tmp_path)
    assert cli.main([inp, "--report", str(tmp_path / "r.json"), "--verify", "--quiet"]) == 0
    r = json.loads((tmp_path / "r.json").read_text())
    assert r["verify"]["passed"] and r["times_s"]["total"] > 0 and r["argv"][0] == inp
    assert leftover_temps(tmp_path) == []
