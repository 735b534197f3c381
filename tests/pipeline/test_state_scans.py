"""The scans that carry a state or run backwards (``--reverse``, ``--segments``, ``--compensated``,
recurrences) through the chunked pipeline (distscan.pipeline.chunks), at any rank count: tiny
chunks (hundreds per file), resident and streamed parts (``memory_limit``), uneven parts and
empty ones (2 rows over 3 or 8 ranks), segments that span chunks and ranks, auxiliary inputs in
another dtype than the scan reads (int8 flags, float32 coefficients), and the GPU engine through
its host stand-in (``tests.support.host_gpu.HostChunks``, in pieces of a small
``--gpu-memory-limit``).

Compared with a sequential NumPy reference on the whole array (integers bit for bit; float sums
within ``8 n eps sum|x|``; recurrences with ``|a| <= 1`` within ``8 n eps max|y|``; compensated
float32 sums correctly rounded, their sums far below 2^40 units: tests/ops/__init__.py's bounds) and
with the library's call on the same parts (:func:`distscan.scan`, :func:`distscan.linear_recurrence`):
integers bit for bit; floats bit for bit on the first rank in scan order (its chunks continue one
sequential scan, as the library's call of its part does) and within the bounds above on the others
(their carry is combined chunk by chunk, the library's formed in one pass).
"""

import os

import numpy as np
import pytest

import distscan
from distscan import pipeline
from distscan.io import block_split
from distscan.pipeline import chunks, files
from distscan.pipeline.cuda import run_gpu

from tests.support.data import zero_rule_case
from tests.support.host_gpu import HostChunks
from tests.support.ranks import SELF
from tests.support.reference import (assert_compensated, assert_within_sum_bound, recurrence_reference,
                                     segmented_reference)

pytestmark = [pytest.mark.anyranks, pytest.mark.manyranks, pytest.mark.timeout(300)]

MANY = 1 << 10  # a stand-in device count: a "GPU" for every rank
N = 20_011      # uneven parts at 2, 3 and 8 ranks


@pytest.fixture
def tiny_chunks(monkeypatch):
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 2048)
    monkeypatch.setattr(chunks, "READ_AHEAD", 3)


