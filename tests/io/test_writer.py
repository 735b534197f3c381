"""The ``.npy`` writer (distscan.io.NpyWriter), through POSIX and MPI-IO: valid files written in pieces,
published by a rename only when complete and checked, nothing published and no temporary file left
after a failure (an exception, a KeyboardInterrupt, a signal recorded before the commit), existing
outputs, ``--force`` replacing regular files only, protected inputs, bad destinations, read-only
folders, and short visible temporary names."""

import os
import stat

import numpy as np
import pytest

from distscan import io as dio
from distscan import pipeline

from tests.support.files import IS_ROOT, leftover_temps

pytestmark = pytest.mark.timeout(60)


def _comms():
    comms = [None]
    try:
        from mpi4py import MPI
        comms.append(MPI.COMM_SELF)
    except ImportError:  # pragma: no cover
        pass
    return comms


@pytest.fixture(params=_comms(), ids=lambda c: "posix" if c is None else "mpiio")
def comm(request):
    return request.param


def test_writer_writes_valid_npy_in_pieces(tmp_path, comm):
    a = np.arange(5000 * 2, dtype=np.int64).reshape(5000, 2)
    out = str(tmp_path / "o.npy")
    with dio.NpyWriter(out, a.shape, a.dtype, comm=comm, chunk_bytes=1000) as w:
        assert os.path.exists(w.temp_path) and not os.path.exists(out)
        assert os.path.dirname(w.temp_path) == str(tmp_path)
        for start, stop in [dio.block_split(5000, 3, r) for r in (2, 0, 1)]:  # any order
            w.write_rows(start, a[start:stop])
    np.testing.assert_array_equal(np.load(out), a)
    assert leftover_temps(tmp_path) == []


def test_writer_empty_array(tmp_path, comm):
    out = str(tmp_path / "e.npy")
    with dio.NpyWriter(out, (0, 3), np.float32, comm=comm):
        pass
    b = np.load(out)
    assert b.shape == (0, 3) and b.dtype == np.float32


def test_writer_close_then_verify_then_commit(tmp_path, comm):
    a = np.arange(100, dtype=np.int16)
    out = str(tmp_path / "o.npy")
    with dio.NpyWriter(out, a.shape, a.dtype, comm=comm) as w:
        w.write_rows(0, a)
        w.close()
        np.testing.assert_array_equal(np.load(w.temp_path), a)  # complete before it is published
        assert not os.path.exists(out)
    np.testing.assert_array_equal(np.load(out), a)


def test_writer_failure_removes_temp_and_publishes_nothing(tmp_path, comm):
    out = str(tmp_path / "o.npy")
    with pytest.raises(RuntimeError, match="boom"):
        with dio.NpyWriter(out, (10,), np.int64, comm=comm) as w:
            w.write_rows(0, np.arange(5, dtype=np.int64))
            raise RuntimeError("boom")
    assert not os.path.exists(out) and leftover_temps(tmp_path) == []


def test_writer_failure_after_close_removes_temp(tmp_path, comm):
    out = str(tmp_path / "o.npy")
    with pytest.raises(ValueError, match="late"):
        with dio.NpyWriter(out, (3,), np.int64, comm=comm) as w:
            w.write_rows(0, np.arange(3, dtype=np.int64))
            w.close()
            raise ValueError("late")
    assert not os.path.exists(out) and leftover_temps(tmp_path) == []


def test_writer_checks_rows(tmp_path, comm):
    out = str(tmp_path / "o.npy")
    with pytest.raises(ValueError, match="write_rows"):
        with dio.NpyWriter(out, (10,), np.int64, comm=comm) as w:
            w.write_rows(0, np.arange(5, dtype=np.int32))  # wrong dtype
    with pytest.raises(ValueError, match="outside"):
        with dio.NpyWriter(out, (10,), np.int64, comm=comm) as w:
            w.write_rows(8, np.arange(5, dtype=np.int64))  # past the end
    assert not os.path.exists(out) and leftover_temps(tmp_path) == []


def test_writer_existing_output_and_force(tmp_path, comm):
    out = tmp_path / "o.npy"
    out.write_bytes(b"precious")
    with pytest.raises(FileExistsError, match="--force"):
        with dio.NpyWriter(str(out), (2,), np.int8, comm=comm):
            pytest.fail("the block must not run")
    assert out.read_bytes() == b"precious" and leftover_temps(tmp_path) == []
    with dio.NpyWriter(str(out), (2,), np.int8, comm=comm, force=True) as w:
        w.write_rows(0, np.array([1, 2], np.int8))
    np.testing.assert_array_equal(np.load(out), [1, 2])


def test_writer_refuses_to_overwrite_protected_input(tmp_path, comm):
    inp = tmp_path / "in.npy"
    np.save(inp, np.arange(3))
    link = tmp_path / "link.npy"
    os.symlink(inp, link)
    for target in (str(inp), str(link), str(tmp_path / "." / "in.npy")):
        with pytest.raises(ValueError, match="is the input"):
            with dio.NpyWriter(target, (3,), np.int64, comm=comm, force=True, protect=[str(inp)]):
                pass
    np.testing.assert_array_equal(np.load(inp), np.arange(3))


@pytest.mark.parametrize("case, exc", [("no_folder", FileNotFoundError), ("file_as_folder", NotADirectoryError),
                                       ("directory", IsADirectoryError)])
