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
