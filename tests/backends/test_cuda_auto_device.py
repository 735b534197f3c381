"""Which device algorithm "auto" gives the scans with flags or coefficients
(``distscan.backends.cuda.plans.ext_device``), on the CPU: the look-ahead kernel for the float64
recurrence without segments, for the float32 one of one tame coefficient without segments (an EMA),
for the forward float32 one with an array of coefficients on a GPU of fast DRAM (an H200)
and for the forward segmented scans of 2- and 4-byte items (but gcd and lcm) from the sizes where
the plain scan takes it, the look-back for every other of them at every
size (benchmarks/RESULTS.md, "Each thread's run scanned again from the stage", "The forward
segmented scans on the look-ahead"), and a caller must say the result's kind (the choice depends
on it)."""

from __future__ import annotations

import numpy as np
import pytest

from distscan.ops.options import call_op
from distscan.backends.cuda import compile as cc, plans


def _device(kind, dtype, n, *, segments=False, reverse=False, result_kind=None, base="sum", coef_mode=0,
            fast_dram=False):
    op = call_op(base, segments=1 if segments else None, coefficients=1 if kind == "affine" else None,
                 reverse=reverse)
    dt = np.dtype(dtype)
    rk = dt.kind if result_kind is None else result_kind
    return plans.ext_device(op, "auto", n, dt.itemsize, dt.itemsize, rk, coef_mode, reverse=reverse,
                            fast_dram=fast_dram)


LARGE, SMALL = 1 << 24, 1 << 12


@pytest.mark.parametrize("reverse", [False, True])
def test_the_float64_recurrence_looks_ahead_from_the_plain_scans_size(reverse):
    assert plans.uses_lookahead(LARGE, 8, 8) and not plans.uses_lookahead(SMALL, 8, 8)
    assert _device("affine", "float64", LARGE, reverse=reverse) == "lookahead"
    assert _device("affine", "float64", SMALL, reverse=reverse) == "lookback"


@pytest.mark.parametrize("reverse", [False, True])
def test_the_float32_recurrence_of_one_tame_coefficient_looks_ahead_from_the_plain_scans_size(reverse):
    """An EMA (one ``a`` with ``|a| <= 1``: coefficient mode 2), unsegmented, either direction."""
    assert plans.uses_lookahead(LARGE, 4, 4) and not plans.uses_lookahead(SMALL, 4, 4)
    assert _device("affine", "float32", LARGE, reverse=reverse, coef_mode=cc.COEF_TAME) == "lookahead"
    assert _device("affine", "float32", SMALL, reverse=reverse, coef_mode=cc.COEF_TAME) == "lookback"


@pytest.mark.parametrize("coef_mode,segments,dtype,result_kind", [
    (0, False, "float32", None), (1, False, "float32", None),  # an array a, one untamed a
    (2, True, "float32", None),  # segmented: the look-back is faster there
    (2, False, "complex64", None), (2, False, "int32", None), (2, False, "float32", "i")])
def test_other_float32_sized_recurrences_look_back_whatever_their_coefficients(coef_mode, segments, dtype,
                                                                              result_kind):
    for n in (SMALL, LARGE, 1 << 28):
        for reverse in (False, True):
            for fast_dram in (False, True):
                if (coef_mode, segments, dtype, result_kind, reverse, fast_dram) == (0, False, "float32", None,
                                                                                    False, True):
                    continue  # (the forward array a on fast DRAM: the test below)
                assert _device("affine", dtype, n, segments=segments, reverse=reverse, coef_mode=coef_mode,
                               result_kind=result_kind, fast_dram=fast_dram) == "lookback", (
                    coef_mode, segments, dtype, n, reverse, fast_dram)


def test_the_forward_float32_recurrence_with_an_array_a_looks_ahead_on_fast_dram_only():
    """An H200's DRAM (plans.fast_dram), forwards, from the plain scan's size; reversed, or on an
    H100's DRAM, the look-back at every size."""
    assert _device("affine", "float32", LARGE, fast_dram=True) == "lookahead"
    assert _device("affine", "float32", SMALL, fast_dram=True) == "lookback"
    for n in (SMALL, LARGE, 1 << 28):
        assert _device("affine", "float32", n, fast_dram=True, reverse=True) == "lookback"
        assert _device("affine", "float32", n, fast_dram=False) == "lookback"


@pytest.mark.parametrize("dram_bw,fast", [(4.8e12, True), (4.0e12, True), (3.35e12, False), (None, False),
                                          (0, False)])
def test_fast_dram_is_the_device_s_reported_bandwidth_against_the_line(monkeypatch, dram_bw, fast):
    """An H200 reports 4.8 TB/s (its lead: plans.setup_lead), an H100 3.35; a device that does not
    report its clock or bus width (None) is not fast."""
    monkeypatch.setattr(plans, "device_info", lambda dev_id: {"dram_bw": dram_bw, "sms": 132})
    assert plans.fast_dram(0) is fast


def test_the_coefficient_mode_leaves_every_other_scan_s_choice():
    for kind, dtype, segments, base in [("segmented", "float32", True, "sum"), ("affine", "float64", False, "sum"),
                                        ("segmented", "int64", True, "sum"), ("affine", "float64", True, "sum")]:
        for n in (SMALL, LARGE):
            want = _device(kind, dtype, n, segments=segments, base=base)
            for mode in (1, 2):
                assert _device(kind, dtype, n, segments=segments, base=base, coef_mode=mode) == want


@pytest.mark.parametrize("base,dtype", [("sum", "float32"), ("max", "float32"), ("prod", "float32"),
                                        ("nansum", "float32"), ("sum", "int32"), ("min", "uint32"),
                                        ("sum", "float16"), ("max", "int16")])
def test_the_forward_segmented_scans_of_2_and_4_byte_items_look_ahead_from_the_plain_scans_size(base, dtype):
    size = np.dtype(dtype).itemsize
    assert plans.uses_lookahead(LARGE, size, size) and not plans.uses_lookahead(SMALL, size, size)
    assert _device("segmented", dtype, LARGE, segments=True, base=base) == "lookahead"
    assert _device("segmented", dtype, SMALL, segments=True, base=base) == "lookback"
    # reversed, their runs are cut by the end bits, and the look-ahead trails (RESULTS.md)
    assert _device("segmented", dtype, LARGE, segments=True, base=base, reverse=True) == "lookback"


@pytest.mark.parametrize("kind,dtype,segments,base", [
    ("affine", "float32", False, "sum"), ("affine", "complex64", False, "sum"),
    ("affine", "complex128", False, "sum"), ("affine", "int64", False, "sum"), ("affine", "float64", True, "sum"),
    ("segmented", "int64", True, "sum"), ("segmented", "float64", True, "sum"), ("segmented", "int8", True, "max"),
    ("segmented", "int32", True, "gcd"), ("segmented", "int32", True, "lcm")])
def test_the_other_state_scans_look_back_at_every_size(kind, dtype, segments, base):
    for n in (SMALL, LARGE, 1 << 28):
        assert _device(kind, dtype, n, segments=segments, base=base) == "lookback", (kind, dtype, segments, n)


def test_a_segmented_scan_of_4_byte_items_into_8_bytes_looks_back():
    """int32 summed into int64 (NumPy's cumsum of int32): its items are not the look-ahead's."""
    op = call_op("sum", segments=1)
    assert plans.ext_device(op, "auto", 1 << 28, 4, 8, "i") == "lookback"


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
