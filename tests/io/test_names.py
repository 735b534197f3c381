"""Temporary names of outputs being written (distscan.io.names): a stale one (its process gone) is removed
by a later run and told, a live one (its process holds the lock) never; an interruption removes
every live temporary file of this process and tells what was already published."""

import os
import subprocess
import sys

import numpy as np
import pytest

from distscan import io as dio

from tests.support.launch import REPO

pytestmark = pytest.mark.timeout(60)


def _dead_pid():
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_stale_temp_of_a_dead_process_is_removed_and_told(tmp_path):
    out = str(tmp_path / "o.npy")
    stale = dio.temp_name_for(out, pid=_dead_pid())
    open(stale, "wb").write(b"x" * 1000)
    other = dio.temp_name_for(str(tmp_path / "other.npy"), pid=_dead_pid())  # another output's: kept
    open(other, "wb").close()
    told = []
    with dio.NpyWriter(out, (1,), np.int8, notice=told.append) as w:
        w.write_rows(0, np.zeros(1, np.int8))
    assert not os.path.exists(stale) and os.path.exists(other)
    assert len(told) == 1 and stale in told[0] and "no longer running" in told[0]


def test_live_temp_is_never_removed(tmp_path):
    """A temporary file whose process is alive and holds the lock (another run) stays."""
    out = str(tmp_path / "o.npy")
    code = ("import sys, time; sys.path.insert(0, sys.argv[2]); from distscan import io; "
            "t, fd = io.create_temp(sys.argv[1]); print(t, flush=True); time.sleep(60)")
    repo = str(REPO)
    holder = subprocess.Popen([sys.executable, "-c", code, out, repo], stdout=subprocess.PIPE, text=True)
    try:
        live = holder.stdout.readline().strip()
        assert os.path.exists(live)
        assert dio.remove_stale_temps(out) == []
        with dio.NpyWriter(out, (1,), np.int8) as w:
            w.write_rows(0, np.zeros(1, np.int8))
        assert os.path.exists(live)
    finally:
        holder.kill()
        holder.wait()
    # its process is gone: now it is stale
    assert [c for c, _ in dio.remove_stale_temps(out)] == [live]


def test_emergency_cleanup_tells_published_from_not(tmp_path):
    out = str(tmp_path / "o.npy")
    dio.forget_temps()
    with dio.NpyWriter(out, (2,), np.int64) as w:
        w.write_rows(0, np.arange(2))
        temp = w.temp_path
    removed, published = dio.emergency_cleanup()
    assert removed == [] and published  # the rename happened: too late to interrupt
    dio.forget_temps()
    w = dio.NpyWriter(str(tmp_path / "p.npy"), (2,), np.int64).__enter__()
    removed, published = dio.emergency_cleanup()
    assert removed == [w.temp_path] and not published and not os.path.exists(w.temp_path)
    dio.forget_temps()
    assert temp != w.temp_path


def test_a_signal_right_after_the_output_is_created_removes_it(tmp_path, monkeypatch):
    """The signal watcher (a thread beside the main one) found the output's temporary file
    created and not yet registered, between its creation and its registration (an ftruncate
    between), and left the full-size file behind (1 rank, SIGINT at 0.4-0.5 s, 9 of 138 runs,
    2026-11-25).  Now creating registers it: the watcher's cleanup at that point removes it."""
    import distscan.io.writer as writer

    dio.forget_temps()
    seen = []

    def cleanup_instead_of_ftruncate(fd, size):  # the watcher's work, at the old window
        seen.append(dio.emergency_cleanup())

    monkeypatch.setattr(writer.os, "ftruncate", cleanup_instead_of_ftruncate)
    with pytest.raises(OSError, match="cannot open"):  # (the watcher would have ended the run by now)
        dio.NpyWriter(str(tmp_path / "o.npy"), (4,), np.int64).__enter__()
    (removed, published), = seen
    assert len(removed) == 1 and ".part" in removed[0] and not published
    assert os.listdir(tmp_path) == []
    dio.forget_temps()


