"""The prescan of a resident part on the host (distscan.pipeline.chunks.run_chunks, CpuEngine's
``prescan``): a rank after the first in scan order scans its chunks before the exchange and, after
it, rescans them from the true seed only until the running state has the bytes the prescan's had.

The assumption it rests on: a chunk's scan is a function of its rows, auxiliary rows, the seed's
bytes and the projected initial value alone.  So the command's output must be byte for byte the
output with every chunk rescanned (the settling test ``_same_bytes`` never true), whatever the
flags and coefficients: none (never settles), a flag in the last chunk only, a flag at a chunk's
first row, coefficients that decay (settles), ones that do not (|a| = 1), zeros of either sign,
infinities after a product that underflowed (the affine loop's flushed subnormals), reversed,
exclusive, with an initial value.  And against the sequential references of tests/support.
"""

import numpy as np
import pytest

from distscan import pipeline
from distscan.io import block_split
from distscan.pipeline import chunks
from distscan.pipeline.host import CpuEngine

from tests.support.reference import recurrence_reference, segmented_reference
from tests.support.seeds import shared_rng

pytestmark = [pytest.mark.anyranks, pytest.mark.manyranks, pytest.mark.timeout(300)]

N = 6_007
ROWS = 256  # rows per chunk (int64 and float64 rows of one item: 2 KB chunks)


@pytest.fixture
def tiny_chunks(monkeypatch):
    monkeypatch.setattr(chunks, "CHUNK_BYTES", ROWS * 8)
    monkeypatch.setattr(chunks, "READ_AHEAD", 3)


def _flags(rng, how, n):
    flags = np.zeros(n, bool)
    if how == "random":
        flags[rng.integers(0, n, 5)] = True
    elif how == "last_chunk":
        flags[n - 3] = True
    elif how == "chunk_starts":
        flags[::ROWS] = True
    elif how == "every_row":
        flags[:] = True
    return flags


def _coefficients(rng, how, n):
    if how == "decaying":
        return rng.uniform(0.5, 1.0, n)
    if how == "unit":
        return rng.choice([-1.0, 1.0], n)
    if how == "signed_zeros":
        a = rng.uniform(-1.0, 1.0, n)
        a[rng.integers(0, n, 20)] = rng.choice([0.0, -0.0], 20)
        return a
    if how == "underflow_then_inf":  # products that flush to zero, then infinite and NaN coefficients
        a = np.full(n, 1e-30)
        a[rng.integers(0, n, 8)] = np.inf
        a[rng.integers(0, n, 3)] = np.nan
        return a
    raise ValueError(how)


CASES = [("segments", how, words) for how in ("none", "random", "last_chunk", "chunk_starts", "every_row")
         for words in ({}, {"reverse": True}, {"exclusive": True, "op": "max"})]
CASES += [("recurrence", how, words) for how in ("decaying", "unit", "signed_zeros", "underflow_then_inf")
          for words in ({}, {"reverse": True, "initial": 2.0}, {"segments": "random"})]


def _run(folder, kind, words, name):
    kw = dict(words)
    seg = kw.pop("segments", None)
    if kind == "segments":
        job = pipeline.Job(input=f"{folder}/ints.npy", segments=f"{folder}/flags.npy", output=f"{folder}/{name}.npy",
                           force=True, backend="cpu", **kw)
    else:
        job = pipeline.Job(input=f"{folder}/b.npy", coefficients=f"{folder}/a.npy", output=f"{folder}/{name}.npy",
                           force=True, backend="cpu", segments=f"{folder}/flags.npy" if seg else None, **kw)
    return job


