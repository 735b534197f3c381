"""Memory layouts and ``out=``, in two modes (serial, and split over the ranks: tests.support.two_modes):
non-contiguous, negative-stride, transposed, Fortran-ordered and byte-swapped inputs; results
C-contiguous for any axis; ``out=`` overlapping the input, ``out=`` of another dtype (NumPy's cast),
and a wrong ``out=`` on one rank only.  Comparisons as in tests/test_api_numpy_cases.py.
"""

from __future__ import annotations

import numpy as np
import pytest

import distscan

from tests.support.ranks import SELF
from tests.support.reference import Ref, assert_matches
from tests.support.two_modes import NAMED, Ctx, assert_is_out, check_scan, ops_for

pytestmark = [pytest.mark.anyranks, pytest.mark.timeout(60)]


@pytest.mark.parametrize("dtype", ["int16", "uint32", "int64", "float16", "float32", "float64", "complex64"])
def test_noncontiguous_fortran_byteswapped_inputs(ctx, dtype):
    """Non-contiguous, negative-stride, transposed, Fortran-ordered and byte-swapped inputs give
    NumPy's results (numpy test_ufunc test_reduce_noncontig_output's strided view included)."""
    rng = ctx.rng
    base = rng.integers(-20, 20, (13, 8, 6)).astype(dtype)

    def strided(p):      # every other column of a wider buffer, last axis reversed
        q = np.empty((p.shape[0], 2 * p.shape[1], p.shape[2]), p.dtype)[:, ::2, ::-1]
        q[...] = p
        return q

    def reversed_rows(p):
        q = np.empty_like(p)[::-1]
        q[...] = p
        return q

    layouts = {
        "F": np.asfortranarray,
        "strided": strided,
        "transposed": lambda p: np.ascontiguousarray(p.transpose(0, 2, 1)).transpose(0, 2, 1),
        "swapped": lambda p: p.astype(p.dtype.newbyteorder()),
        "reversed": reversed_rows,
    }
    for name, prep in layouts.items():
        for opname in ops_for(dtype):
            src = base if opname != "prod" or np.dtype(dtype).kind in "iu" else (1 + base.real / 100).astype(dtype)
            for axis in (0, 1, -1, None):
                check_scan(ctx, src, opname, axis=axis, prepare=prep, what=name)
    x = np.arange(7 * 13 * 8, dtype=np.int16).reshape(7, 13, 8)[4:6, 1:11:6, 1:5].transpose(1, 2, 0)
    for axis in (0, 1, 2):
        check_scan(ctx, x, "sum", axis=axis, counts=np.array([x.shape[0]] + [0] * (ctx.size - 1)))


@pytest.mark.parametrize("opname", ["sum", "prod", "max", "min"])
@pytest.mark.parametrize("order", ["C", "F"])
def test_result_is_c_contiguous_for_any_axis(ctx, opname, order):
    """NumPy's cumulative results are freshly allocated C-contiguous arrays for any axis."""
    g = np.arange(1, 5 * 4 * 3 + 1, dtype=np.float64).reshape(5, 4, 3) / 50
    c = ctx.counts(5)
    part = Ctx.rows(g, c, ctx.rank).copy(order=order)
    for axis in (0, 1, 2, -1, None):
        for exclusive in (False, True):
            got = ctx.run(lambda: NAMED[opname](part, axis=axis, exclusive=exclusive, comm=ctx.comm))
            ctx.check(lambda: np.testing.assert_equal(
                got.flags.c_contiguous, True,
                err_msg=f"cum{opname} axis={axis} exclusive={exclusive} of a {order}-ordered input: "
                        f"strides {got.strides}, shape {got.shape}"))


