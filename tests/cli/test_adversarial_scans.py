"""Exact results of the ``distscan`` command on integers and booleans, drawn at random (fixed seeds):
every dtype (big-endian too), 0 to 101 rows (ranks with no rows at 3 ranks), trailing axes (one of
length 0), sum/prod/max/min/bitwise operators, ``--exclusive``, ``--reverse``, ``--segments`` (flags
as bool or integers of any width and byte order), ``--dtype``, ``--strategy``, ``--hierarchy``,
resident and streamed parts (``--memory-limit``), chunks from 1 byte up; and recurrences
``y = a*y + b`` of integer, float and complex coefficient files of different dtypes from each other
(exact: small integer values), reversed and segmented, with ``--initial``.  Every output must be
byte for byte NumPy's (a sequential loop for recurrences) with NumPy's dtype.

The reference here is written from NumPy alone (each segment scanned by ``ufunc.accumulate``),
not from distscan's operator tables.  One rank runs in this process; 2 and 3 ranks run every case
in one mpiexec job each.
"""

import os

import numpy as np
import pytest

from distscan.pipeline import chunks

from tests.support.command import cli_in_process
from tests.support.files import leftover_temps
from tests.support.launch import CliBatches
from tests.support.reference import recurrence_reference

pytestmark = [
    pytest.mark.timeout(240),
    pytest.mark.skipif(bool(os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK")),
                       reason="launches mpiexec itself; run it from a serial pytest"),
]

_U = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum, "bitwise_xor": np.bitwise_xor,
      "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or}


def _result_dtype(op, dt, dtype):
    if dtype:
        return np.dtype(dtype)
    dt = np.dtype(dt).newbyteorder("=")
    return np.cumsum(np.zeros(1, dt)).dtype if op in ("sum", "prod") else dt


def _identity(op, dt):
    if dt.kind == "b":
        return {"sum": False, "prod": True, "max": False, "min": True, "bitwise_xor": False, "bitwise_or": False,
                "bitwise_and": True}[op]
    if op == "max":
        return np.iinfo(dt).min
    if op == "min":
        return np.iinfo(dt).max
    return np.array({"sum": 0, "prod": 1, "bitwise_xor": 0, "bitwise_or": 0, "bitwise_and": -1}[op]).astype(dt)


def numpy_scan(a, op, *, exclusive=False, reverse=False, flags=None, dtype=None):
    """NumPy's scan of ``a`` along axis 0, each segment (a True flag starts one) on its own."""
    dt = _result_dtype(op, a.dtype, dtype)
    a = a.astype(a.dtype.newbyteorder("="))
    out = np.empty(a.shape, dt)
    n = len(a)
    if n == 0:
        return out
    starts = [0] if flags is None else sorted({0, *np.flatnonzero(flags).tolist()})
    with np.errstate(all="ignore"):
        for s, e in zip(starts, starts[1:] + [n]):
            seg = a[s:e][::-1] if reverse else a[s:e]
            r = _U[op].accumulate(seg, axis=0, dtype=dt) if op in ("sum", "prod") else \
                _U[op].accumulate(seg.astype(dt), axis=0)
            if exclusive:
                r = np.concatenate([np.full((1,) + a.shape[1:], _identity(op, dt), dt), r[:-1]])
            out[s:e] = r[::-1] if reverse else r
    return out


_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool", ">i4", ">u8", ">i2"]


def _scan_cases(seed, count):
    rng = np.random.default_rng(seed)
    cases = []
    for i in range(count):
        dt = np.dtype(_DTYPES[rng.integers(len(_DTYPES))])
        n = int(rng.choice([0, 1, 2, 3, 5, 7, 13, 40, 101]))
        trail = [(), (1,), (3,), (2, 2), (0,)][rng.integers(5)]
        op = ["sum", "prod", "max", "min", "bitwise_xor", "bitwise_or", "bitwise_and"][rng.integers(7)]
        dtype = None
        if rng.random() < 0.2 and dt.kind != "b" and op in ("sum", "prod"):
            dtype = ["int16", "int64", "uint32", "int8"][rng.integers(4)]
        if dt.kind == "b":
            a = rng.random((n,) + trail) < 0.5
        elif op == "prod":
            a = rng.choice([1, 1, 1, 2, 3, -1 if dt.kind == "i" else 1, 127], size=(n,) + trail).astype(dt)
        else:
            info = np.iinfo(dt)
            a = rng.integers(info.min, info.max, size=(n,) + trail, endpoint=True,
                             dtype=dt.newbyteorder("=")).astype(dt)
        flags = None
        if rng.random() < 0.35 and n > 0:
            flags = (rng.random(n) < 0.3).astype(["bool", "int8", "uint8", "int64", ">i2"][rng.integers(5)])
        args = ["--op", op, "--strategy", ["auto", "reduce_then_scan", "scan_then_add"][rng.integers(3)],
                "--hierarchy", ["auto", "flat", "node"][rng.integers(3)]]
        exclusive, reverse = bool(rng.random() < 0.4), bool(rng.random() < 0.4)
        args += ["--exclusive"] * exclusive + ["--reverse"] * reverse
        args += ["--dtype", dtype] if dtype else []
        mem = [None, "1", "64", "1K"][rng.integers(4)]
        args += ["--memory-limit", mem] if mem else []
        chunk = int(rng.choice([1, 8, 24, 100, 1 << 20]))
        cases.append({"id": f"s{seed}-{i}", "a": a, "flags": flags, "args": args, "chunk": chunk,
                      "want": numpy_scan(a, op, exclusive=exclusive, reverse=reverse, flags=flags, dtype=dtype)})
    return cases


def _recurrence_cases(seed, count):
    rng = np.random.default_rng(seed)
    kinds = ["int8", "int32", "int64", "uint16", ">i4", "float64", "float32", "complex128", "complex64"]
    cases = []
    for i in range(count):
        da, db = np.dtype(kinds[rng.integers(len(kinds))]), np.dtype(kinds[rng.integers(len(kinds))])
        n = int(rng.choice([0, 1, 2, 5, 13, 60]))
        shape = (n,) + [(), (2,), (1, 3)][rng.integers(3)]

        def values(dt):
            if dt.kind == "u":
                return rng.integers(0, 3, size=shape).astype(dt)
            if dt.kind == "i":
                return rng.integers(-2, 3, size=shape).astype(dt)
            re = rng.integers(-2, 3, size=shape) / 2
            return (re if dt.kind == "f" else re + 1j * rng.integers(-1, 2, size=shape) / 2).astype(dt)
        a, b = values(da), values(db)
        reverse, flags = bool(rng.random() < 0.5), None
        if rng.random() < 0.4 and n:
            flags = rng.random(n) < 0.3
        initial = [None, 0, 2, -1][rng.integers(4)]
        args = ["--reverse"] * reverse + (["--initial", str(initial)] if initial is not None else [])
        args += ["--memory-limit", "1"] if rng.random() < 0.5 else []
        native = lambda x: x.astype(x.dtype.newbyteorder("="))  # noqa: E731
        want = recurrence_reference(native(a), native(b), initial=initial or 0, reverse=reverse, segments=flags)
        dt = np.result_type(native(a), native(b))
        cases.append({"id": f"r{seed}-{i}", "a": a, "b": b, "flags": flags, "args": args,
                      "chunk": int(rng.choice([8, 32, 1 << 20])), "want": want, "dt": dt})
    return cases


SCANS = _scan_cases(11, 45)
RECURRENCES = _recurrence_cases(12, 25)
ALL = {c["id"]: c for c in SCANS + RECURRENCES}


def _prepare(folder, case):
    folder = str(folder)
    out = os.path.join(folder, "out.npy")
    extra = []
    if case["flags"] is not None:
        np.save(os.path.join(folder, "flags.npy"), case["flags"])
        extra = ["--segments", os.path.join(folder, "flags.npy")]
    if "b" in case:
        np.save(os.path.join(folder, "a.npy"), case["a"])
        np.save(os.path.join(folder, "b.npy"), case["b"])
        words = ["recurrence", os.path.join(folder, "a.npy"), os.path.join(folder, "b.npy")]
    else:
        np.save(os.path.join(folder, "in.npy"), case["a"])
        words = [os.path.join(folder, "in.npy")]
    return [*words, "-o", out, "--backend", "cpu", "--quiet", *case["args"], *extra]


@pytest.fixture(scope="module")
def scan_batches(tmp_path_factory):
    b = CliBatches(tmp_path_factory, timeout=240)
    for ranks in (2, 3):
        for key, case in ALL.items():
            b.add(ranks, key, lambda folder, case=case: (
                _prepare(folder, case),
                {"setup": f"import distscan.pipeline.chunks as c\npatch(c, 'CHUNK_BYTES', {case['chunk']})\n"}))
    return b


def _check(folder, proc, case):
    assert proc.returncode == 0, (case["args"], proc.stderr)
    assert proc.stderr.strip() == ""
    got = np.load(os.path.join(str(folder), "out.npy"))
    want = case["want"]
    if "b" in case:  # a recurrence: NumPy's dtype of a*b + b; exact (small integer values)
        assert got.dtype == case["dt"] and got.shape == want.shape, (got.dtype, case["dt"])
        np.testing.assert_array_equal(got, want.astype(case["dt"]) if case["dt"].kind in "iu" else want)
    else:
        assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
        assert got.tobytes() == want.tobytes(), (case["args"], case["a"].ravel()[:10], got.ravel()[:10],
                                                 want.ravel()[:10])
    assert leftover_temps(folder) == []


@pytest.mark.parametrize("ranks", [1, 2, 3])
@pytest.mark.parametrize("key", list(ALL))
def test_random_exact_scans_match_numpy(tmp_path, capsys, monkeypatch, scan_batches, ranks, key):
    case = ALL[key]
    if ranks == 1:
        monkeypatch.setattr(chunks, "CHUNK_BYTES", case["chunk"])
        proc = cli_in_process(capsys, *_prepare(tmp_path, case))
        folder = tmp_path
    else:
        folder, proc, _ = scan_batches.get(ranks, key)
    _check(folder, proc, case)


def test_the_cases_cover_what_they_claim():
    args = [" ".join(c["args"]) for c in SCANS]
    assert sum("--reverse" in a for a in args) >= 10 and sum("--exclusive" in a for a in args) >= 10
    assert sum(c["flags"] is not None for c in SCANS) >= 10
    assert sum(c["flags"] is not None and "--reverse" in " ".join(c["args"]) for c in SCANS) >= 3
    assert sum("--memory-limit 1 " in a + " " for a in args) >= 5
    assert {len(c["a"]) for c in SCANS} >= {0, 1, 2}
    assert {c["dt"].kind for c in RECURRENCES} >= {"i", "f", "c"}
    assert sum(c["a"].dtype != c["b"].dtype for c in RECURRENCES) >= 10
