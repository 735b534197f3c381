"""Adversarial inputs of the ``distscan`` command: every ``.npy`` header variant that NumPy reads
(format 1.0, 2.0 and 3.0, big-endian, Fortran order of a 1-D or one-column array, an unpadded header,
bytes after the data, bool, float16, complex, unsigned, 2-D and 3-D, empty shapes) gives NumPy's
bytes, and every file it must refuse (structured, subarray, datetime, strings, 2-D Fortran, an
unknown version, an empty file, a header with an extra key or a float shape, a huge shape with no
data, flags of the wrong kind) ends with one line, exit 1 on every rank, and no file left or changed.

Tiny chunks (``CHUNK_BYTES`` patched to 24 bytes) cut every part into many chunks, so chunk and
rank boundaries fall everywhere; at 3 ranks short arrays leave ranks with no rows.  One rank runs
in this process; 2 and 3 ranks run in one mpiexec job each (a batch of this module's own).
"""

import io
import os
import struct

import numpy as np
import pytest
from numpy.lib import format as npformat

from distscan.pipeline import chunks

from tests.support.command import assert_one_error_line, cli_in_process
from tests.support.files import leftover_temps
from tests.support.launch import CliBatches, files_and_sizes

pytestmark = [
    pytest.mark.timeout(180),
    pytest.mark.skipif(bool(os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK")),
                       reason="launches mpiexec itself; run it from a serial pytest"),
]

TINY_CHUNKS = "import distscan.pipeline.chunks as c\npatch(c, 'CHUNK_BYTES', 24)\n"


def _write(path, a, version=(1, 0), fortran=False):
    with open(path, "wb") as f:
        npformat.write_array(f, np.asfortranarray(a) if fortran else np.ascontiguousarray(a), version=version,
                             allow_pickle=False)


def _raw(path, header: bytes, data: bytes = b"", version=1):
    """A hand-made ``.npy``: magic, version, the header's length, ``header`` as given (no padding), data."""
    size = struct.pack("<H", len(header)) if version == 1 else struct.pack("<I", len(header))
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY" + bytes([version, 0]) + size + header + data)


_X = np.array([5, -3, 7, 0, 127, -128, 1, 2, 99, -1, 3, 4, 60, -60, 8, 9, 10], dtype=np.int64)  # 17 rows


def _ints(dtype):
    return _X.astype(np.dtype(dtype).newbyteorder("=")).astype(dtype) if np.dtype(dtype).kind != "u" \
        else np.abs(_X).astype(dtype)


# name -> (make(path), extra args).  The reference is NumPy's scan of np.load(path).
GOOD = {
    "v1": (lambda p: _write(p, _ints("int64"), (1, 0)), []),
    "v2": (lambda p: _write(p, _ints("int32"), (2, 0)), []),
    "v3": (lambda p: _write(p, _ints("int16"), (3, 0)), []),
    "big_endian_i4": (lambda p: _write(p, _ints(">i4")), []),
    "big_endian_u8_max": (lambda p: _write(p, _ints(">u8")), ["--op", "max"]),
    "big_endian_f8": (lambda p: _write(p, _ints(">f8")), []),
    "big_endian_c16": (lambda p: _write(p, (_X + 1j * _X[::-1]).astype(">c16")), []),
    "fortran_1d": (lambda p: _write(p, _ints("int64"), fortran=True), []),
    "fortran_one_column": (lambda p: _write(p, _ints("int64").reshape(-1, 1), fortran=True), []),
    "fortran_one_row": (lambda p: _write(p, _ints("int64").reshape(1, -1), fortran=True), []),
    "bool_sum": (lambda p: _write(p, _X > 2), []),
    "bool_max_exclusive": (lambda p: _write(p, _X > 2), ["--op", "max", "--exclusive"]),
    "float16_exact": (lambda p: _write(p, (_X % 5).astype(np.float16)), []),
    "complex64_exact": (lambda p: _write(p, (_X + 2j).astype(np.complex64)), []),
    "uint8_wraps": (lambda p: _write(p, _ints("uint8")), ["--dtype", "uint8"]),
    "int8_prod_wraps": (lambda p: _write(p, (_X % 7 - 3).astype(np.int8)), ["--op", "prod", "--dtype", "int8"]),
    "uint64_xor": (lambda p: _write(p, _ints("uint64") * np.uint64(2**57)), ["--op", "bitwise_xor"]),
    "two_d": (lambda p: _write(p, np.arange(51, dtype=np.int32).reshape(17, 3) - 20), []),
    "three_d_reverse": (lambda p: _write(p, np.arange(68, dtype=np.int16).reshape(17, 2, 2)), ["--reverse"]),
    "one_row": (lambda p: _write(p, _ints("int64")[:1].reshape(1, 1)), []),
    "two_rows_three_ranks": (lambda p: _write(p, _ints("int32")[:2]), ["--exclusive"]),
    "empty": (lambda p: _write(p, np.zeros(0, np.int32)), []),
    "empty_columns": (lambda p: _write(p, np.zeros((5, 0), np.int32)), []),
    "empty_rows_2d": (lambda p: _write(p, np.zeros((0, 4), np.uint8)), []),
    "unpadded_header": (lambda p: _raw(p, b"{'descr': '<i8', 'fortran_order': False, 'shape': (17,), }\n",
                                       _ints("int64").tobytes()), []),
    "bytes_after_data": (lambda p: (_write(p, _ints("int64")), open(p, "ab").write(b"\xff" * 13)), []),
    "streamed": (lambda p: _write(p, _ints("int64")), ["--memory-limit", "1"]),
    "streamed_reverse_exclusive_min": (lambda p: _write(p, _ints(">i2")),
                                       ["--memory-limit", "1", "--reverse", "--exclusive", "--op", "min"]),
}

_UFUNC = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum, "bitwise_xor": np.bitwise_xor}