@pytest.mark.parametrize("kind,how,words", CASES, ids=[f"{k}-{h}-{'-'.join(w) or 'plain'}" for k, h, w in CASES])
def test_a_settled_prescan_writes_the_bytes_of_a_full_rescan(shared_tmp_path, comm, tiny_chunks, monkeypatch, kind,
                                                             how, words):
    rng = shared_rng(comm)
    ints = rng.integers(-50, 50, N)
    b = rng.standard_normal(N)
    flags = _flags(rng, how if kind == "segments" else words.get("segments", "none"), N)
    a = _coefficients(rng, how, N) if kind == "recurrence" else None
    if comm.rank == 0:
        np.save(f"{shared_tmp_path}/ints.npy", ints)
        np.save(f"{shared_tmp_path}/b.npy", b)
        np.save(f"{shared_tmp_path}/flags.npy", flags)
        if a is not None:
            np.save(f"{shared_tmp_path}/a.npy", a)
    comm.Barrier()

    report = pipeline.run(_run(shared_tmp_path, kind, words, "settled"), comm)
    per_rank = report["pipeline"]["per_rank"]
    first = comm.size - 1 if words.get("reverse") else 0
    assert [r.get("prescan") for r in per_rank] == [r != first and comm.size > 1 for r in range(comm.size)]
    with monkeypatch.context() as m:
        m.setattr(chunks, "_same_bytes", lambda x, y: False)
        full = pipeline.run(_run(shared_tmp_path, kind, words, "rescanned"), comm)
    settled = np.load(f"{shared_tmp_path}/settled.npy")
    rescanned = np.load(f"{shared_tmp_path}/rescanned.npy")
    assert settled.dtype == rescanned.dtype
    assert settled.tobytes() == rescanned.tobytes()

    reverse = bool(words.get("reverse"))
    if kind == "segments":
        want = segmented_reference(ints, flags, words.get("op", "sum"), exclusive=bool(words.get("exclusive")),
                                   reverse=reverse)
        np.testing.assert_array_equal(settled, want)
    else:
        want = recurrence_reference(a, b, initial=words.get("initial", 0.0),
                                    segments=flags if words.get("segments") else None, reverse=reverse)
        finite = np.isfinite(want)
        if how != "underflow_then_inf":
            np.testing.assert_array_equal(np.isnan(settled), np.isnan(want))
            np.testing.assert_array_equal(settled[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)])
        # else an infinite y carried across a split meets a product of coefficients that underflowed
        # to zero, 0 * inf: NaN where the sequential loop keeps inf (docs/operators.md's exceptions);
        # only the finite rows are compared with it.
        scale = np.abs(want[finite]).max(initial=0.0) + 1
        assert np.max(np.abs(settled[finite] - want[finite]), initial=0.0) <= 8 * N * np.finfo(float).eps * scale

    # Where it settles, the rescans stop early: a flag in every chunk, or on every row.  (In
    # reverse, a chunk whose segment ends at its edge leaves the state's "inner" bit unlike the
    # prescan's, though the next chunk's output no longer depends on it: one more rescan.)
    if comm.size > 1 and kind == "segments" and how in ("chunk_starts", "every_row"):
        assert all(r["rescanned"] <= 1 + reverse for r in per_rank if r.get("prescan")), [r.get("rescanned") for r in per_rank]
    # With the settling test never true, every chunk of a prescanned part is rescanned.
    for r, facts in enumerate(full["pipeline"]["per_rank"]):
        lo, hi = block_split(N, comm.size, r)
        assert facts.get("rescanned", 0) == (-(-(hi - lo) // ROWS) if facts.get("prescan") else 0), facts
    comm.Barrier()


def test_a_part_too_large_for_both_buffers_is_not_prescanned(shared_tmp_path, comm, tiny_chunks):
    """Prescanning holds input, flags and output; where they do not fit the budget, the part is
    held as before (input and flags) or streamed."""
    rng = shared_rng(comm)
    if comm.rank == 0:
        np.save(f"{shared_tmp_path}/ints.npy", rng.integers(-50, 50, N))
        np.save(f"{shared_tmp_path}/flags.npy", _flags(rng, "random", N))
    comm.Barrier()
    per_rank_bytes = -(-N // comm.size) * (8 + 1)  # input and flags, not the output beside them
    job = pipeline.Job(input=f"{shared_tmp_path}/ints.npy", segments=f"{shared_tmp_path}/flags.npy",
                       output=f"{shared_tmp_path}/out.npy", force=True, backend="cpu",
                       memory_limit=str(per_rank_bytes + 64))
    report = pipeline.run(job, comm)
    assert not any(r.get("prescan") for r in report["pipeline"]["per_rank"])
    assert CpuEngine.prescans  # the class default the test above relies on
    comm.Barrier()
