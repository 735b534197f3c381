"""Serial tests of io/pipeline edge cases: zero-element arrays, non-regular inputs and outputs,
malformed headers, .npz archives, temporary file names, locks and stale temporaries."""

import glob
import os
import stat
import subprocess
import sys

import numpy as np
import pytest

from distscan import io as dio
from distscan import pipeline

from tests.support.launch import REPO

pytestmark = pytest.mark.timeout(60)
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def _temps(folder):
    return sorted(glob.glob(os.path.join(str(folder), "*.part")) + glob.glob(os.path.join(str(folder), ".*.part")))


def _empty_header_file(path, shape, descr="<i8"):
    with open(path, "wb") as f:
        np.lib.format.write_array_header_2_0(f, {"descr": descr, "fortran_order": False, "shape": shape})
    return str(path)


# -- 6: arrays with no elements finish at once ---------------------------------------------------

@pytest.mark.parametrize("shape", [(2**59, 0), (0,), (0, 5), (5, 0, 3), (3, 0)])
@pytest.mark.parametrize("op, dtype, want", [("sum", "<i4", np.int64), ("max", "<f4", np.float32),
                                             ("bitwise_xor", "<u1", np.uint8), ("prod", "<f2", np.float16)])
def test_zero_elements_write_header_only(tmp_path, shape, op, dtype, want):
    inp = _empty_header_file(tmp_path / "z.npy", shape, dtype)
    out = str(tmp_path / "z.out.npy")
    rep = pipeline.run(pipeline.Job(input=inp, output=out, op=op, verify=True), None)
    h = dio.read_header(out)
    assert h.shape == shape and h.dtype == want
    assert os.path.getsize(out) == h.offset
    assert rep["elements"] == 0 and rep["verify"]["passed"]
    if shape[0] < 2**20:
        assert np.load(out).shape == shape
    assert _temps(tmp_path) == []


# -- 7: inputs that are not regular files ----------------------------------------------------------

def test_fifo_input_is_refused_at_once(tmp_path):
    fifo = tmp_path / "input.npy"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match=r"input.npy is a FIFO.*not a regular file"):
        dio.read_header(str(fifo))


def test_char_device_and_directory_inputs(tmp_path):
    with pytest.raises(ValueError, match="character device, not a regular file"):
        dio.read_header("/dev/zero")
    with pytest.raises(IsADirectoryError, match="directory"):
        dio.read_header(str(tmp_path))


def test_fifo_input_through_the_command_fails_in_one_line(tmp_path):
    """The whole command, one process: no hang, one line."""
    fifo = tmp_path / "input.npy"
    os.mkfifo(fifo)
    proc = subprocess.run([sys.executable, "-m", "distscan", str(fifo)], capture_output=True, text=True,
                          timeout=30, env=_env())
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()]
    assert "distscan: error:" in proc.stderr and "FIFO" in proc.stderr