def _reference(path, args):
    a = np.load(path)
    a = a.astype(a.dtype.newbyteorder("="))
    op = args[args.index("--op") + 1] if "--op" in args else "sum"
    dtype = args[args.index("--dtype") + 1] if "--dtype" in args else None
    ufunc = _UFUNC[op]
    if dtype is None and op in ("sum", "prod"):
        dtype = np.cumsum(np.zeros(1, a.dtype)).dtype  # NumPy's: int32 -> int64, bool -> int64
    dtype = np.dtype(dtype or a.dtype)
    src = a[::-1] if "--reverse" in args else a
    with np.errstate(all="ignore"):
        r = ufunc.accumulate(src.astype(dtype), axis=0, dtype=dtype) if len(src) else src.astype(dtype)
    if "--exclusive" in args and len(r):
        ident = {"sum": 0, "prod": 1, "bitwise_xor": 0}.get(op)
        if ident is None:
            ident = (np.iinfo(dtype).min if op == "max" else np.iinfo(dtype).max) if dtype.kind in "iu" \
                else (op == "min")
        r = np.concatenate([np.full((1,) + r.shape[1:], ident, dtype), r[:-1]])
    return r[::-1] if "--reverse" in args else r


BAD = {
    "structured": (lambda p: _write(p, np.zeros(17, [("a", "<i4"), ("b", "<f8")])), [], ["structured"]),
    "subarray_dtype": (lambda p: _raw(p, b"{'descr': ('<i8', (2,)), 'fortran_order': False, 'shape': (17,)}\n",
                                      b"\0" * 272), [], ["dtype"]),
    "datetime": (lambda p: _write(p, _X.astype("M8[s]")), [], ["datetime64", "not supported"]),
    "timedelta": (lambda p: _write(p, _X.astype("m8[s]")), [], ["timedelta64", "not supported"]),
    "unicode": (lambda p: _write(p, _X.astype("U3")), [], ["not supported"]),
    "bytes": (lambda p: _write(p, _X.astype("S3")), [], ["not supported"]),
    "fortran_2d": (lambda p: _write(p, np.arange(20).reshape(4, 5), fortran=True), [], ["fortran"]),
    "version_9": (lambda p: _raw(p, b"{'descr': '<i8', 'fortran_order': False, 'shape': (1,), }\n",
                                 b"\0" * 8, version=9), [], ["unsupported format version 9.0"]),
    "empty_file": (lambda p: open(p, "wb").close(), [], ["not a valid .npy"]),
    "magic_only": (lambda p: open(p, "wb").write(b"\x93NUMPY"), [], ["not a valid .npy"]),
    "extra_key": (lambda p: _raw(p, b"{'descr': '<i8', 'fortran_order': False, 'shape': (1,), 'x': 1}\n",
                                 b"\0" * 8), [], ["not a valid .npy"]),
    "float_shape": (lambda p: _raw(p, b"{'descr': '<i8', 'fortran_order': False, 'shape': (1.0,)}\n",
                                   b"\0" * 8), [], ["bad shape"]),
    "huge_rows_no_data": (lambda p: _raw(p, b"{'descr': '<i8', 'fortran_order': False, 'shape': (4611686018427387904, 4)}\n",
                                         b"\0" * 64), [], ["promises"]),  # more than any file holds
    "huge_1d_no_data": (lambda p: _raw(p, b"{'descr': '<i8', 'fortran_order': False, 'shape': (18446744073709551616,)}\n"),
                        [], ["promises"]),
    "flags_float": (lambda p: (_write(p, _ints("int64")), np.save(os.path.join(os.path.dirname(p), "flags.npy"),
                                                                  np.zeros(17))),
                    ["--segments", "flags.npy"], ["one flag", "float64"]),
    "flags_2d": (lambda p: (_write(p, _ints("int64")), np.save(os.path.join(os.path.dirname(p), "flags.npy"),
                                                               np.zeros((17, 1), bool))),
                 ["--segments", "flags.npy"], ["one flag", "(17, 1)"]),
    "flags_long": (lambda p: (_write(p, _ints("int64")), np.save(os.path.join(os.path.dirname(p), "flags.npy"),
                                                                 np.zeros(18, np.int8))),
                   ["--segments", "flags.npy"], ["one flag", "17 items"]),
    "flags_pickled": (lambda p: (_write(p, _ints("int64")),
                                 np.save(os.path.join(os.path.dirname(p), "flags.npy"), np.zeros(17, object),
                                         allow_pickle=True)),
                      ["--segments", "flags.npy"], ["pickled"]),
    "flags_of_empty_input": (lambda p: (_write(p, np.zeros(0, np.int64)),
                                        np.save(os.path.join(os.path.dirname(p), "flags.npy"), np.ones(3, bool))),
                             ["--segments", "flags.npy"], ["one flag", "0 items"]),
    "coefficients_other_shape": (lambda p: (_write(p, _ints("int64")),
                                            np.save(os.path.join(os.path.dirname(p), "a.npy"), np.ones((17, 1)))),
                                 ["recurrence-a"], ["must be the same"]),
    # --dtype object is a usage error (exit 2): tests/cli/test_args.py
}


