"""What the options of issue 30 refuse, on every rank together and never a hang: segment flags of
the wrong length on one rank, operators that are not associative, include_initial with exclusive,
compensated with another operator than a sum, a recurrence's exclusive form, and a projected
initial value (segmented scans) that differs across ranks.

Written for any rank count (serially and under mpiexec, tests/run.sh).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import distscan
from distscan import _call, _kinds

from tests.support.ranks import SELF

pytestmark = [pytest.mark.anyranks, pytest.mark.timeout(300)]


@pytest.mark.manyranks
def test_flags_of_the_wrong_length_on_one_rank_fail_everywhere(comm):
    x = np.arange(4.0)
    flags = np.zeros(4 if comm.rank != comm.size - 1 else 3, bool)
    with pytest.raises((ValueError, distscan.DistScanError), match="segments"):
        distscan.cumsum(x, segments=flags, comm=comm)
    assert distscan.cumsum(x, comm=comm)[0] == 6 * comm.rank  # the next call works


def test_unknown_combinations_are_refused(comm):
    x = np.arange(4.0)
    for kwargs, match in [({"op": np.subtract}, "not associative"), ({"op": np.power}, "not associative"),
                          ({"op": "sum", "exclusive": True, "include_initial": True}, "include_initial"),
                          ({"op": "max", "compensated": True}, "compensated")]:
        with pytest.raises((ValueError, TypeError), match=match):
            distscan.scan(x, comm=comm, **kwargs)
    with pytest.raises(ValueError, match="exclusive"):  # a recurrence has no exclusive form
        _call.Part(x, "sum", True, None, None, None, 0, "auto", "auto", "auto", coefficients=x)


@pytest.mark.manyranks
def test_projected_initial_must_agree_on_every_rank(comm):
    if comm.size == 1:
        pytest.skip("needs two ranks")
    x = np.arange(3.0)
    with pytest.raises((ValueError, distscan.DistScanError)):
        distscan.cumsum(x, segments=np.zeros(3, bool), initial=float(comm.rank), comm=comm)


def test_a_zero_initial_of_the_wrong_shape_is_refused():
    """linear_recurrence took an all-zero initial of any shape (it read zero as the default before
    the shape was checked); a zero row of the trailing shape is the default."""
    b = np.arange(12.0).reshape(4, 3)
    for bad in (np.zeros(2), np.zeros((5, 7))):
        with pytest.raises(ValueError, match="initial must be a scalar or match the trailing shape"):
            distscan.linear_recurrence(0.5, b, initial=bad, comm=SELF)
    np.testing.assert_array_equal(distscan.linear_recurrence(0.5, b, initial=np.zeros(3), comm=SELF),
                                  distscan.linear_recurrence(0.5, b, comm=SELF))


@pytest.mark.parametrize("a, b, what", [
    (0.5, np.array(["x"] * 4), "input dtype <U1"),            # NumPy's DTypePromotionError before (s42)
    (0.5, np.array([b"x"] * 4), "input dtype |S1"),
    (np.ones(4), np.arange(4).astype("M8[s]"), "input dtype datetime64"),
    (np.array(["x"] * 4), np.ones(4), "coefficients a dtype <U1"),  # it said "input dtype" of a
    (np.ones(4, "m8[s]"), np.ones(4), "coefficients a dtype timedelta64"),
    (np.ones(4, object), np.ones(4), "coefficients a dtype object"),
])
def test_a_recurrence_of_data_distscan_does_not_scan_is_refused_in_its_words(comm, a, b, what):
    """``linear_recurrence(0.5, strings)`` raised NumPy's DTypePromotionError from ``np.result_type``
    (the dtype of ``a*b + b``) before distscan's own check; now every such ``a`` or ``b`` is refused as
    a part of another dtype is, naming which of the two it is, on every rank (one rank's string
    part fails all of them)."""
    mine = comm.rank == comm.size - 1
    with pytest.raises(TypeError, match=rf"^(rank \d+: )?{re.escape(what)}.* is not supported: distscan scans bool"):
        distscan.linear_recurrence(a if mine else 0.5, b if mine else np.ones(4), comm=comm)
    np.testing.assert_allclose(distscan.linear_recurrence(0.5, np.ones(4), comm=comm)[:1],
                               [2 - 0.5 ** (4 * comm.rank)])


@pytest.mark.parametrize("by_keyword", [False, True])
def test_a_recurrence_whose_coefficients_are_none_is_refused_on_every_rank(comm, by_keyword):
    """``linear_recurrence(None, b)``: None in the options means "no recurrence", and the call
    returned the plain cumulative sum of ``b``, silently (red team, s43).  NumPy's ``None*y`` is a
    TypeError: refused, on every rank where one rank passes it, and the next call goes on."""
    mine = comm.rank == comm.size - 1
    b = np.ones(4)
    a = None if mine else 0.5
    with pytest.raises(TypeError, match=r"^(rank \d+: )?linear_recurrence\(\) got None as its coefficients a"):
        if by_keyword:
            distscan.linear_recurrence(a=a, b=b, comm=comm)
        else:
            distscan.linear_recurrence(a, b, reverse=True, segments=b > 0, comm=comm)
    np.testing.assert_allclose(distscan.linear_recurrence(0.5, b, comm=comm)[:1], [2 - 0.5 ** (4 * comm.rank)])


def test_a_python_int_coefficient_beyond_int64_with_a_float_dtype_is_taken_as_numpy_takes_it():
    """``linear_recurrence(2**70, b, dtype=float)``: NumPy's ``np.multiply(2**70, y, dtype=float)``
    takes the Python int (it is weak); the check of ``a`` against ``dtype=`` read its object array and
    refused "Cannot cast the coefficients a from dtype('O')" (red team, s43).  Without ``dtype=`` it
    was taken already on NumPy 2.  A Python float with an integer dtype is still refused, as NumPy
    refuses it."""
    b = np.arange(3)
    expected = [0.0, 1.0, 2.0 ** 70 + 2]
    np.testing.assert_array_equal(distscan.linear_recurrence(2 ** 70, b, dtype=float, comm=SELF), expected)
    # Without dtype=: what NumPy gives 2**70 * y + y.  NumPy 2 (NEP 50: a Python int is weak) gives
    # float64; NumPy 1 an object array, which the call refuses.  Either way a call after one of the
    # same kind with a small int a gives the same: it was run from the call kind's cache in float64
    # on NumPy 1 (the cache keys a Python number by its type; floors CI, s43), where a first call
    # was refused.
    for warm in (False, True):
        if warm:
            distscan.linear_recurrence(3, b.astype(float), comm=SELF)
        else:
            _kinds.KINDS.clear()
        if np.lib.NumpyVersion(np.__version__) >= "2.0.0":
            np.testing.assert_array_equal(distscan.linear_recurrence(2 ** 70, b.astype(float), comm=SELF), expected)
        else:
            with pytest.raises(TypeError, match="requested dtype object is not supported"):
                distscan.linear_recurrence(2 ** 70, b.astype(float), comm=SELF)
    with pytest.raises(TypeError, match="Cannot cast the coefficients a from dtype\\('float64'\\) to dtype\\('int64'\\)"):
        distscan.linear_recurrence(0.5, b, dtype=np.int64, comm=SELF)
    with pytest.raises(OverflowError, match="out of bounds for int64"):
        distscan.linear_recurrence(2 ** 70, b, dtype=np.int64, comm=SELF)


@pytest.mark.parametrize("initial", ["", b"", np.str_("")])
def test_a_false_initial_that_is_not_a_number_is_refused_as_the_call_refuses_it(initial):
    """``linear_recurrence(a, b, initial="")``: the test for a zero ``initial`` (which contributes
    nothing) took any false scalar for one, so an empty string went through as 0 where
    ``cumsum(x, initial="")`` and NumPy refuse it (red team, s43).  A number's zero still is one."""
    b = np.arange(4.0)
    with pytest.raises(ValueError, match="could not convert string to float"):
        distscan.linear_recurrence(0.5, b, initial=initial, comm=SELF)
    with pytest.raises(ValueError, match="could not convert string to float"):
        distscan.cumsum(b, initial=initial, comm=SELF)
    for zero in (0, 0.0, False, np.float32(0), np.array(0)):
        np.testing.assert_array_equal(distscan.linear_recurrence(0.5, b, initial=zero, comm=SELF),
                                      [0.0, 1.0, 2.5, 4.25])
