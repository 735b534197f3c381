"""Linear recurrences with and without an initial on both device algorithms (skipped without a GPU).

The tile's store is compiled twice for the affine states (kernels/util/states.cuh,
PARAM_READS_MORE; kernels/tile/tile_agent.cuh, by_param): without an initial an output is the
composed map's b alone, and that copy computes no product of the a's; with one it projects
``a*initial + b``.  Each copy must give what the CPU gives: every dtype the recurrences take, the
look-back and the look-ahead (with its rescan for the 16-byte maps), forward and reverse, with
and without segments, exclusive scans' first-of-segment outputs through segmented sums beside,
an initial of zero (the copy without) and of another value (the copy with), the same call twice
in a row on the same output (a cached kind must pick the copy by this call's initial).
Integers bit for bit; floats within test_operators.py's bound.
"""

from __future__ import annotations

import numpy as np
import pytest

import distscan

from tests.support.devices import require_gpu
from tests.support.ranks import SELF

cp = require_gpu()
pytestmark = pytest.mark.gpu

from tests.gpu.test_operators import _close, _cpu  # noqa: E402

INITIAL = {"float32": 1.5, "float64": -2.25, "complex64": 1 - 2j, "complex128": 0.5 + 3j, "int64": 3}


@pytest.mark.parametrize("n", [257, 100_003, (1 << 21) + 7])  # the last past the look-ahead's threshold
@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128", "int64"])
def test_a_recurrence_with_and_without_an_initial_on_both_device_algorithms(dtype, n, rng):
    kind = np.dtype(dtype).kind
    b = (rng.integers(-9, 9, n) if kind == "i" else rng.standard_normal(n)).astype(dtype)
    a = (rng.integers(-2, 3, n) if kind == "i" else rng.uniform(-1, 1, n)).astype(dtype)
    if kind == "c":
        b = (b + 1j * rng.standard_normal(n)).astype(dtype)
        a = (a * np.exp(1j * rng.uniform(0, 6.3, n))).astype(dtype)
    flags = rng.random(n) < 0.002
    out = cp.empty(n, dtype)
    for algorithm in ("lookback", "lookahead"):
        for segments in (None, flags):
            for reverse in (False, True):
                for initial in (0, INITIAL[dtype], 0):  # without, with, and without again after with
                    where = (algorithm, segments is not None, reverse, initial)
                    ref = _cpu(distscan.linear_recurrence, a, b, reverse=reverse, segments=segments, initial=initial)
                    out.fill(np.nan if kind != "i" else -7)
                    got = distscan.linear_recurrence(cp.asarray(a), cp.asarray(b), reverse=reverse, initial=initial,
                                                     segments=None if segments is None else cp.asarray(segments),
                                                     out=out, algorithm=algorithm, comm=SELF)
                    assert got is out, where
                    try:
                        _close(got, ref, dtype, np.abs(ref).max(initial=1) * np.ones(n))
                    except AssertionError as exc:
                        raise AssertionError(f"{where}: {exc}") from None


@pytest.mark.parametrize("dtype", ["float32", "complex64"])
def test_a_constant_decay_with_an_initial_is_the_closed_form(dtype):
    """a = c everywhere, b = 0, y[-1] = y0: y[i] = c**(i + 1) * y0 on each algorithm, the
    projection of the composed a's alone (the copy with an initial); with y0 = 0 every output is
    0 (the copy without)."""
    n = 100_003
    c = np.asarray(0.9999, dtype)
    b = cp.zeros(n, dtype)
    want = (np.complex128(0.9999) if np.dtype(dtype).kind == "c" else 0.9999) ** np.arange(1, n + 1) * 2.0
    for algorithm in ("lookback", "lookahead"):
        got = distscan.linear_recurrence(cp.full(n, c), b, initial=2.0, algorithm=algorithm, comm=SELF)
        np.testing.assert_allclose(cp.asnumpy(got), want.astype(dtype), rtol=2e-3, err_msg=algorithm)
        got = distscan.linear_recurrence(cp.full(n, c), b, algorithm=algorithm, comm=SELF)
        assert not cp.any(got), algorithm