def test_created_with_a_role_is_registered_and_without_is_not(tmp_path):
    from distscan.io import names

    dio.forget_temps()
    temp, fd = dio.create_temp(str(tmp_path / "r.json"), "companion")
    plain, fd2 = dio.create_temp(str(tmp_path / "s.json"))
    try:
        assert names.is_live(temp) and not names.is_live(plain)
    finally:
        for f, t in ((fd, temp), (fd2, plain)):
            os.close(f)
            os.unlink(t)
        dio.forget_temps()


def test_a_signal_after_the_report_was_placed_puts_the_old_report_back(tmp_path):
    """The report is moved into place just before the output; a signal between the two (the
    output not yet published) put no report back and removed the new one: the old report was lost
    (found 2026-11-25).  Now the old one is kept aside (a hard link) and put back."""
    from distscan.io import names

    report = tmp_path / "r.json"
    report.write_text("old\n")
    names.forget_temps()
    out_temp, out_fd = names.create_temp(str(tmp_path / "o.npy"), "output")
    rep_temp, rep_fd = names.create_temp(str(report), "companion")
    os.write(rep_fd, b"new\n")
    backup = names.keep_aside(str(report))
    assert backup is not None and os.path.exists(backup)
    os.replace(rep_temp, report)  # the commit's first step, then the signal
    removed, published = names.emergency_cleanup()
    os.close(out_fd)
    os.close(rep_fd)
    assert not published and out_temp in removed
    assert report.read_text() == "old\n"
    assert sorted(os.listdir(tmp_path)) == ["r.json"]
    names.forget_temps()


def test_a_signal_after_publishing_drops_the_kept_report(tmp_path):
    from distscan.io import names

    report, out = tmp_path / "r.json", tmp_path / "o.npy"
    report.write_text("old\n")
    names.forget_temps()
    out_temp, out_fd = names.create_temp(str(out), "output")
    rep_temp, rep_fd = names.create_temp(str(report), "companion")
    os.write(rep_fd, b"new\n")
    backup = names.keep_aside(str(report))
    os.replace(rep_temp, report)
    os.replace(out_temp, out)  # published
    removed, published = names.emergency_cleanup()
    os.close(out_fd)
    os.close(rep_fd)
    assert published
    assert report.read_text() == "new\n" and not os.path.exists(backup)
    assert sorted(os.listdir(tmp_path)) == ["o.npy", "r.json"]
    names.forget_temps()


def test_a_kept_report_of_a_dead_process_is_a_stale_temp(tmp_path):
    """A run killed between keep_aside and its end leaves the old report under a second name: a
    later run to the same report removes it as any stale temporary file."""
    from distscan.io import names

    report = str(tmp_path / "r.json")
    stale = names.temp_name_for(report, pid=_dead_pid(), old=True)
    open(stale, "w").write("old\n")
    assert [c for c, _ in names.remove_stale_temps(report)] == [stale]


def test_no_file_is_created_once_the_run_is_marked_interrupted(tmp_path):
    """The signal watcher marks the run before its cleanup takes the registry's lock; a file created
    after that cleanup would be left behind when rank 0 aborts at once (distscan.cli.signals), so
    creating one is refused under the same lock once the run is marked."""
    from distscan.io import names

    (tmp_path / "r.json").write_text("old\n")
    names.forget_temps()
    names.mark_interrupted("SIGINT")
    try:
        with pytest.raises(dio.Interrupted, match="interrupted by SIGINT"):
            names.create_temp(str(tmp_path / "o.npy"), "output")
        with pytest.raises(dio.Interrupted, match="interrupted by SIGINT"):
            names.keep_aside(str(tmp_path / "r.json"))
        assert os.listdir(tmp_path) == ["r.json"]
    finally:
        names.forget_temps()
