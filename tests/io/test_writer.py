"""Serial tests of distscan.io: header parsing, block_split, slice reads, the atomic writer."""

import glob
import os

import numpy as np
import pytest

from distscan import io as dio

pytestmark = pytest.mark.timeout(60)

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def _save(path, a, **kw):
    np.save(path, a, **kw)
    return str(path)


def _leftovers(folder):
    return sorted(glob.glob(os.path.join(str(folder), ".*.part")) + glob.glob(os.path.join(str(folder), "*.part")))


# -- header ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["bool", "int8", "<i4", ">i4", "uint64", "float16", ">f8", "complex64"])
@pytest.mark.parametrize("shape", [(0,), (1,), (7,), (5, 3), (4, 0), (3, 2, 2)])
def test_read_header_matches_numpy(tmp_path, dtype, shape):
    a = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape).astype(dtype)
    p = _save(tmp_path / "a.npy", a)
    h = dio.read_header(p)
    assert h.shape == shape and h.dtype == np.dtype(dtype)
    assert h.offset % 64 == 0
    assert h.nbytes == a.nbytes
    with open(p, "rb") as f:
        f.seek(h.offset)
        np.testing.assert_array_equal(np.frombuffer(f.read(), dtype=dtype).reshape(shape), a)


def test_read_header_versions_2_and_3(tmp_path):
    a = np.arange(10, dtype=np.int32)
    for version in [(2, 0), (3, 0)]:
        p = str(tmp_path / f"v{version[0]}.npy")
        with open(p, "wb") as f:
            np.lib.format.write_array(f, a, version=version)
        h = dio.read_header(p)
        assert h.version == version and h.shape == (10,) and h.dtype == np.int32


def test_fortran_order_1d_is_accepted(tmp_path):
    """A 1-D array has the same bytes in both orders; numpy writes fortran_order True for (n,1) F arrays."""
    a = np.asfortranarray(np.arange(6).reshape(6, 1))
    p = _save(tmp_path / "f.npy", a)
    h = dio.read_header(p)
    np.testing.assert_array_equal(dio.read_rows(h, 0, 6), a)


@pytest.mark.parametrize("case, exc, words", [
    ("missing", FileNotFoundError, "not found"),
    ("directory", IsADirectoryError, "directory"),
    ("text", ValueError, "magic"),
    ("empty", ValueError, "too short"),
    ("header_cut", ValueError, "header is truncated"),
    ("data_cut", ValueError, "truncated"),
    ("object", ValueError, "pickled"),
    ("fortran", ValueError, "Fortran"),
    ("scalar", ValueError, "0-d"),
    ("structured", ValueError, "structured"),
    ("bad_version", ValueError, "version"),
    ("bad_dict", ValueError, "header"),
])
def test_read_header_errors(tmp_path, case, exc, words):
    p = str(tmp_path / "bad.npy")
    good = tmp_path / "good.npy"
    np.save(good, np.arange(100))
    raw = good.read_bytes()
    if case == "directory":
        os.mkdir(p)
    elif case == "text":
        open(p, "w").write("hello, I am text\n")
    elif case == "empty":
        open(p, "wb").close()
    elif case == "header_cut":
        open(p, "wb").write(raw[:30])
    elif case == "data_cut":
        open(p, "wb").write(raw[:-8])
    elif case == "object":
        np.save(p, np.array([1, "x", None], dtype=object), allow_pickle=True)
    elif case == "fortran":
        np.save(p, np.asfortranarray(np.arange(12).reshape(3, 4)))
    elif case == "scalar":
        np.save(p, np.array(3.0))
    elif case == "structured":
        np.save(p, np.zeros(3, dtype=[("a", "i4"), ("b", "f8")]))
    elif case == "bad_version":
        open(p, "wb").write(raw[:6] + b"\x09\x00" + raw[8:])
    elif case == "bad_dict":
        header = b"{'descr': '<i8', 'shape': (3,)}"
        header += b" " * (64 - 10 - len(header) - 1) + b"\n"
        open(p, "wb").write(dio.MAGIC + b"\x01\x00" + len(header).to_bytes(2, "little") + header + bytes(24))
    with pytest.raises(exc, match=words):
        dio.read_header(p)


def test_open_input_without_comm_is_read_header(tmp_path):
    p = _save(tmp_path / "a.npy", np.arange(5))
    assert dio.open_input(p) == dio.read_header(p)


# -- block_split ---------------------------------------------------------------------------------

