"""Which device algorithm "auto" gives the scans with flags or coefficients
(``distscan.backends.cuda.plans.ext_device``), on the CPU: the look-ahead kernel for the float64
recurrence without segments from the sizes where the plain scan takes it, the look-back for every
other of them at every size (benchmarks/RESULTS.md, "Each thread's run scanned again from the
stage"), and a caller must say the result's kind (the choice depends on it)."""

from __future__ import annotations

import numpy as np
import pytest

from distscan.ops.options import call_op
from distscan.backends.cuda import plans


def _device(kind, dtype, n, *, segments=False, reverse=False, result_kind=None):
    op = call_op("sum", segments=1 if segments else None, coefficients=1 if kind == "affine" else None,
                 reverse=reverse)
    dt = np.dtype(dtype)
    rk = dt.kind if result_kind is None else result_kind
    return plans.ext_device(op, "auto", n, dt.itemsize, dt.itemsize, rk)


LARGE, SMALL = 1 << 24, 1 << 12


@pytest.mark.parametrize("reverse", [False, True])
def test_the_float64_recurrence_looks_ahead_from_the_plain_scans_size(reverse):
    assert plans.uses_lookahead(LARGE, 8, 8) and not plans.uses_lookahead(SMALL, 8, 8)
    assert _device("affine", "float64", LARGE, reverse=reverse) == "lookahead"
    assert _device("affine", "float64", SMALL, reverse=reverse) == "lookback"


@pytest.mark.parametrize("kind,dtype,segments", [
    ("affine", "float32", False), ("affine", "complex64", False), ("affine", "complex128", False),
    ("affine", "int64", False), ("affine", "float64", True), ("segmented", "float32", True),
    ("segmented", "int64", True), ("segmented", "float64", True)])
def test_the_other_state_scans_look_back_at_every_size(kind, dtype, segments):
    for n in (SMALL, LARGE, 1 << 28):
        assert _device(kind, dtype, n, segments=segments) == "lookback", (kind, dtype, segments, n)


def test_a_caller_must_name_the_result_s_kind():
    op = call_op("sum", segments=None, coefficients=1, reverse=False)
    with pytest.raises(TypeError):
        plans.ext_device(op, "auto", LARGE, 8, 8)  # (a default once gave the float64 recurrence the look-back)
    with pytest.raises(TypeError):
        plans.looks_back(op, 8, 8)


def test_a_named_algorithm_is_kept():
    for algorithm in ("lookback", "lookahead"):
        op = call_op("sum", segments=None, coefficients=1, reverse=False)
        assert plans.ext_device(op, algorithm, SMALL, 8, 8, "c") == algorithm