def _env(**extra):
    env = dict(os.environ)
    repo = str(REPO)
    env["PYTHONPATH"] = os.pathsep.join([repo] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.update(extra)
    return env


# -- 8: --force replaces regular files only --------------------------------------------------------

def _good(tmp_path):
    p = tmp_path / "in.npy"
    np.save(p, np.arange(10))
    return str(p)


@pytest.mark.parametrize("kind", ["fifo", "fifo_link", "directory", "socket", "chardev"])
def test_force_refuses_non_regular_outputs(tmp_path, kind):
    inp = _good(tmp_path)
    out = tmp_path / "out.npy"
    if kind == "fifo":
        os.mkfifo(out)
    elif kind == "fifo_link":
        os.mkfifo(tmp_path / "f")
        os.symlink(tmp_path / "f", out)
    elif kind == "directory":
        out.mkdir()
    elif kind == "socket":
        import socket
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(out))
    else:
        if not IS_ROOT:
            pytest.skip("mknod of a character device needs root")
        os.mknod(out, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # a private /dev/null
    mode = os.lstat(out).st_mode
    with pytest.raises((FileExistsError, IsADirectoryError), match="regular file|directory"):
        pipeline.run(pipeline.Job(input=inp, output=str(out), force=True), None)
    assert os.lstat(out).st_mode == mode
    assert _temps(tmp_path) == []


def test_force_replaces_regular_file_and_link_to_one(tmp_path):
    inp = _good(tmp_path)
    (tmp_path / "target.npy").write_bytes(b"old")
    os.symlink(tmp_path / "target.npy", tmp_path / "link.npy")
    for out in ("plain.npy", "link.npy"):
        (tmp_path / "plain.npy").write_bytes(b"old")
        pipeline.run(pipeline.Job(input=inp, output=str(tmp_path / out), force=True), None)
        np.testing.assert_array_equal(np.load(tmp_path / out), np.cumsum(np.arange(10)))


# -- 16: malformed headers and .npz archives --------------------------------------------------------

def _raw_header_file(path, text):
    text = text.encode("latin1")
    text += b" " * (-(len(text) + 13) % 64) + b"\n"
    with open(path, "wb") as f:
        f.write(dio.MAGIC + b"\x02\x00" + len(text).to_bytes(4, "little") + text)
    return str(path)


@pytest.mark.parametrize("shape_text", ["(" * 200_000 + "1," + ")" * 200_000,
                                        "(" + "-" * 200_000 + "1,)",
                                        "(" + "+" * 200_000 + "1,)"])
def test_deeply_nested_header_is_a_clear_error(tmp_path, shape_text):
    p = _raw_header_file(tmp_path / "deep.npy", "{'descr': '<i8', 'fortran_order': False, 'shape': "
                         + shape_text + ", }")
    with pytest.raises(ValueError, match="malformed .npy header") as info:
        dio.read_header(p)
    assert len(str(info.value)) < 300


def test_npz_says_how_to_extract(tmp_path):
    p = tmp_path / "x.npz"
    np.savez(p, first=np.arange(3), second=np.ones(2))
    with pytest.raises(ValueError, match=r"x.npz is an .npz archive \(arrays: first, second\)") as info:
        dio.read_header(str(p))
    assert "np.save('first.npy', np.load(" in str(info.value) and "['first']" in str(info.value)


# -- 9: temporary names, locks, stale temporaries -------------------------------------------------

def test_temp_name_is_short_visible_and_in_the_folder(tmp_path):
    name = "n" * 246 + ".npy"  # 250 bytes: a valid name; a longer temporary name would not be
    out = str(tmp_path / name)
    inp = _good(tmp_path)
    with dio.NpyWriter(out, (10,), np.int64) as w:
        base = os.path.basename(w.temp_path)
        assert len(base.encode()) < 100 and not base.startswith(".")
        assert os.path.dirname(w.temp_path) == str(tmp_path)
        w.write_rows(0, np.arange(10))
    np.testing.assert_array_equal(np.load(out), np.arange(10))
    pipeline.run(pipeline.Job(input=inp, output=out, force=True), None)
    assert _temps(tmp_path) == []


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


def test_keyboard_interrupt_inside_the_writer_removes_the_temp(tmp_path):
    out = str(tmp_path / "o.npy")
    with pytest.raises(KeyboardInterrupt):
        with dio.NpyWriter(out, (10,), np.int64) as w:
            w.write_rows(0, np.arange(5))
            raise KeyboardInterrupt
    assert _temps(tmp_path) == [] and not os.path.exists(out)


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


def test_a_signal_recorded_before_the_commit_fails_the_run_and_removes_the_temp(tmp_path):
    """A rank signalled before it knew the temporary file marks the run (distscan.cli): the
    writer's agreement then fails, nothing is published and the temporary file goes."""
    out = str(tmp_path / "o.npy")
    dio.forget_temps()
    try:
        with pytest.raises(dio.Interrupted, match="interrupted by SIGTERM"):
            with dio.NpyWriter(out, (4,), np.int64) as w:
                w.write_rows(0, np.arange(4))
                dio.mark_interrupted("SIGTERM")
        assert not os.path.exists(out)
        assert os.listdir(tmp_path) == []
    finally:
        dio.forget_temps()