@pytest.mark.parametrize("strategy", ["reduce_then_scan", "scan_then_add"])
@pytest.mark.parametrize("exclusive", [False, True])
def test_out_overlapping_the_input(ctx, strategy, exclusive):
    """out= that is the input, or a view of the same buffer shifted by one element: the result is
    NumPy's scan of the input as it was before the call (NumPy buffers overlapping operands).
    Long enough that a rank scans its part in several chunks."""
    n = 300_000 * ctx.size + 7
    g = np.arange(n, dtype=np.int64) % 1000 - 500
    for c in ctx.all_counts(n)[:2]:
        mine = Ctx.rows(g, c, ctx.rank)
        ref = Ref(g, "sum", exclusive=exclusive).part(c, ctx.rank, 1)
        # out is the input
        x = mine.copy()
        res = ctx.run(lambda: distscan.cumsum(x, out=x, exclusive=exclusive, strategy=strategy, comm=ctx.comm))
        ctx.check(lambda: (assert_is_out(res, x), assert_matches(x, ref, what="out=x")))
        # out one element ahead of / behind the input, in one buffer
        for shift in (1, -1):
            buf = np.empty(len(mine) + 1, np.int64)
            if shift == 1:
                x, out = buf[:-1], buf[1:]
            else:
                x, out = buf[1:], buf[:-1]
            x[...] = mine
            res = ctx.run(lambda: distscan.cumsum(x, out=out, exclusive=exclusive, strategy=strategy, comm=ctx.comm))
            ctx.check(lambda: (assert_is_out(res, out), assert_matches(out, ref, what=f"out shifted by {shift}")))
    # every operator in place, exclusive or not
    g3 = (np.arange(60) % 7 - 3).astype(np.int64)
    c = ctx.counts(60)
    for opname in ("prod", "max", "min"):
        x = Ctx.rows(g3, c, ctx.rank).copy()
        ctx.run(lambda: NAMED[opname](x, out=x, exclusive=exclusive, strategy=strategy, comm=ctx.comm))
        ctx.check(lambda: assert_matches(x, Ref(g3, opname, exclusive=exclusive).part(c, ctx.rank, 1),
                                         what=f"{opname} out=x"))
    # out= a flat view of the (2-D) input, axis=None
    g4 = (np.arange(30 * 4) % 11).reshape(30, 4).astype(np.int64)
    c = ctx.counts(30)
    x = Ctx.rows(g4, c, ctx.rank).copy()
    out = x.reshape(-1)
    res = ctx.run(lambda: distscan.cumsum(x, out=out, axis=None, exclusive=exclusive, strategy=strategy,
                                          comm=ctx.comm))
    ctx.check(lambda: (assert_is_out(res, out),
                       assert_matches(out, Ref(g4, "sum", axis=None, exclusive=exclusive).part(c, ctx.rank, 4),
                                      what="axis=None out=x.reshape(-1)")))
    # an int32 input that lies in the first half of its own int64 out (a cast plus an overlap)
    n5 = 200_000 * ctx.size + 3
    g5 = (np.arange(n5) % 1000 - 500).astype(np.int32)
    c = ctx.counts(n5)
    mine = Ctx.rows(g5, c, ctx.rank)
    out = np.zeros(len(mine), np.int64)
    x = out.view(np.int32)[:len(mine)]
    x[...] = mine
    res = ctx.run(lambda: distscan.cumsum(x, out=out, exclusive=exclusive, strategy=strategy, comm=ctx.comm))
    ctx.check(lambda: (assert_is_out(res, out),
                       assert_matches(out, Ref(g5, "sum", exclusive=exclusive).part(c, ctx.rank, 1),
                                      what="int32 input inside its int64 out")))
    # along a local axis too
    g2 = (np.arange(40 * 7) % 13).reshape(40, 7).astype(np.float64)
    c = ctx.counts(40)
    x = Ctx.rows(g2, c, ctx.rank).copy()
    ctx.run(lambda: distscan.cumsum(x, out=x, axis=1, exclusive=exclusive, comm=ctx.comm))
    ctx.check(lambda: assert_matches(x, Ref(g2, "sum", axis=1, exclusive=exclusive).part(c, ctx.rank, 7), what="axis=1 out=x"))


