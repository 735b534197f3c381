"""--verify at the edges, in-process: 1 rank, and 3 ranks simulated by threads with a fake
communicator (allgather through a barrier).  Outputs are written with NumPy, then patched on purpose."""

import threading

import numpy as np
import pytest

from distscan import io as dio
from distscan._dtypes import scan_types
from distscan.pipeline.verify import VerificationError, verify
from distscan.ops import get_op

from tests.support.reference import reference_scan

pytestmark = pytest.mark.timeout(60)


class _ThreadComm:
    def __init__(self, rank, size, shared):
        self.rank, self.size, self.shared = rank, size, shared

    def Get_rank(self):
        return self.rank

    def Get_size(self):
        return self.size

    def allgather(self, value):
        box, barrier = self.shared
        barrier.wait()
        box[self.rank] = value
        barrier.wait()
        out = list(box)
        barrier.wait()
        return out


def _run_verify(path, a, op, ranks, exclusive=False):
    op = get_op(op)
    types = scan_types(op, a.dtype)
    if ranks == 1:
        with np.errstate(all="ignore"):
            return verify(path, a, 0, op, types, exclusive=exclusive, total_rows=len(a), out_shape=a.shape)
    shared = ([None] * ranks, threading.Barrier(ranks))
    results = [None] * ranks

    def one(r):
        start, stop = dio.block_split(len(a), ranks, r)
        try:
            with np.errstate(all="ignore"):
                results[r] = verify(path, a[start:stop], start, op, types, exclusive=exclusive,
                                    total_rows=len(a), out_shape=a.shape, comm=_ThreadComm(r, ranks, shared))
        except Exception as exc:  # noqa: BLE001
            results[r] = exc

    threads = [threading.Thread(target=one, args=(r,)) for r in range(ranks)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert all(type(x) is type(results[0]) for x in results), results
    if isinstance(results[0], Exception):
        assert all(str(x) == str(results[0]) for x in results)
        raise results[0]
    return results[0]


def _write(tmp_path, out):
    p = str(tmp_path / "out.npy")
    np.save(p, out)
    return p


NEAR_OVERFLOW = [
    (np.array([3e38, 3e38, -3e38, 1, 2, 3], np.float32), "sum"),
    (np.array([1e200, 1e200, 1e-200, 1e-200, 1, 1]), "prod"),
    (np.array([-1e200, 1e200, 1e-200, -1e-200, 0, 1]), "prod"),   # -inf, then inf * 0 = nan
    (np.array([1e308, 1e308, -np.inf, 1.0, 2.0]), "sum"),          # inf + -inf = nan
    (np.array([[3e38, 1], [3e38, 2], [-3e38, 3], [1, 4]], np.float32), "sum"),  # one column only
]


@pytest.mark.parametrize("ranks", [1, 3])
@pytest.mark.parametrize("case", range(len(NEAR_OVERFLOW)))
def test_correct_results_near_overflow_pass(tmp_path, ranks, case):
    a, op = NEAR_OVERFLOW[case]
    r = _run_verify(_write(tmp_path, reference_scan(a, op)), a, op, ranks)
    assert r["passed"] and r["checked_rows"] + r["skipped_rows"] >= len(a) - 0


@pytest.mark.parametrize("ranks", [1, 3])
@pytest.mark.parametrize("case, row, value", [
    (0, 3, 5.0),       # a finite value where NumPy's scan (and the reference) is inf
    (0, 0, np.inf),    # inf where the reference is finite
    (1, 4, 1.0),       # finite where the sequential product is inf (exact value 1)
    (1, 0, 2e200),     # plainly wrong
    (3, 4, 7.0),       # finite where nan
])
def test_corrupted_outputs_near_overflow_fail(tmp_path, ranks, case, row, value):
    a, op = NEAR_OVERFLOW[case]
    out = reference_scan(a, op).copy()
    out[row] = value
    with pytest.raises(VerificationError, match=f"row {row}"):
        _run_verify(_write(tmp_path, out), a, op, ranks)


@pytest.mark.parametrize("ranks", [1, 3])
def test_an_infinite_tolerance_never_accepts(tmp_path, ranks):
    """sum |x| overflows float64 here; the old tolerance became inf and accepted anything."""
    a = np.array([1e308, -1e308, 1e308, -1e308, 1e308, -1e308, 5.0])
    out = np.cumsum(a)
    _run_verify(_write(tmp_path, out), a, "sum", ranks)  # correct: passes
    out[-1] = 1e300  # far outside any finite bound (sum |x| ~ 6e308 makes the bound ~5e294)
    with pytest.raises(VerificationError, match="row 6"):
        _run_verify(_write(tmp_path, out), a, "sum", ranks)


@pytest.mark.parametrize("ranks", [1, 3])
def test_patched_file_from_a_real_scan_fails(tmp_path, ranks):
    """Scan with the pipeline, patch one value in the written file, verify again: it must fail."""
    from distscan import pipeline
    a = np.random.default_rng(1).standard_normal(1000).astype(np.float32)
    np.save(tmp_path / "in.npy", a)
    out = str(tmp_path / "o.npy")
    pipeline.run(pipeline.Job(input=str(tmp_path / "in.npy"), output=out, verify=True), None)
    h = dio.read_header(out)
    with open(out, "r+b") as f:
        f.seek(h.offset + 4 * 999)  # the last row: always checked (a rank boundary at 1 rank)
        f.write(np.float32(123.0).tobytes())
    with pytest.raises(VerificationError, match="row 999"):
        _run_verify(out, a, "sum", ranks)


def test_summary_says_what_was_checked(tmp_path):
    a = np.arange(1, 31, dtype=np.int64)
    r = _run_verify(_write(tmp_path, np.cumsum(a)), a, "sum", 3)
    assert "every row checked exactly" in r["summary"] and "2 of 2 checked" in r["summary"]
    # float16 sums past 65504: rows beyond float16's range must be inf, and are checked
    h = np.full(30, 4000, np.float16)
    with np.errstate(over="ignore"):
        out = np.cumsum(h.astype(np.float32)).astype(np.float16)
    r = _run_verify(_write(tmp_path, out), h, "sum", 3)
    assert r["skipped_rows"] == 0 and "2 of 2 checked" in r["summary"] and "tolerance" in r["summary"]
    # a product through the subnormals: no bound, the rows (and so the boundaries) are skipped and said so
    p = np.array([1e-300, 1e-20, 1e300, 1, 1, 1, 1, 1, 1])
    r = _run_verify(_write(tmp_path, reference_scan(p, "prod")), p, "prod", 3)
    assert r["skipped_rows"] >= 6 and "0 of 2 checked" in r["summary"]
    assert "subnormal" in r["summary"] and "every rank boundary" not in r["summary"]
