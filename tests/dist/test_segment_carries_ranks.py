"""Segmented carries between ranks that flag their parts differently: a part's carry is read from
its last segment alone (distscan.ops.restarts.carry_rows, in the CPU loops' carry), so every
pattern a rank may hold must give the whole part's state: no flag (the whole part), only the first
row, only the last row, only the second row, every row, random flags, an empty or one-row part.
First every rank takes each pattern in turn, then each rank draws its pattern and size anew for
every call (seeded by rank); forwards and in
reverse, one column and three, each strategy (``reduce_then_scan`` reduces every part first, by
the loops' carry), segmented int64 sums (exact) and recurrences with segments
(eighths and coefficients 1, -1, 0: exact in float64 in any association).  Every result against a
sequential reference on the concatenation.

Runs serially and under ``mpiexec -n K python -m pytest --with-mpi``.
"""

from __future__ import annotations

import numpy as np
import pytest

import distscan
from distscan.backends import cpu_states

from tests.support.data import FLAG_PATTERNS, segment_flags
from tests.support.ranks import all_ranks_ok
from tests.support.reference import recurrence_reference, segmented_reference

pytestmark = [pytest.mark.anyranks, pytest.mark.timeout(120)]

SIZES = [37, 0, 1, 2, 300, 5]
CALLS = 24


@pytest.mark.parametrize("strategy", ["auto", "reduce_then_scan"])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("w", [1, 3])
def test_segmented_carries_where_ranks_flag_differently(reverse, w, strategy, comm, monkeypatch):
    searched = []
    find_flag = cpu_states.find_flag
    monkeypatch.setattr(cpu_states, "find_flag", lambda *a, **k: searched.append(1) or find_flag(*a, **k))
    rng = np.random.default_rng(1000 + comm.rank)
    for call in range(len(FLAG_PATTERNS) + CALLS):
        if call < len(FLAG_PATTERNS):  # first every rank the same pattern, 37 rows: a middle rank's carry
            k, n = call, 37            # (in reverse its inner) decides what the ranks before it see
        else:  # then each rank its own draw: the ranks' patterns meet in many combinations
            k, n = int(rng.integers(len(FLAG_PATTERNS))), int(rng.choice(SIZES))
        flags = segment_flags(FLAG_PATTERNS[k], n, rng, 0.05)
        shape = (n,) if w == 1 else (n, w)
        ints = rng.integers(-50, 50, shape).astype(np.int64)
        b = rng.integers(-64, 64, shape) / 8.0
        a = rng.choice([1.0, -1.0, 0.0], shape, p=[0.45, 0.45, 0.1])
        got_sum = distscan.cumsum(ints, segments=flags, reverse=reverse, strategy=strategy, comm=comm)
        got_rec = distscan.linear_recurrence(a, b, segments=flags, reverse=reverse, strategy=strategy, comm=comm)
        parts = comm.allgather((ints, b, a, flags))
        g_ints, g_b, g_a = (np.concatenate([p[i] for p in parts]).reshape((-1,) + shape[1:]) for i in range(3))
        g_flags = np.concatenate([p[3] for p in parts])

        def check():
            what = f"call {call}: rank {comm.rank} {FLAG_PATTERNS[k]}, n={n}"
            lo = sum(len(p[3]) for p in parts[:comm.rank])
            ref_sum = segmented_reference(g_ints, g_flags, "sum", reverse=reverse)[lo:lo + n]
            np.testing.assert_array_equal(got_sum, ref_sum, err_msg=what)
            cols = [recurrence_reference(g_a[:, c] if w > 1 else g_a, g_b[:, c] if w > 1 else g_b,
                                         reverse=reverse, segments=g_flags)[lo:lo + n] for c in range(w)]
            ref_rec = cols[0] if w == 1 else np.stack(cols, axis=1)
            np.testing.assert_array_equal(got_rec, ref_rec, err_msg=what)

        all_ranks_ok(comm, check)
    if comm.size > 1 and strategy == "reduce_then_scan":  # the carries came from the loops' carry,
        assert comm.allreduce(len(searched)) > 0           # which searched for the last flag