def test_writer_bad_destinations(tmp_path, comm, case, exc):
    if case == "no_folder":
        out = tmp_path / "missing" / "o.npy"
    elif case == "file_as_folder":
        (tmp_path / "plain").write_text("x")
        out = tmp_path / "plain" / "o.npy"
    else:
        (tmp_path / "d.npy").mkdir()
        out = tmp_path / "d.npy"
    with pytest.raises(exc):
        with dio.NpyWriter(str(out), (1,), np.int8, comm=comm, force=True):
            pass


@pytest.mark.skipif(IS_ROOT, reason="root may write into a read-only folder")
def test_writer_read_only_folder(tmp_path, comm):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        with pytest.raises(PermissionError, match="permission denied"):
            with dio.NpyWriter(str(ro / "o.npy"), (1,), np.int8, comm=comm):
                pass
    finally:
        ro.chmod(0o700)


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
    assert leftover_temps(tmp_path) == []


def test_force_replaces_regular_file_and_link_to_one(tmp_path):
    inp = _good(tmp_path)
    (tmp_path / "target.npy").write_bytes(b"old")
    os.symlink(tmp_path / "target.npy", tmp_path / "link.npy")
    for out in ("plain.npy", "link.npy"):
        (tmp_path / "plain.npy").write_bytes(b"old")
        pipeline.run(pipeline.Job(input=inp, output=str(tmp_path / out), force=True), None)
        np.testing.assert_array_equal(np.load(tmp_path / out), np.cumsum(np.arange(10)))


@pytest.mark.parametrize("via", ["/proc/self/fd/1", "/dev/fd/1", "/dev/stdout", "chain"])
def test_a_link_to_a_descriptor_is_refused_even_with_force(tmp_path, via):
    """``-o`` a link to this process's stdout (what /dev/stdout is): the rename replaced the link
    itself (as root with ``-o /dev/stdout --force``, the system's /dev/stdout became a regular .npy
    file; 2026-11-28).  Under pytest fd 1 is a regular file, the case that was let through."""
    if not os.path.exists(via if via != "chain" else "/proc/self/fd/1"):
        pytest.skip(f"{via}: not on this system")
    inp = _good(tmp_path)
    out = tmp_path / "out.npy"
    if via == "chain":  # a link to a link to the descriptor
        os.symlink("/dev/stdout", tmp_path / "hop")
        os.symlink(tmp_path / "hop", out)
    else:
        os.symlink(via, out)
    with pytest.raises(FileExistsError, match="link to a process's file descriptor"):
        pipeline.run(pipeline.Job(input=inp, output=str(out), force=True), None)
    assert os.path.islink(out) and os.readlink(out) == (via if via != "chain" else str(tmp_path / "hop"))
    assert leftover_temps(tmp_path) == []


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
    assert leftover_temps(tmp_path) == []


def test_keyboard_interrupt_inside_the_writer_removes_the_temp(tmp_path):
    out = str(tmp_path / "o.npy")
    with pytest.raises(KeyboardInterrupt):
        with dio.NpyWriter(out, (10,), np.int64) as w:
            w.write_rows(0, np.arange(5))
            raise KeyboardInterrupt
    assert leftover_temps(tmp_path) == [] and not os.path.exists(out)


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



# Every rank writes its block of rows through MPI-IO; the last rank's writes go past its file size
# limit (RLIMIT_FSIZE: the header fits), which fails as a full disk would, every time.
_MPIIO_PAST_THE_FILE_SIZE_LIMIT = """
import resource, signal, sys
import numpy as np
from mpi4py import MPI
from distscan import io as dio

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
try:
    with dio.NpyWriter(sys.argv[1], (100000,), np.int64, comm=comm, method="mpiio") as w:
        start, stop = dio.block_split(100000, size, rank)
        if rank == size - 1:
            resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.RLIM_INFINITY))
        try:
            w.write_rows(start, np.arange(start, stop))
        except OSError:
            pass  # raised on every rank as the block ends
        finally:
            resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
except Exception as exc:
    with open(f"{sys.argv[2]}/{rank}.txt", "w") as f:
        f.write(f"{type(exc).__name__}: {exc!s}")
"""


@pytest.mark.skipif(bool(os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK")),
                    reason="starts its own processes (and mpiexec); run it from a serial pytest")
@pytest.mark.parametrize("ranks", [1, 2])
def test_an_mpiio_write_error_is_one_line_that_names_the_file(tmp_path, ranks):
    """MPI-IO's write errors were MPI exceptions (MPICH: an error stack of several lines naming a
    file handle, not the file); now an OSError of one line naming the file, on every rank."""
    import subprocess
    import sys

    pytest.importorskip("mpi4py")
    from tests.support.launch import mpi_command, python_env

    (tmp_path / "out").mkdir()
    (tmp_path / "said").mkdir()
    out = tmp_path / "out" / "o.npy"
    cmd = [sys.executable, "-c", _MPIIO_PAST_THE_FILE_SIZE_LIMIT, str(out), str(tmp_path / "said")]
    proc = subprocess.run(mpi_command(ranks, cmd) if ranks > 1 else cmd, capture_output=True, text=True,
                          env=python_env(), timeout=120)
    assert proc.returncode == 0, proc.stderr
    said = [(tmp_path / "said" / f"{r}.txt").read_text() for r in range(ranks)]
    where = f"rank {ranks - 1}: " if ranks > 1 else ""  # the failing rank, named on every rank
    # (MPICH's words: "Other I/O error File too large"; another MPI's may differ)
    assert all(s.startswith(f"OSError: {where}cannot write {out}: ") and "\n" not in s for s in said), said
    assert os.listdir(tmp_path / "out") == []  # nothing published, no temporary file