def test_out_of_another_dtype_casts_as_numpy(ctx):
    """out= of a dtype other than the default result's: NumPy computes in its loop's dtype for
    (out, input) -- dtype= if given -- and casts each result into out (numpy/_core/tests/
    test_ufunc.py, out dtype resolution; CuPy's test_cumsum_out / test_out_dtype_cast).  distscan
    does the same on every rank's part, byte-swapped out included."""
    with np.errstate(all="ignore"):
        g = np.arange(12, dtype=np.int32).reshape(6, 2)
        cases = [(g, {}, dt) for dt in (np.float32, np.int32, np.int8, np.complex128, ">i8", np.bool_)]
        cases += [(g.astype(np.float64) + 0.5, {}, np.int64), (np.full((6, 2), 2.0 ** 62).astype(np.int64), {}, np.float64),
                  (g.astype(np.float64) + 0.5, {"dtype": np.int64}, np.float64)]
        c = ctx.counts(6)
        for glob, kw, out_dtype in cases:
            part = Ctx.rows(glob, c, ctx.rank).copy()
            out = np.zeros(part.shape, out_dtype)
            res = ctx.run(lambda: distscan.cumsum(part, out=out, comm=ctx.comm, **kw))
            want = np.cumsum(glob, axis=0, out=np.zeros(glob.shape, out_dtype), **kw)
            ctx.check(lambda: np.testing.assert_array_equal(res, Ctx.rows(want, c, ctx.rank)))
            ctx.check(lambda: (res is out) or pytest.fail("out is not returned"))
        f = rng_float = ctx.rng.standard_normal((6, 2))
        part = Ctx.rows(rng_float, c, ctx.rank).copy()
        out = np.zeros(part.shape, np.float32)
        ctx.run(lambda: distscan.cummax(part, out=out, comm=ctx.comm))
        want = np.maximum.accumulate(f, axis=0, out=np.zeros(f.shape, np.float32))
        ctx.check(lambda: np.testing.assert_array_equal(out, Ctx.rows(want, c, ctx.rank)))


def test_bad_out_on_one_rank_raises_everywhere(ctx):
    """A wrong out= on one rank only (rank 1; rank 0 when alone): every rank raises, nobody hangs.
    An out whose dtype changes what the ranks compute in (float32 out: float64, against int64
    on the others) is a mismatch across ranks; alone, it is NumPy's cast."""
    odd = 1 if ctx.size > 1 else 0
    part = np.arange(4, dtype=np.int64)
    out = np.empty(5 if ctx.rank == odd else 4, np.int64)
    ctx.raises(ValueError, lambda: distscan.cumsum(part, out=out, comm=ctx.comm))
    out = np.empty(4, np.float32 if ctx.rank == odd else np.int64)
    if ctx.size > 1:
        ctx.raises(ValueError, lambda: distscan.cumsum(part, out=out, comm=ctx.comm), match="differs across ranks")
    else:
        np.testing.assert_array_equal(distscan.cumsum(part, out=out, comm=ctx.comm), np.cumsum(part))
    # an out of another dtype that computes alike (int32 out of an int64 scan: computed in int64)
    out = np.empty(4, np.int32 if ctx.rank == odd else np.int64)
    res = ctx.run(lambda: distscan.cumsum(part, out=out, comm=ctx.comm))
    want = np.cumsum(np.tile(part, ctx.size if ctx.distributed else 1))[4 * ctx.rank:4 * ctx.rank + 4]
    ctx.check(lambda: np.testing.assert_array_equal(res, want.astype(out.dtype)))


@pytest.mark.parametrize("kwargs", [{"reverse": True}, {"timings": {}}, {"op": "nansum", "reverse": True}],
                         ids=["reverse", "timings", "nansum-reverse"])
def test_out_is_returned_on_every_call(kwargs):
    """NumPy's out= returns out itself (``np.cumsum(x, out=o) is o``), and distscan's first call does:
    so must the second and third of the same kind.  One rank (COMM_SELF) at any launch size."""
    results = []
    for _ in range(3):
        x = np.arange(1.0, 5.0)
        out = np.zeros(4)
        y = distscan.scan(x, out=out, comm=SELF, **{"op": "sum", **kwargs})
        results.append(y is out)
    assert results == [True, True, True]