@pytest.mark.parametrize("size", [1, 2, 3, 4, 7, 8, 64])
def test_block_split_properties(size):
    for n in list(range(0, 130)) + [10_000_019, 2**33 + 5]:
        parts = [dio.block_split(n, size, r) for r in range(size)]
        assert parts[0][0] == 0 and parts[-1][1] == n
        for (a, b), (c, _) in zip(parts, parts[1:]):
            assert b == c  # contiguous, in rank order
        counts = [b - a for a, b in parts]
        assert min(counts) >= 0 and max(counts) - min(counts) <= 1
        assert counts == sorted(counts, reverse=True)  # the first n % size ranks get the extra row


def test_block_split_rejects_bad_arguments():
    for args in [(-1, 2, 0), (5, 0, 0), (5, 2, 2), (5, 2, -1)]:
        with pytest.raises(ValueError):
            dio.block_split(*args)


# -- read_rows ------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["int32", ">i8", "float32", ">c16", "bool"])
def test_read_rows_slices(tmp_path, dtype):
    a = (np.arange(1001 * 3) % 97).reshape(1001, 3).astype(dtype)
    h = dio.read_header(_save(tmp_path / "a.npy", a))
    for size in (1, 3, 8):
        for rank in range(size):
            start, stop = dio.block_split(h.rows, size, rank)
            got = dio.read_rows(h, start, stop)
            assert got.dtype.isnative and got.dtype == np.dtype(dtype).newbyteorder("=")
            np.testing.assert_array_equal(got, a[start:stop])


def test_read_rows_chunked_and_progress(tmp_path):
    a = np.arange(10_000, dtype=np.int64)
    h = dio.read_header(_save(tmp_path / "a.npy", a))
    seen = []
    got = dio.read_rows(h, 123, 9_876, progress=seen.append, chunk_bytes=4096 + 8)
    np.testing.assert_array_equal(got, a[123:9_876])
    assert sum(seen) == got.nbytes and len(seen) > 10


def test_read_rows_truncated_and_out_of_range(tmp_path):
    p = _save(tmp_path / "a.npy", np.arange(100, dtype=np.int64))
    h = dio.read_header(p)
    with open(p, "r+b") as f:
        f.truncate(h.offset + 50 * 8)
    with pytest.raises(ValueError, match="truncated"):
        dio.read_rows(h, 40, 60)
    np.testing.assert_array_equal(dio.read_rows(h, 0, 50), np.arange(50))
    with pytest.raises(ValueError, match="out of range"):
        dio.read_rows(h, 90, 101)


# -- header_bytes and the writer -----------------------------------------------------------------

@pytest.mark.parametrize("shape, dtype", [((0,), "i8"), ((10,), "f4"), ((3, 4), "c8"), ((2**40, 3), "u2")])
def test_header_bytes_is_numpys(shape, dtype):
    h = dio.header_bytes(shape, dtype)
    assert len(h) % 64 == 0
    import io
    buf = io.BytesIO(h)
    assert np.lib.format.read_magic(buf) == (1, 0)
    got_shape, fortran, got_dtype = np.lib.format.read_array_header_1_0(buf)
    assert got_shape == shape and not fortran and got_dtype == np.dtype(dtype)


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
    assert _leftovers(tmp_path) == []


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
    assert not os.path.exists(out) and _leftovers(tmp_path) == []


def test_writer_failure_after_close_removes_temp(tmp_path, comm):
    out = str(tmp_path / "o.npy")
    with pytest.raises(ValueError, match="late"):
        with dio.NpyWriter(out, (3,), np.int64, comm=comm) as w:
            w.write_rows(0, np.arange(3, dtype=np.int64))
            w.close()
            raise ValueError("late")
    assert not os.path.exists(out) and _leftovers(tmp_path) == []


def test_writer_checks_rows(tmp_path, comm):
    out = str(tmp_path / "o.npy")
    with pytest.raises(ValueError, match="write_rows"):
        with dio.NpyWriter(out, (10,), np.int64, comm=comm) as w:
            w.write_rows(0, np.arange(5, dtype=np.int32))  # wrong dtype
    with pytest.raises(ValueError, match="outside"):
        with dio.NpyWriter(out, (10,), np.int64, comm=comm) as w:
            w.write_rows(8, np.arange(5, dtype=np.int64))  # past the end
    assert not os.path.exists(out) and _leftovers(tmp_path) == []


def test_writer_existing_output_and_force(tmp_path, comm):
    out = tmp_path / "o.npy"
    out.write_bytes(b"precious")
    with pytest.raises(FileExistsError, match="--force"):
        with dio.NpyWriter(str(out), (2,), np.int8, comm=comm):
            pytest.fail("the block must not run")
    assert out.read_bytes() == b"precious" and _leftovers(tmp_path) == []
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


def test_same_file(tmp_path):
    a = tmp_path / "a.npy"
    a.write_bytes(b"x")
    assert dio.same_file(str(a), str(tmp_path / "." / "a.npy"))
    assert not dio.same_file(str(a), str(tmp_path / "b.npy"))
