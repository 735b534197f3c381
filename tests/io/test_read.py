"""Reading a ``.npy`` in parallel (distscan.io.read): the input opened without a communicator, the block
split of rows over ranks, slices read in chunks (truncated files and rows out of range told), and
whether two paths name the same file."""

import numpy as np
import pytest

from distscan import io as dio

from tests.support.files import save_npy

pytestmark = pytest.mark.timeout(60)


def test_open_input_without_comm_is_read_header(tmp_path):
    p = save_npy(tmp_path / "a.npy", np.arange(5))
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
    h = dio.read_header(save_npy(tmp_path / "a.npy", a))
    for size in (1, 3, 8):
        for rank in range(size):
            start, stop = dio.block_split(h.rows, size, rank)
            got = dio.read_rows(h, start, stop)
            assert got.dtype.isnative and got.dtype == np.dtype(dtype).newbyteorder("=")
            np.testing.assert_array_equal(got, a[start:stop])


def test_read_rows_chunked_and_progress(tmp_path):
    a = np.arange(10_000, dtype=np.int64)
    h = dio.read_header(save_npy(tmp_path / "a.npy", a))
    seen = []
    got = dio.read_rows(h, 123, 9_876, progress=seen.append, chunk_bytes=4096 + 8)
    np.testing.assert_array_equal(got, a[123:9_876])
    assert sum(seen) == got.nbytes and len(seen) > 10


def test_read_rows_truncated_and_out_of_range(tmp_path):
    p = save_npy(tmp_path / "a.npy", np.arange(100, dtype=np.int64))
    h = dio.read_header(p)
    with open(p, "r+b") as f:
        f.truncate(h.offset + 50 * 8)
    with pytest.raises(ValueError, match="truncated"):
        dio.read_rows(h, 40, 60)
    np.testing.assert_array_equal(dio.read_rows(h, 0, 50), np.arange(50))
    with pytest.raises(ValueError, match="out of range"):
        dio.read_rows(h, 90, 101)


def test_same_file(tmp_path):
    a = tmp_path / "a.npy"
    a.write_bytes(b"x")
    assert dio.same_file(str(a), str(tmp_path / "." / "a.npy"))
    assert not dio.same_file(str(a), str(tmp_path / "b.npy"))
