"""The one-rank call of reverse and state scans on the CPU (``ScanPlan.one_rank_state``, the CPU
backend's ``lean_state_scanner``: a plain reverse scan as NumPy's accumulate over mirrored views,
a state scan by the halves of its fused loops, ``backends/cpu_fused.one_rank``).

Its assumption: the call kind checked the arrays (``Kind.aux``, ``lean_arrays``), and the lean
route leaves in ``out`` the bits the plan's own route (``ScanPlan.run``) gives.  Each warm call
here must skip ``ScanPlan.run`` where the route takes the kind, and give the bits the long way
gives (a strided part, which the kind does not take) for every state scan, dtype, direction and
exclusiveness; empty parts, read-only parts, ``out=``, held results and segmented float products
with zeros and overflows included.  One rank (a communicator of one), serially.
"""

from __future__ import annotations

import numpy as np
import pytest

import distscan
from tests.support.data import strided_view
from tests.support.ranks import SELF




def _scans(f, a):
    """name -> (call of a part, whether the lean route takes its warm calls)."""
    return {
        "reverse sum": (lambda x, **kw: distscan.cumsum(x, reverse=True, comm=SELF, **kw), True),
        "reverse max": (lambda x, **kw: distscan.cummax(x, reverse=True, comm=SELF, **kw), True),
        "reverse exclusive sum": (lambda x, **kw: distscan.scan(x, "sum", exclusive=True, reverse=True, comm=SELF,
                                                                **kw), False),
        "reverse nancumsum": (lambda x, **kw: distscan.nancumsum(x, reverse=True, comm=SELF, **kw), False),
        "segmented sum": (lambda x, **kw: distscan.cumsum(x, segments=f, comm=SELF, **kw), True),
        "segmented exclusive sum": (lambda x, **kw: distscan.scan(x, "sum", exclusive=True, segments=f, comm=SELF,
                                                                  **kw), True),
        "segmented reverse min": (lambda x, **kw: distscan.cummin(x, segments=f, reverse=True, comm=SELF, **kw), True),
        "segmented reverse exclusive max": (lambda x, **kw: distscan.scan(x, "max", exclusive=True, segments=f,
                                                                          reverse=True, comm=SELF, **kw), True),
        "segmented product": (lambda x, **kw: distscan.cumprod(x, segments=f, comm=SELF, **kw), True),
    }


def _float_scans(f, a):
    return {
        "recurrence": (lambda x, **kw: distscan.linear_recurrence(a, x, comm=SELF, **kw), True),
        "recurrence reverse": (lambda x, **kw: distscan.linear_recurrence(a, x, reverse=True, comm=SELF, **kw), True),
        "recurrence scalar": (lambda x, **kw: distscan.linear_recurrence(0.75, x, comm=SELF, **kw), True),
        "recurrence segments": (lambda x, **kw: distscan.linear_recurrence(a, x, segments=f, comm=SELF, **kw), True),
        "recurrence reverse segments": (lambda x, **kw: distscan.linear_recurrence(a, x, segments=f, reverse=True,
                                                                                   comm=SELF, **kw), True),
        "compensated": (lambda x, **kw: distscan.cumsum(x, compensated=True, comm=SELF, **kw), True),
        "compensated reverse": (lambda x, **kw: distscan.cumsum(x, compensated=True, reverse=True, comm=SELF, **kw),
                                True),
    }


def _data(rng, n, dtype):
    if np.dtype(dtype).kind in "iu":
        x = rng.integers(-100, 100, n).astype(dtype)
    else:
        x = rng.standard_normal(n).astype(dtype)
        x[::53] = 0  # zeros in the products, -0.0 in the sums' signs
        x[7::101] = -0.0
    return x, rng.random(n) < 0.05, rng.uniform(-1, 1, n).astype(dtype if np.dtype(dtype).kind in "fc" else float)


def _check(name, call, lean, x, plan_runs):
    """Cold, warm, warm with out= (cold once first), and the long way: the same bits."""
    first = call(x)
    out = np.full(x.shape, 7, first.dtype)
    call(x, out=out)  # the kind with out=: cold
    del plan_runs[:]
    warm = call(x)
    out[...] = 7
    assert call(x, out=out) is out, name
    assert len(plan_runs) == (0 if lean else 2), f"{name}: {len(plan_runs)} plan runs"
    longway = call(strided_view(x)) if len(x) > 1 else first
    for got in (first, warm, out):
        np.testing.assert_array_equal(got, longway, err_msg=name)
        assert got.dtype == longway.dtype, name
    return warm


@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.uint16, np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 2, 1000, 70_001])
def test_warm_one_rank_calls_take_the_lean_route_and_give_the_long_ways_bits(dtype, n, rng, plan_runs):
    x, f, a = _data(rng, n, dtype)
    scans = dict(_scans(f, a), **(_float_scans(f, a) if np.dtype(dtype).kind == "f" else {}))
    for name, (call, lean) in scans.items():
        # a plain reverse sum of narrow integers accumulates in a wider dtype than its input: NumPy's
        # accumulate over mirrored views is taken only where it reads the input as it is
        widened = name == "reverse sum" and np.dtype(dtype).kind in "iu" and np.dtype(dtype).itemsize < 8
        _check(name, call, lean and not widened, x, plan_runs)


def test_complex_recurrences_and_coefficients_of_other_kinds(rng, plan_runs):
    n = 5003
    b = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex128)
    a = 0.9 * np.exp(1j * rng.uniform(0, 2 * np.pi, n))
    f = rng.random(n) < 0.01
    for name, a_ in (("array", a), ("complex scalar", 0.5 + 0.25j), ("float array", np.abs(a)), ("int", 1)):
        _check(name, lambda x, **kw: distscan.linear_recurrence(a_, x, segments=f, comm=SELF, **kw), True, b,
               plan_runs)


def test_empty_read_only_and_mutated_parts(rng, plan_runs):
    x, f, a = _data(rng, 3000, np.float64)
    for name, (call, _) in dict(_scans(f, a), **_float_scans(f, a)).items():
        want = call(x)
        call(x)  # warm
        ro = x.copy()
        ro.setflags(write=False)
        np.testing.assert_array_equal(call(ro), want, err_msg=name)
        y = x.copy()
        held = call(y)
        kept = held.copy()
        y[::3] += 1.5  # read anew by the next call; the held result stays
        np.testing.assert_array_equal(call(y), call(strided_view(y)), err_msg=name)
        np.testing.assert_array_equal(held, kept, err_msg=name)
    e, fe, ae = _data(rng, 0, np.float64)
    for name, (call, _) in dict(_scans(fe, ae), **_float_scans(fe, ae)).items():
        for _ in range(2):
            got = call(e)
            assert got.shape == (0,), name


def test_segmented_products_meet_zeros_and_overflows(rng, plan_runs):
    """A segmented float product's zero-absorption, by the loops' tail, on the lean route too."""
    n = 4000
    x = np.exp(rng.uniform(-5, 60, n)).astype(np.float32)  # float32 products overflow to inf within runs
    x[rng.random(n) < 0.01] = 0
    x[rng.random(n) < 0.005] = np.nan
    f = rng.random(n) < 0.003
    for reverse in (False, True):
        for exclusive in (False, True):
            def call(v, **kw):
                return distscan.scan(v, "prod", segments=f, reverse=reverse, exclusive=exclusive, comm=SELF, **kw)
            with np.errstate(all="ignore"):
                _check(f"prod reverse={reverse} exclusive={exclusive}", call, True, x, plan_runs)
