"""Ranks that differ, with the options of ``distscan.scan``: each rank passes its part in a kind of
its own (contiguous, strided, reversed and Fortran views, lists, read-only, byte-swapped, memmaps),
with or without ``out=``, and its segment flags in a kind of its own (bool array, list, int8), in
calls with ``exclusive=``, ``reverse=``, ``segments=``, ``include_initial=`` and ``initial=``;
some calls have one rank pass a bad argument (a non-associative ufunc, an axis out of bounds,
segment flags of the wrong length, an object array, another ``dtype=``, ``reverse=`` on one rank
only).  Every call equals NumPy on the concatenation of the parts, or raises the same exception
with the same message on every rank; calls after a failure on the same communicator are right.

tests/dist/test_ranks_differ.py launches plain scans in processes of their own; here hypothesis
draws whole sequences of calls with options in the test process itself (every rank draws the same
example: derandomized, no shrinking, no health checks that depend on time, so that no rank's
hypothesis decides alone).  A hang is ended by pytest-timeout.

Written for any rank count (serially and under mpiexec, tests/run.sh).
"""

from __future__ import annotations

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import distscan  # noqa: E402
from distscan._dtypes import scan_types  # noqa: E402
from distscan.ops import get_op  # noqa: E402
from tests.support.ranks import all_ranks_ok  # noqa: E402
from tests.support.reference import plain_scan_reference, segmented_reference  # noqa: E402
from tests.support.kinds import part_as  # noqa: E402

pytestmark = [pytest.mark.anyranks, pytest.mark.timeout(180)]

KINDS = ["contiguous", "strided", "reversed", "fortran", "list", "readonly", "byteswapped", "memmap"]
FLAG_KINDS = ["bool", "list", "int8", "strided"]
DTYPES = {"sum": ["int64", "int32", "uint8", "float64", "bool"], "prod": ["int64", "float64"],
          "max": ["int64", "int16", "float32"], "min": ["float64", "uint32"], "bitwise_xor": ["int64", "uint8"]}
# A bad argument on one rank, and whether it is refused by that rank alone (raised serially too) or
# only seen as a difference between ranks (no error on one rank).
BAD = {"subtract": True, "axis": True, "segments_length": True, "object": True, "dtype": False, "reverse": False}
PROFILE = settings(max_examples=25, deadline=None, derandomize=True, database=None, phases=[Phase.explicit,
                   Phase.generate], suppress_health_check=list(HealthCheck), print_blob=False)


@st.composite
def calls(draw):
    op = draw(st.sampled_from(sorted(DTYPES)))
    dtype = draw(st.sampled_from(DTYPES[op]))
    segmented = draw(st.booleans())
    exclusive = draw(st.booleans())
    return {
        "op": op, "dtype": dtype, "seed": draw(st.integers(0, 2**31)),
        "counts": draw(st.lists(st.sampled_from([0, 0, 1, 2, 3, 7]), min_size=4, max_size=4)),
        "trailing": [] if segmented else draw(st.sampled_from([[], [], [2]])),
        "exclusive": exclusive, "reverse": draw(st.booleans()), "segmented": segmented,
        "include_initial": not exclusive and not segmented and draw(st.booleans()),
        "initial": draw(st.sampled_from([None, None, 1, 2])) if op not in ("max", "min") else None,
        "kinds": draw(st.lists(st.sampled_from(KINDS), min_size=4, max_size=4)),
        "flag_kinds": draw(st.lists(st.sampled_from(FLAG_KINDS), min_size=4, max_size=4)),
        "outs": draw(st.lists(st.booleans(), min_size=4, max_size=4)),
        "bad": draw(st.sampled_from([None, None, None] + sorted(BAD))),
        "bad_rank": draw(st.integers(0, 3)),
    }


def _global(call, size):
    rng = np.random.default_rng(call["seed"])
    counts = [call["counts"][r % 4] for r in range(size)]
    n = sum(counts)
    dt = np.dtype(call["dtype"])
    shape = (n,) + tuple(call["trailing"])
    if call["op"] == "prod":
        g = rng.integers(-3, 4, shape).astype(dt)
    elif dt.kind == "b":
        g = rng.integers(0, 2, shape).astype(bool)
    elif dt.kind in "iu":
        g = rng.integers(0 if dt.kind == "u" else -9, 10, shape).astype(dt)
    else:
        g = rng.integers(-9, 10, shape).astype(dt)  # whole numbers: float sums are exact in any order
    flags = rng.random(n) < 0.3
    return g, flags, counts


