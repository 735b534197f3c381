"""GPU tests of a segmented part's carry read from its last segment alone: the ordered reduction
folds each block's run of tiles from its last tile back and stops at a segment start
(``restarts``, kernels/util/states.cuh; reduce_tiles, kernels/agent/agent_reduce.cuh).  The carry
against the state fold over every row on the host (skipped without a GPU);
tests/backends/test_segment_carries.py checks the CPU's (distscan.ops.restarts.carry_rows).
"""

from __future__ import annotations

import numpy as np
import pytest

from distscan._dtypes import scan_types
from distscan.ops import affine, get_op, segmented

from tests.support.devices import require_gpu

cp = require_gpu()
pytestmark = pytest.mark.gpu

from distscan.backends import cuda as gpu  # noqa: E402


PATTERNS = ["none", "far", "row 1", "first row", "last row", "sparse", "dense", "every row"]


@pytest.mark.parametrize("reverse", [False, True])
def test_a_segmented_carry_from_its_last_segment_is_the_whole_part_s(reverse, rng):
    """The GPU's carry of a segmented part, which reduces only the rows of its last segment in scan
    order (distscan.ops.restarts.carry_rows), field for field the state fold over every row on the
    host: no flag (every tile read), one near the far end (nearly all of them), one at either edge
    or next to it, sparse flags (some blocks' runs hold none), dense flags, every row.  Segmented
    int64 sums, segmented gcd of negative items (the identity's EMPTY marker: a flag of 2 is no
    start), and recurrences with segments whose values are exact in float64 in any association
    (eighths; coefficients 1, -1, 0)."""
    for n, pattern in [(n, p) for n in (2, 4097, (1 << 20) + 3) for p in PATTERNS] + [((1 << 24) + 5, "dense")]:
        flags = np.zeros(n, bool)
        if pattern == "far":
            flags[min(n - 1, 4) if not reverse else max(0, n - 5)] = True
        elif pattern == "row 1":
            flags[1] = True
        elif pattern == "last row":
            flags[-1] = True
        elif pattern == "first row":
            flags[0] = True
        elif pattern == "sparse":
            flags = rng.random(n) < 1e-5
        elif pattern == "dense":
            flags = rng.random(n) < 1e-3
        elif pattern == "every row":
            flags[:] = True
        ints = rng.integers(-50, 50, n).astype(np.int64)
        b = rng.integers(-64, 64, n) / 8.0
        a = rng.choice([1.0, -1.0], n)
        a[rng.random(n) < 1e-3] = 0.0
        cases = [(segmented(get_op("sum"), reverse), ints, (flags,)), (segmented(get_op("gcd"), reverse), ints * 6 - 3, (flags,)),
                 (affine(True, reverse), b, (a, flags))]
        for op, x, aux in cases:
            types = scan_types(op, x.dtype)
            lifted = op.state.lift(x.reshape(-1, 1), tuple(v.reshape(-1, 1) for v in aux), types.acc)
            want = np.empty(1, types.state)
            op.state.fold(np.ascontiguousarray(np.asarray(lifted[::-1] if reverse else lifted, types.state)), want)
            got = gpu.reduce(cp.asarray(x).reshape(-1, 1), op, types,
                             aux=tuple(cp.asarray(v if v.dtype == bool else v.reshape(-1, 1)) for v in aux),
                             reverse=reverse)
            for field in types.state.names:
                np.testing.assert_array_equal(np.asarray(got[field]).reshape(-1), np.asarray(want[field]).reshape(-1),
                                              err_msg=f"{op.name} {pattern} {field}")
