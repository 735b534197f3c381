"""The record of a signal (distscan.cli.signals, distscan.io.names): one record, the signal's name in
distscan.io, from which the command's exit status (128 + the signal's number) is derived.  Until the
twenty-sixth session the status was a second list in distscan.cli.signals, cleared in other places
than the name (``forget_temps`` cleared one, ``Interrupts.__enter__`` both)."""

import signal

import numpy as np
import pytest

from distscan import io as dio
from distscan.cli import signals

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True)
def _no_record():
    dio.forget_temps()
    yield
    dio.forget_temps()


def test_the_status_is_derived_from_the_recorded_signal():
    assert dio.interrupted_by() is None and signals.signalled_status() is None
    dio.mark_interrupted("SIGINT")
    assert signals.signalled_status() == 128 + signal.SIGINT
    dio.mark_interrupted("SIGTERM")  # the first signal reported stays
    assert dio.interrupted_by() == "SIGINT" and signals.signalled_status() == 128 + signal.SIGINT


def test_one_clearing_forgets_the_name_and_the_status(monkeypatch):
    monkeypatch.setattr(signals, "_ABORT_GRACE_S", 0.0)
    signals.Interrupts(0, 2, lambda code: None)._handle(signal.SIGTERM)  # no temporary file: it marks the run
    assert dio.interrupted_by() == "SIGTERM" and signals.signalled_status() == 128 + signal.SIGTERM
    dio.forget_temps()
    assert dio.interrupted_by() is None and signals.signalled_status() is None


def test_a_signal_after_publishing_leaves_no_record(tmp_path):
    with dio.NpyWriter(str(tmp_path / "o.npy"), (2,), "i8") as w:
        w.write_rows(0, np.arange(2))
    signals.Interrupts(0, 1, lambda code: pytest.fail("aborted after publishing"))._handle(signal.SIGINT)
    assert dio.interrupted_by() is None and signals.signalled_status() is None


def test_a_signal_in_a_command_run_in_process_does_not_fail_a_later_pipeline_call(tmp_path, capfd, monkeypatch):
    """The record is scoped to the command's run (the signal watcher's ``Interrupts`` block): a
    pipeline call after it in the same process failed "interrupted by SIGTERM" (CI, 2026-11-25, on
    rank 1 after tests/cli/test_signal_on_another_rank.py; that file cleared the marks by hand)."""
    from distscan import cli, pipeline
    from distscan.io import writer

    np.save(tmp_path / "in.npy", np.arange(100, dtype=np.int64))
    aborts, enter = [], writer.NpyWriter.__enter__

    def abort(code):  # the real one ends the process
        aborts.append(code)
        signals.ENDING.clear()

    def entering(self):  # the watcher's work, as the signal comes while the output is opened
        signals.Interrupts(0, 1, abort)._handle(signal.SIGTERM)
        return enter(self)

    monkeypatch.setattr(writer.NpyWriter, "__enter__", entering)
    code = cli.main([str(tmp_path / "in.npy"), "-o", str(tmp_path / "o.npy"), "--backend", "cpu", "--quiet"])
    assert code == 128 + signal.SIGTERM and aborts == [128 + signal.SIGTERM]
    assert "interrupted by SIGTERM" in capfd.readouterr().err
    assert dio.interrupted_by() is None and signals.signalled_status() is None
    monkeypatch.undo()  # the writer as it is
    report = pipeline.run(pipeline.Job(input=str(tmp_path / "in.npy"), output=str(tmp_path / "p.npy")), None)
    assert report["elements"] == 100
    np.testing.assert_array_equal(np.load(tmp_path / "p.npy"), np.arange(100).cumsum())