def _data(n, seed=21):
    """Every input of the cases, the same on every rank."""
    rng = np.random.default_rng(seed)
    flags = rng.random(n) < 0.0007  # about 14 segments over 20,011 rows: across chunks and ranks
    if n > 1000:
        flags[[1, 85, 86, 170, n // 2, n - 1]] = True  # at and beside chunk boundaries, and the last row
    az, bz = zero_rule_case(rng, n)  # the zero rule (ops.state.affine_coef)
    return {
        "ints": rng.integers(-50, 50, (n, 3)).astype(np.int32),
        "floats": rng.standard_normal(n),
        "flags": flags,
        "flags8": flags.astype(np.int8) * 3,  # any non-zero integer starts a segment
        "a32": rng.uniform(-1, 1, n).astype(np.float32),
        "b": rng.standard_normal(n),
        "ai": rng.integers(-1, 2, (n, 2)).astype(np.int64),
        "bi": rng.integers(-9, 9, (n, 2)).astype(np.int64),
        "exact": (rng.integers(-2**20, 2**20, n) * 2.0**-10).astype(np.float32),
        "bint": rng.integers(-9, 9, n),  # int64 beside float32 coefficients: a float64 recurrence
        "az": az, "bz": bz,
        "pow2": _powers_of_two(rng, n),
        **_absorbing(rng, n),
    }


def _absorbing(rng, n):
    """Products that a zero near each segment's start keeps at zero (with its sign) to the segment's
    end, through chunks and parts whose own products overflow (2^600 in 5% of the rows)."""
    x = rng.choice(np.array([1.0, -1.0, 2.0, -2.0, 2.0**600, -2.0**600]), n, p=[.4, .3, .1, .1, .06, .04])
    restarts = np.zeros(n, bool)
    restarts[0] = True
    if n > 13000:
        x[[0, 5001, 12003]] = [0.0, -0.0, 0.0]
        restarts[[4990, 12000]] = True
    return {"absorb": x, "restarts": restarts}


def _powers_of_two(rng, n):
    """Zeros of both signs, +-1, +-2, 2^600 (two overflow), a few inf and NaN: every product is
    exact or overflows in any grouping where it does in sequence, so NumPy's sequential products
    are the only right ones, bit for bit, and a zero absorbs a later chunk's or rank's overflow."""
    values = np.array([0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 2.0**600, -2.0**600, np.inf, np.nan])
    p = np.array([80, 50, 4000, 3000, 400, 400, 50, 30, 0.5, 0.5], float)
    return rng.choice(values, n, p=p / p.sum())


def _equal_with_signs(y, want):
    np.testing.assert_array_equal(y, want)
    zeros = want == 0
    np.testing.assert_array_equal(np.signbit(y[zeros]), np.signbit(want[zeros]))


def _segmented_products(d, x="pow2", flags="flags", **kw):
    with np.errstate(all="ignore"):
        return segmented_reference(d[x], d[flags], "prod", **kw)


def _reverse_exclusive(x):
    y = np.cumsum(x[::-1], axis=0, dtype=np.int64)[::-1]
    return np.concatenate([y[1:], np.zeros((1,) + x.shape[1:], np.int64)])


def _reverse_exclusive_float(x):
    y = np.cumsum(x[::-1])[::-1]
    return np.concatenate([y[1:], [0.0]])


def _correctly_rounded(y, x, reverse=False):
    """``x``: multiples of 2^-10 below 2^10, a few thousand rows: every sum far below 2^40 units."""
    assert_compensated(y, x, (x.astype(np.float64) * 2.0**12).astype(np.int64), reverse=reverse, exact=True)


# name: (job keywords (files by name), library call (part, flags slice of the data) -> result, check(d, y))
CASES = {
    "reverse_sum": (dict(input="ints", reverse=True),
                    lambda p: distscan.scan(p["ints"], reverse=True, comm=p["comm"], backend="cpu"),
                    lambda d, y: np.testing.assert_array_equal(y, np.cumsum(d["ints"][::-1], 0, np.int64)[::-1])),
    "reverse_exclusive_3n": (dict(input="ints", reverse=True, exclusive=True, strategy="reduce_then_scan"),
                             lambda p: distscan.scan(p["ints"], reverse=True, exclusive=True, comm=p["comm"],
                                                     backend="cpu"),
                             lambda d, y: np.testing.assert_array_equal(y, _reverse_exclusive(d["ints"]))),
    "reverse_float_sum": (dict(input="floats", reverse=True),
                          lambda p: distscan.scan(p["floats"], reverse=True, comm=p["comm"], backend="cpu"),
                          lambda d, y: assert_within_sum_bound(
                              y, np.cumsum(d["floats"][::-1])[::-1], np.cumsum(np.abs(d["floats"][::-1]))[::-1],
                              np.float64)),
    "reverse_exclusive_float": (dict(input="floats", reverse=True, exclusive=True),
                                lambda p: distscan.scan(p["floats"], reverse=True, exclusive=True, comm=p["comm"],
                                                        backend="cpu"),
                                lambda d, y: assert_within_sum_bound(
                                    y, _reverse_exclusive_float(d["floats"]), np.cumsum(np.abs(d["floats"])[::-1])[::-1],
                                    np.float64)),
    "segments_int8_flags": (dict(input="ints", segments="flags8", dtype="int64"),
                            lambda p: distscan.scan(p["ints"], segments=p["flags8"], dtype=np.int64, comm=p["comm"],
                                                    backend="cpu"),
                            lambda d, y: np.testing.assert_array_equal(
                                y, segmented_reference(d["ints"], d["flags"], "sum", dtype=np.int64))),
    "reverse_segments": (dict(input="ints", segments="flags", reverse=True),
                         lambda p: distscan.scan(p["ints"], segments=p["flags"], reverse=True, comm=p["comm"],
                                                 backend="cpu"),
                         lambda d, y: np.testing.assert_array_equal(
                             y, segmented_reference(d["ints"], d["flags"], "sum", reverse=True))),
    "exclusive_segments_max": (dict(input="ints", segments="flags", exclusive=True, op="max"),
                               lambda p: distscan.scan(p["ints"], "max", segments=p["flags"], exclusive=True,
                                                       comm=p["comm"], backend="cpu"),
                               lambda d, y: np.testing.assert_array_equal(
                                   y, segmented_reference(d["ints"], d["flags"], "max", exclusive=True))),
    "exclusive_reverse_segments": (dict(input="ints", segments="flags", exclusive=True, reverse=True),
                                   lambda p: distscan.scan(p["ints"], segments=p["flags"], exclusive=True,
                                                           reverse=True, comm=p["comm"], backend="cpu"),
                                   lambda d, y: np.testing.assert_array_equal(
                                       y, segmented_reference(d["ints"], d["flags"], "sum", exclusive=True,
                                                              reverse=True))),
    "segmented_product_zeros": (dict(input="pow2", segments="flags", op="prod"),
                                lambda p: distscan.scan(p["pow2"], "prod", segments=p["flags"], comm=p["comm"],
                                                        backend="cpu"),
                                lambda d, y: _equal_with_signs(y, _segmented_products(d))),
    "segmented_product_zeros_reverse_exclusive": (
        dict(input="pow2", segments="flags", op="prod", reverse=True, exclusive=True),
        lambda p: distscan.scan(p["pow2"], "prod", segments=p["flags"], reverse=True, exclusive=True, comm=p["comm"],
                                backend="cpu"),
        lambda d, y: _equal_with_signs(y, _segmented_products(d, reverse=True, exclusive=True))),
    "segmented_product_absorbs": (dict(input="absorb", segments="restarts", op="prod"),
                                  lambda p: distscan.scan(p["absorb"], "prod", segments=p["restarts"], comm=p["comm"],
                                                          backend="cpu"),
                                  lambda d, y: _equal_with_signs(y, _segmented_products(d, "absorb", "restarts"))),
    "float_segments": (dict(input="floats", segments="flags"),
                       lambda p: distscan.scan(p["floats"], segments=p["flags"], comm=p["comm"], backend="cpu"),
                       lambda d, y: assert_within_sum_bound(
                           y, segmented_reference(d["floats"], d["flags"], "sum"),
                           np.cumsum(np.abs(d["floats"])), np.float64)),
    "recurrence_reverse_initial": (dict(input="b", coefficients="a32", segments="flags", reverse=True, initial=2.0),
                                   lambda p: distscan.linear_recurrence(p["a32"], p["b"], initial=2.0,
                                                                        segments=p["flags"], reverse=True,
                                                                        comm=p["comm"], backend="cpu"),
                                   lambda d, y: _recurrence_close(y, d["a32"], d["b"], 2.0, d["flags"], True)),
    "recurrence_initial": (dict(input="b", coefficients="a32", initial=0.5),
                           lambda p: distscan.linear_recurrence(p["a32"], p["b"], initial=0.5, comm=p["comm"],
                                                                backend="cpu"),
                           lambda d, y: _recurrence_close(y, d["a32"], d["b"], 0.5, None, False)),
    "integer_recurrence": (dict(input="bi", coefficients="ai", segments="flags", initial=3.0),
                           lambda p: distscan.linear_recurrence(p["ai"], p["bi"], initial=3, segments=p["flags"],
                                                                comm=p["comm"], backend="cpu"),
                           lambda d, y: np.testing.assert_array_equal(
                               y, recurrence_reference(d["ai"], d["bi"], initial=3, segments=d["flags"]))),
    "recurrence_mixed_dtypes": (dict(input="bint", coefficients="a32"),
                                lambda p: distscan.linear_recurrence(p["a32"], p["bint"], comm=p["comm"],
                                                                     backend="cpu"),
                                lambda d, y: _recurrence_close(y, d["a32"], d["bint"], 0.0, None, False)),
    "recurrence_zero_rule": (dict(input="bz", coefficients="az", segments="flags"),
                             lambda p: distscan.linear_recurrence(p["az"], p["bz"], segments=p["flags"],
                                                                  comm=p["comm"], backend="cpu"),
                             lambda d, y: np.testing.assert_array_equal(
                                 y, recurrence_reference(d["az"], d["bz"], segments=d["flags"]))),
    "recurrence_zero_rule_reverse": (dict(input="bz", coefficients="az", reverse=True, initial=2.0),
                                     lambda p: distscan.linear_recurrence(p["az"], p["bz"], initial=2.0, reverse=True,
                                                                          comm=p["comm"], backend="cpu"),
                                     lambda d, y: np.testing.assert_array_equal(
                                         y, recurrence_reference(d["az"], d["bz"], initial=2.0, reverse=True))),
    "compensated": (dict(input="exact", compensated=True),
                    lambda p: distscan.scan(p["exact"], compensated=True, comm=p["comm"], backend="cpu"),
                    lambda d, y: _correctly_rounded(y, d["exact"])),
    "compensated_reverse": (dict(input="exact", compensated=True, reverse=True),
                            lambda p: distscan.scan(p["exact"], compensated=True, reverse=True, comm=p["comm"],
                                                    backend="cpu"),
                            lambda d, y: _correctly_rounded(y, d["exact"], reverse=True)),
}


def _recurrence_close(y, a, b, initial, flags, reverse):
    ref = recurrence_reference(a, b, initial=initial, segments=flags, reverse=reverse)
    tol = 8 * len(b) * np.finfo(np.float64).eps * (np.abs(ref).max() + 1)
    assert np.max(np.abs(y - ref)) <= tol, np.max(np.abs(y - ref))


def _save(comm, folder, d):
    if comm.rank == 0:
        for name, arr in d.items():
            np.save(f"{folder}/{name}.npy", arr)
    comm.Barrier()


def _job(folder, words, **more):
    kw = {k: (f"{folder}/{v}.npy" if k in ("input", "segments", "coefficients") else v) for k, v in words.items()}
    return pipeline.Job(output=f"{folder}/out.npy", force=True, **kw, **more)


def _library(comm, d, call):
    """The library's result for the same parts, gathered: the whole array, and this rank's part."""
    lo, hi = block_split(len(d["b"]), comm.size, comm.rank)
    part = {k: v[lo:hi] for k, v in d.items()}
    part["comm"] = comm
    mine = np.asarray(call(part))
    return np.concatenate(comm.allgather(mine)), (lo, hi)


def _first_rank(comm, reverse):
    return comm.size - 1 if reverse else 0


def _compare(comm, d, name, y, job):
    words, call, check = CASES[name]
    check(d, y)
    lib, _ = _library(comm, d, call)
    assert lib.dtype == y.dtype
    if y.dtype.kind in "biu":
        np.testing.assert_array_equal(y, lib)
    else:  # the first rank's rows continue one sequential scan: the library's bytes
        lo, hi = block_split(len(y), comm.size, _first_rank(comm, job.reverse))
        np.testing.assert_array_equal(y[lo:hi], lib[lo:hi])
        zeros = (y == 0) & (lib == 0)  # an exclusive scan's first value is the identity, +0.0, as the library's
        np.testing.assert_array_equal(np.signbit(y[zeros]), np.signbit(lib[zeros]))


@pytest.mark.parametrize("limit", [None, "1K"], ids=["resident", "streamed"])
@pytest.mark.parametrize("name", list(CASES))
def test_state_scans_in_chunks_match_references_and_the_library(shared_tmp_path, comm, tiny_chunks, name, limit):
    d = _data(N)
    _save(comm, shared_tmp_path, d)
    job = _job(shared_tmp_path, CASES[name][0], backend="cpu", memory_limit=limit)
    report = pipeline.run(job, comm)
    y = np.load(job.output)
    _compare(comm, d, name, y, job)
    per_rank = report["pipeline"]["per_rank"]
    assert {r["mode"] for r in per_rank} == {"streamed" if limit else "resident"}
    assert all(r["reverse"] == bool(job.reverse) for r in per_rank)
    assert report["times_s"]["read"] > 0 and report["times_s"]["write"] > 0 and "store" in report["times_s"]["spans"]
    comm.Barrier()


@pytest.mark.parametrize("name", ["reverse_exclusive_3n", "reverse_exclusive_float", "exclusive_reverse_segments",
                                  "recurrence_reverse_initial",
                                  "integer_recurrence", "compensated_reverse", "exclusive_segments_max"])
def test_more_ranks_than_rows(shared_tmp_path, comm, tiny_chunks, name):
    """2 rows: at 3 and 8 ranks some parts are empty (the first in scan order too, in reverse)."""
    d = _data(2, seed=5)
    d["flags"][:] = [False, True]
    d["flags8"] = d["flags"].astype(np.int8)
    _save(comm, shared_tmp_path, d)
    job = _job(shared_tmp_path, CASES[name][0], backend="cpu")
    pipeline.run(job, comm)
    _compare(comm, d, name, np.load(job.output), job)
    comm.Barrier()


@pytest.mark.parametrize("name", ["reverse_sum", "reverse_float_sum", "reverse_segments", "exclusive_segments_max",
                                  "recurrence_reverse_initial", "integer_recurrence", "recurrence_zero_rule",
                                  "compensated", "segmented_product_zeros", "segmented_product_absorbs"])
@pytest.mark.parametrize("limit", [None, "1K"], ids=["resident", "streamed"])
def test_state_scans_through_the_gpu_engine(shared_tmp_path, comm, tiny_chunks, monkeypatch, name, limit):
    """The GPU engine (its host stand-in) in pieces of a "1K" GPU memory limit: the auxiliary inputs
    go to the "device" with the rows, a projected initial value with every chunk, pieces in scan
    order; a state scan (or a float sum) waits for the "GPU" even when it starts late, so no chunk
    runs on the host."""
    monkeypatch.setattr(HostChunks, "START_S", 0.05)
    monkeypatch.setattr(HostChunks, "FAIL", None)
    HostChunks.made.clear()
    d = _data(N)
    _save(comm, shared_tmp_path, d)
    words = CASES[name][0]
    job = _job(shared_tmp_path, words, backend="cuda", memory_limit=limit, gpu_memory_limit="1K")
    monkeypatch.setitem(pipeline.PIPELINES, "cuda",
                        lambda j, c: run_gpu(j, c, chunks_class=HostChunks, count=lambda: MANY))
    report = pipeline.run(job, comm)
    y = np.load(job.output)
    _compare(comm, d, name, y, job)
    mine = report["gpu"]["per_rank"][comm.rank]
    assert mine["chunks_on_host"] + mine["chunks_on_gpu"] > 0, mine
    dev = HostChunks.made[-1]
    if name != "reverse_sum":  # an integer sum may start on the host; the others wait for the "GPU"
        assert mine["chunks_on_host"] == 0 and mine["chunks_on_gpu"] > 0, mine
        assert dev.calls["pieces"] > dev.calls["scan"] > 0  # chunks in pieces
    assert (dev.calls["aux_pieces"] > 0) == bool(words.get("segments") or words.get("coefficients"))
    assert (dev.calls["initial"] > 0) == ("initial" in words)
    assert {r["mode"] for r in report["pipeline"]["per_rank"]} == {"streamed" if limit else "resident"}
    comm.Barrier()


def test_a_part_larger_than_the_memory_budget_streams_instead_of_being_refused(shared_tmp_path, comm):
    """A recurrence whose part (inputs and output: about 400 KB a rank at 1 rank) is far above a
    16 KB budget, in the default chunk size: the part is streamed (read twice), not refused."""
    d = _data(N)
    _save(comm, shared_tmp_path, d)
    job = _job(shared_tmp_path, CASES["recurrence_reverse_initial"][0], backend="cpu", memory_limit="16K")
    report = pipeline.run(job, comm)
    assert {r["mode"] for r in report["pipeline"]["per_rank"]} == {"streamed"}
    _compare(comm, d, "recurrence_reverse_initial", np.load(job.output), job)
    comm.Barrier()


@pytest.mark.parametrize("when", ["pass A", "pass B"])
def test_a_flags_read_that_fails_on_one_rank_fails_every_rank(shared_tmp_path, comm, tiny_chunks, monkeypatch, when):
    """The last rank's reads of the segment flags fail: in its only pass over a resident part, or in
    the second pass of a streamed one (a streamed last rank skips the first: nobody reads its
    carry).  The same error on every rank, nothing published."""
    d = _data(N)
    _save(comm, shared_tmp_path, d)
    job = _job(shared_tmp_path, dict(input="ints", segments="flags"), backend="cpu",
               memory_limit=None if when == "pass A" else "1K")
    seen = [0]
    real = files.Files.read_aux

    def failing(self, i, lo, hi, buf):
        seen[0] += 1
        if seen[0] == 3:
            raise OSError("injected: flags unreadable")
        return real(self, i, lo, hi, buf)

    if comm.rank == comm.size - 1:
        monkeypatch.setattr(files.Files, "read_aux", failing)
    with pytest.raises(OSError, match="injected: flags unreadable"):
        pipeline.run(job, comm)
    comm.Barrier()
    assert not os.path.exists(job.output)
    assert [f for f in os.listdir(shared_tmp_path) if f.endswith(".part")] == []
    comm.Barrier()


@pytest.mark.parametrize("words", [dict(), dict(reverse=True), dict(segments="flags", reverse=True)],
                         ids=["forward", "reverse", "reverse_segments"])
def test_infinite_and_nan_coefficients_at_chunk_and_rank_edges(shared_tmp_path, comm, tiny_chunks, words):
    """Coefficients inf and NaN on the first and last rows of every rank's part (at 2, 3 and 8 ranks)
    and of chunks: the chunked carry takes its first chunk's carry as it is, as the library's carry of
    the same rows (the affine identity combined with (inf, b) would give b = inf*0 + b = NaN). The
    file equals the library's one-process call: the same infinities and NaNs, the finite values close."""
    n = N
    rng = np.random.default_rng(8)
    d = _data(n)
    a = rng.uniform(0.5, 1.0, n)
    b = rng.uniform(0.1, 1.0, n)  # positive: inf * y stays inf, never inf * 0
    edges = sorted({e for k in (2, 3, 8) for r in range(k) for e in block_split(n, k, r)} - {n})
    a[[e for e in edges[1::2]]] = np.inf
    a[[max(e - 1, 0) for e in edges[2::2]]] = np.nan
    a[[255, 256, 511, 4000]] = [np.inf, np.nan, np.inf, np.nan]  # beside the tiny chunks' edges
    d.update(a_edges=a, b_pos=b)
    _save(comm, shared_tmp_path, d)
    job = _job(shared_tmp_path, dict(input="b_pos", coefficients="a_edges", **words), backend="cpu")
    pipeline.run(job, comm)
    y = np.load(job.output)
    want = distscan.linear_recurrence(a, b, reverse=bool(words.get("reverse")), comm=SELF,
                                      segments=d["flags"] if "segments" in words else None)
    assert np.isnan(want).any() and np.isfinite(want).any()  # (forward: infinities too)
    assert np.isinf(want).any() or words
    np.testing.assert_array_equal(np.isnan(y), np.isnan(want))
    np.testing.assert_allclose(y, want, rtol=1e-12, equal_nan=True)
    comm.Barrier()


@pytest.mark.parametrize("aux", ["segments", "coefficients"])
def test_the_output_may_not_replace_an_auxiliary_input(shared_tmp_path, comm, aux):
    """``-o`` naming the segment flags or the coefficients is refused like the input itself, on every
    rank, and the file is left as it was."""
    d = _data(64)
    _save(comm, shared_tmp_path, d)
    words = dict(input="bint", segments="flags") if aux == "segments" else dict(input="bint", coefficients="a32")
    job = _job(shared_tmp_path, words, backend="cpu")
    target = job.segments if aux == "segments" else job.coefficients
    job.output = target
    before = np.load(target)
    with pytest.raises(ValueError, match="is the input file .* of this job"):
        pipeline.run(job, comm)
    comm.Barrier()
    np.testing.assert_array_equal(np.load(target), before)
    comm.Barrier()


def test_coefficients_that_the_dtype_cannot_take_are_refused(shared_tmp_path, comm):
    """A float A with an integer --dtype is refused by NumPy's same_kind rule, as the library's
    linear_recurrence refuses it, before any file is written (it was truncated)."""
    d = {"b": np.arange(4), "a": np.full(4, 0.5)}
    _save(comm, shared_tmp_path, d)
    job = _job(shared_tmp_path, dict(input="b", coefficients="a"), dtype="int64", backend="cpu")
    with pytest.raises(TypeError, match=r"recurrence: A .*a\.npy is float64, which --dtype int64 would truncate "
                                        r"\(NumPy's a\*y in int64 refuses it: same_kind casting\)"):
        pipeline.run(job, comm)
    assert not os.path.exists(job.output)
    comm.Barrier()
