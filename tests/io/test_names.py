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
