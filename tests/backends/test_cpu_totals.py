"""The CPU backend's totals own their memory.

The file pipeline keeps a chunk's total as the next chunk's seed while the chunk's input buffer
goes back to a free list and is refilled by the read of a later chunk.  A one-row exclusive scan
without a seed returned its row itself (``op.lift`` views it): under load, an exclusive
``bitwise_and`` of one-row chunks (tests/cli/test_adversarial_scans.py, case s11-10) took the
part's last row as its first (about 1 run in 100 with the cores busy).  Every total must be a copy.
"""

import numpy as np
import pytest

from distscan._dtypes import scan_types
from distscan.backends import cpu
from distscan.ops import get_op
from distscan.ops.derive import affine, compensated, segmented

pytestmark = pytest.mark.anyranks


@pytest.mark.parametrize("name", ["sum", "bitwise_and", "max", "min", "gcd", "logical_or", "prod"])
@pytest.mark.parametrize("dt", ["int16", "int64", "float32"])
@pytest.mark.parametrize("n", [0, 1, 2, 5])
@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("seeded", [False, True])
@pytest.mark.parametrize("algorithm", ["auto", "blelloch"])
def test_a_plain_total_shares_no_memory(name, dt, n, exclusive, seeded, algorithm):
    op, dt = get_op(name), np.dtype(dt)
    if dt.kind not in op.kinds:
        pytest.skip("operator not defined for the dtype")
    types = scan_types(op, dt)
    x = (np.arange(n) % 5 + 1).astype(dt).reshape(n, 1)
    out = np.empty(x.shape, types.acc)
    seed = np.ones(1, types.acc) if seeded else None
    _, total = cpu.scan(x, op, types, exclusive=exclusive, seed=seed, out=out, want_total=True, algorithm=algorithm)
    want = total.copy()
    assert not np.shares_memory(total, x) and not np.shares_memory(total, out)
    x[...] = 0
    out[...] = 0
    np.testing.assert_array_equal(total, want)


@pytest.mark.parametrize("kind", ["segmented", "affine", "compensated"])
@pytest.mark.parametrize("n", [0, 1, 3])
@pytest.mark.parametrize("exclusive", [False, True])
def test_a_state_total_shares_no_memory(kind, n, exclusive):
    if kind == "affine" and exclusive:
        pytest.skip("linear recurrences are inclusive")
    op = {"segmented": lambda: segmented(get_op("sum")), "affine": affine,
          "compensated": lambda: compensated(get_op("sum"))}[kind]()
    dt = np.dtype("float64")
    types = scan_types(op, dt)
    x = np.arange(1, n + 1, dtype=dt)
    aux = {"segmented": (np.zeros(n, bool),), "affine": (np.full(n, 0.5),), "compensated": ()}[kind]
    out = np.empty(x.shape, types.result)
    _, total = cpu.scan(x, op, types, exclusive=exclusive, out=out, want_total=True, aux=aux)
    assert not np.shares_memory(total, x) and not np.shares_memory(total, out)
    for a in aux:
        assert not np.shares_memory(total, a)
