"""The ``.npy`` format (distscan.io.npy): headers read as NumPy reads them (versions 1.0, 2.0 and 3.0, a
1-D Fortran-ordered array), every malformed header, deeply nested ones and ``.npz`` archives told
clearly, inputs that are not regular files refused at once, and headers built as NumPy builds them."""

import os

import numpy as np
import pytest

from distscan import io as dio

from tests.support.files import save_npy

pytestmark = pytest.mark.timeout(60)


# -- header ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["bool", "int8", "<i4", ">i4", "uint64", "float16", ">f8", "complex64"])
@pytest.mark.parametrize("shape", [(0,), (1,), (7,), (5, 3), (4, 0), (3, 2, 2)])
def test_read_header_matches_numpy(tmp_path, dtype, shape):
    a = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape).astype(dtype)
    p = save_npy(tmp_path / "a.npy", a)
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
    p = save_npy(tmp_path / "f.npy", a)
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


@pytest.mark.parametrize("shape_text", ["(True,)", "(False,)", "(3, True)", "(1.0,)", "('3',)"])
def test_a_shape_that_is_not_integers_is_refused(tmp_path, shape_text):
    """numpy's header parser takes bools as ints (bool is an int): (True,) was read as (1,), where
    np.load refuses it."""
    p = _raw_header_file(tmp_path / "bools.npy", "{'descr': '<i8', 'fortran_order': False, 'shape': "
                         + shape_text + ", }")
    with open(p, "ab") as f:
        f.write(bytes(24))
    with pytest.raises(ValueError, match=r"bools.npy is not a valid .npy file: bad shape"):
        dio.read_header(p)
    np.save(tmp_path / "ints.npy", np.zeros((3, 1)))
    assert dio.read_header(str(tmp_path / "ints.npy")).shape == (3, 1)


def test_npz_says_how_to_extract(tmp_path):
    p = tmp_path / "x.npz"
    np.savez(p, first=np.arange(3), second=np.ones(2))
    with pytest.raises(ValueError, match=r"x.npz is an .npz archive \(arrays: first, second\)") as info:
        dio.read_header(str(p))
    assert "np.save('first.npy', np.load(" in str(info.value) and "['first']" in str(info.value)