def _argv(folder, name, args):
    inp = os.path.join(str(folder), "in.npy")
    args = [os.path.join(str(folder), a) if a.endswith(".npy") else a for a in args]
    if args[:1] == ["recurrence-a"]:
        return ["recurrence", os.path.join(str(folder), "a.npy"), inp, "-o", os.path.join(str(folder), "out.npy"),
                "--backend", "cpu", "--quiet", *args[1:]]
    return [inp, "-o", os.path.join(str(folder), "out.npy"), "--backend", "cpu", "--quiet", *args]


@pytest.fixture(scope="module")
def input_batches(tmp_path_factory):
    b = CliBatches(tmp_path_factory, timeout=240)
    for ranks in (2, 3):
        for name, (make, args) in GOOD.items():
            def prepare(folder, make=make, args=args, name=name):
                make(str(folder / "in.npy"))
                return _argv(folder, name, args), {"setup": TINY_CHUNKS}
            b.add(ranks, ("good", name), prepare)
        for name, (make, args, _) in BAD.items():
            def prepare(folder, make=make, args=args, name=name):
                make(str(folder / "in.npy"))
                return _argv(folder, name, args), {"setup": TINY_CHUNKS}
            b.add(ranks, ("bad", name), prepare)

        def probe(folder):
            _write(str(folder / "in.npy"), _ints("int64"))
            return _argv(folder, "probe", ["--memory-limit", "1", "--report", str(folder / "r.json")]), \
                {"setup": TINY_CHUNKS}
        b.add(ranks, "probe", probe)
    return b


@pytest.mark.parametrize("ranks", [2, 3])
def test_the_batches_really_run_tiny_streamed_chunks_on_every_rank(input_batches, ranks):
    folder, proc, _ = input_batches.get(ranks, "probe")
    assert proc.returncode == 0 and proc.codes == [0] * ranks, proc.stderr
    report = __import__("json").loads((folder / "r.json").read_text())
    assert report["ranks"] == ranks
    assert [(r["mode"], r["chunk_rows"]) for r in report["pipeline"]["per_rank"]] == [("streamed", 3)] * ranks


def _one_rank(tmp_path, capsys, monkeypatch, make, argv_of):
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 24)
    make(str(tmp_path / "in.npy"))
    before = files_and_sizes(tmp_path)
    return tmp_path, cli_in_process(capsys, *argv_of(tmp_path)), {"before": before}


@pytest.mark.parametrize("ranks", [1, 2, 3])
@pytest.mark.parametrize("name", list(GOOD))
def test_header_variants_give_numpys_bytes(tmp_path, capsys, monkeypatch, input_batches, ranks, name):
    make, args = GOOD[name]
    if ranks == 1:
        folder, proc, _ = _one_rank(tmp_path, capsys, monkeypatch, make, lambda f: _argv(f, name, args))
    else:
        folder, proc, _ = input_batches.get(ranks, ("good", name))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip() == ""
    got = np.load(folder / "out.npy")
    want = _reference(folder / "in.npy", args)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    assert got.tobytes() == want.tobytes(), (got, want)
    assert leftover_temps(folder) == []


@pytest.mark.parametrize("ranks", [1, 2, 3])
@pytest.mark.parametrize("name", list(BAD))
def test_refused_inputs_fail_in_one_line_and_change_nothing(tmp_path, capsys, monkeypatch, input_batches, ranks,
                                                             name):
    make, args, words = BAD[name]
    if ranks == 1:
        folder, proc, opts = _one_rank(tmp_path, capsys, monkeypatch, make, lambda f: _argv(f, name, args))
    else:
        folder, proc, opts = input_batches.get(ranks, ("bad", name))
    assert_one_error_line(proc, *words)
    assert files_and_sizes(folder) == opts["before"], "a failed run must not create or change files"
    assert leftover_temps(folder) == []