def _reference(call, g, flags):
    """NumPy's scan of the whole array, as every rank's results laid end to end."""
    op = get_op(call["op"])
    t = scan_types(op, g.dtype, None)
    if call["segmented"]:
        return segmented_reference(g, flags, call["op"], exclusive=call["exclusive"], initial=call["initial"],
                                   reverse=call["reverse"])
    return plain_scan_reference(g, op, t, exclusive=call["exclusive"], initial=call["initial"],
                                reverse=call["reverse"], include_initial=call["include_initial"])


def _bounds(call, counts):
    """Where each rank's part of the result starts and ends (include_initial: one more on the first
    rank in scan order)."""
    lengths = list(counts)
    if call["include_initial"]:
        lengths[-1 if call["reverse"] else 0] += 1
    return np.concatenate([[0], np.cumsum(lengths)]).astype(int)


def _flags_as(f, kind):
    if kind == "list":
        return f.tolist()
    if kind == "int8":
        return f.astype(np.int8)
    if kind == "strided":
        b = np.zeros(2 * len(f), bool)
        b[::2] = f
        return b[::2]
    return f.copy()


def _run_call(call, comm, tmp_path, k):
    size, rank = comm.size, comm.rank
    g, flags, counts = _global(call, size)
    lo, hi = sum(counts[:rank]), sum(counts[:rank + 1])
    p, f = g[lo:hi], flags[lo:hi]
    x = part_as(p, call["kinds"][rank % 4], tmp_path, f"call{k}")
    kw = {"op": call["op"], "exclusive": call["exclusive"], "reverse": call["reverse"], "initial": call["initial"],
          "include_initial": call["include_initial"]}
    if call["segmented"]:
        kw["segments"] = _flags_as(f, call["flag_kinds"][rank % 4])
    bad = call["bad"]
    if bad == "segments_length" and not call["segmented"]:
        bad = None
    if bad is not None and not BAD[bad] and size == 1:
        bad = None  # a difference between ranks needs two ranks
    bad_rank = call["bad_rank"] % size
    if bad is not None and rank == bad_rank:
        if bad == "subtract":
            kw["op"] = np.subtract
        elif bad == "axis":
            kw["axis"] = 5
        elif bad == "segments_length":
            kw["segments"] = np.zeros(len(f) + 1, bool)
        elif bad == "object":
            x = np.asarray(p).astype(object)
        elif bad == "dtype":
            kw["dtype"] = np.float64 if call["dtype"] != "float64" else np.int64
        elif bad == "reverse":
            kw["reverse"] = not call["reverse"]
    expected = None
    if bad is None:
        b = _bounds(call, counts)
        expected = _reference(call, g, flags)[b[rank]:b[rank + 1]]
    out = None
    if call["outs"][rank % 4] and expected is not None:
        out = np.full(expected.shape, 7, expected.dtype)
    before = np.array(x, copy=True)
    try:
        got = distscan.scan(x, out=out, comm=comm, **kw)
        outcome = ("ok", None)
    except Exception as exc:  # noqa: BLE001 - compared across ranks below
        got, outcome = None, ("raised", f"{type(exc).__name__}: {exc}")
    outcomes = comm.allgather(outcome)

    def check():
        what = f"call {k}: {call}, bad={bad} on rank {bad_rank}"
        if bad is None:
            assert outcome[0] == "ok", f"{what}: {outcome[1]}"
            assert out is None or got is out, f"{what}: out= not returned"
            assert got.dtype == expected.dtype and got.shape == expected.shape, (what, got.dtype, got.shape,
                                                                                expected.dtype, expected.shape)
            np.testing.assert_array_equal(got, expected, err_msg=what)
        else:
            assert {o[0] for o in outcomes} == {"raised"}, f"{what}: {outcomes}"
            assert len({o[1] for o in outcomes}) == 1, f"{what}: different errors {outcomes}"
        # the input is never modified (out= never aliases it here)
        np.testing.assert_array_equal(np.asarray(x), before, err_msg=f"{what}: input modified")

    all_ranks_ok(comm, check)


@PROFILE
@given(sequence=st.lists(calls(), min_size=2, max_size=4))
def test_calls_in_a_row_with_options_and_parts_of_every_kind(sequence, comm, tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("parts")
    for k, call in enumerate(sequence):
        _run_call(call, comm, tmp_path, k)
    # the communicator is left clean: a plain call after the sequence is right
    y = distscan.cumsum(np.arange(3) + comm.rank, comm=comm)
    g = np.concatenate([np.arange(3) + r for r in range(comm.size)])
    all_ranks_ok(comm, lambda: np.testing.assert_array_equal(y, np.cumsum(g)[3 * comm.rank:3 * comm.rank + 3]))
