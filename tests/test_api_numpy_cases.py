"""Cumulative-scan test cases of peer projects, ported to distscan and checked against NumPy.

Every test runs in two modes (the ``ctx`` fixture):

``serial``  ``comm=MPI.COMM_SELF``: the whole array on one rank (runs in a plain ``pytest`` run,
            and on every rank, independently, under ``mpiexec``).
``dist``    marked ``mpi``: the global NumPy array is split along axis 0 over ``MPI.COMM_WORLD``
            (uneven parts, some ranks empty, all rows on one rank, ...); each rank scans its part
            with distscan and compares it with its slice of NumPy's result on the whole array.
            Runs under ``mpiexec -n K python -m pytest --with-mpi``.

Sources of the cases (each test names its own):

- NumPy (numpy/numpy): ``numpy/lib/tests/test_function_base.py`` (TestCumsum, TestCumprod,
  test_cumulative_include_initial), ``numpy/_core/tests/test_ufunc.py`` (accumulate: zero-size,
  byte order, out byte order, out shape, out dtype resolution, dtype=int32 with out),
  ``numpy/_core/tests/test_umath.py`` (test_memoverlap_accumulate*),
  ``numpy/_core/tests/test_regression.py`` (test_zerosize_accumulate),
  ``numpy/lib/tests/test_nanfunctions.py`` (TestNanFunctions_CumSumProd: allnans, empty,
  keepdims, out), ``numpy/ma/tests/test_core.py`` (test_cumsumprod),
  ``numpy/matrixlib/tests/test_interaction.py`` (cumulative functions on np.matrix).
- Dask (dask/dask): ``dask/array/tests/test_reductions.py`` (test_array_cumreduction_axis,
  test_array_cumreduction_dtype, test_array_cumreduction_ufunc, test_array_cumreduction_out).
- CuPy (cupy/cupy): ``tests/cupy_tests/math_tests/test_sumprod.py`` (TestCumsum, TestCumprod,
  TestCumulativeSumProd, TestCubReduction.test_cub_cumsum/test_cub_cumprod).
- Heat (helmholtz-analytics/heat): ``tests/core/test_arithmetics.py`` (formerly
  ``heat/core/tests/test_arithmetics.py``; test_cumsum, test_cumprod, test_cumsum_, test_cumprod_).
- Array API test suite (data-apis/array-api-tests): ``array_api_tests/test_statistical_functions.py``
  (test_cumulative_sum, test_cumulative_prod); ``include_initial=True`` maps to distscan's
  exclusive scan followed by ``reduce``.

Plus the cases the port needs that no peer states directly: integer wrap-around, cumprod with
zeros and overflow, scalars, results C-contiguous for any axis, out= overlapping the input.

Comparisons: integer and bool results exactly (wrap-around included); float and complex results
against a float64/complex128 reference computed from the input cast to the result dtype (NumPy
casts to ``dtype=`` first), with ``|got - ref| <= TOL[dtype] * M``, where M is the running sum of
``|x|`` for sums and ``|ref|`` for products (float16 sums/products accumulate in float32 in
distscan, on purpose; see README).  NaN and +-inf must appear exactly where the reference, rounded
to the result dtype, has them.

Random data is seeded; the seed is printed (``DISTSCAN_PEERS_SEED=<seed>`` repeats a run).
"""

from __future__ import annotations

import itertools
import os

import numpy as np
import pytest

import distscan

from mpi4py import MPI

pytestmark = [pytest.mark.anyranks, pytest.mark.timeout(60)]

# |error| <= TOL * magnitude (see module docstring), by result dtype (complex: its float part).
TOL = {np.dtype(np.float16): 1e-3, np.dtype(np.float32): 1e-4, np.dtype(np.float64): 1e-12}

ALL_DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
              "float16", "float32", "float64", "complex64", "complex128"]
INT_DTYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]
FLOAT_DTYPES = ["float16", "float32", "float64"]

UFUNCS = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum,
          "logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor,
          "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor}
NAMED = {"sum": distscan.cumsum, "prod": distscan.cumprod, "max": distscan.cummax, "min": distscan.cummin}
LOGICAL = ("logical_and", "logical_or", "logical_xor")


# ---------------------------------------------------------------------------------------------
# The two modes, collective-safe calls and checks
# ---------------------------------------------------------------------------------------------

class Ctx:
    """The communicator of one test, its seeded generator, and collective-safe helpers."""

    def __init__(self, comm, distributed, seed):
        self.comm = comm
        self.distributed = distributed
        self.size = comm.Get_size()
        self.rank = comm.Get_rank()
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self._scheme = 0

    # -- splitting the global array over the ranks ---------------------------------------------

    def _split(self, n, scheme):
        p = self.size
        if p == 1:
            return np.array([n])
        if scheme == 0:    # random cuts: uneven, sometimes empty parts
            cuts = np.sort(self.rng.integers(0, n + 1, p - 1))
            return np.diff(np.concatenate([[0], cuts, [n]]))
        if scheme == 1:    # rank 0 empty, the rest uneven (more on later ranks)
            counts = np.zeros(p, int)
            weights = np.arange(1, p)
            counts[1:] = n * weights // weights.sum()
            counts[-1] += n - counts.sum()
            return counts
        if scheme == 2:    # everything on the last rank
            counts = np.zeros(p, int)
            counts[-1] = n
            return counts
        # scheme 3: a middle rank empty, the first rank one row short of half
        counts = np.zeros(p, int)
        counts[0] = max(0, n // 2 - 1)
        counts[-1] = n - counts[0]
        return counts

    def counts(self, n):
        """One split of n rows (a different scheme each call, so a test covers several)."""
        c = self._split(n, self._scheme % 4)
        self._scheme += 1
        return c

    def all_counts(self, n):
        """Every split scheme of n rows (for the cases that matter most)."""
        seen, out = set(), []
        for s in range(4):
            c = self._split(n, s)
            if tuple(c) not in seen:
                seen.add(tuple(c))
                out.append(c)
        return out

    @staticmethod
    def rows(g, counts, rank):
        lo = int(np.sum(counts[:rank]))
        return g[lo:lo + int(counts[rank])]

    # -- collective safety ---------------------------------------------------------------------

    def _gather_failures(self, err):
        if not self.distributed:
            return [(0, err)] if err is not None else []
        msgs = self.comm.allgather(None if err is None else f"{type(err).__name__}: {err}")
        return [(r, m) for r, m in enumerate(msgs) if m is not None]

    def run(self, fn):
        """``fn()``; if it raised on any rank, raise on every rank (this rank's own error if any)."""
        try:
            result, err = fn(), None
        except Exception as exc:  # noqa: BLE001 - agreed below
            result, err = None, exc
        bad = self._gather_failures(err)
        if err is not None:
            raise err
        if bad:
            raise AssertionError("other ranks raised: " + "; ".join(f"rank {r}: {m}" for r, m in bad))
        return result

    def check(self, fn):
        """Run the assertions in ``fn`` on every rank; fail on every rank if they failed on any."""
        try:
            fn()
            err = None
        except Exception as exc:  # noqa: BLE001
            err = exc
        bad = self._gather_failures(err)
        if bad:
            lines = [f"rank {r}: {m if isinstance(m, str) else type(m).__name__ + ': ' + str(m)}" for r, m in bad]
            raise AssertionError(f"[seed {self.seed}] " + "\n".join(lines))

    def raises(self, types, fn, match=None):
        """``fn()`` must raise one of ``types`` on every rank (and nobody may hang)."""
        import re

        try:
            fn()
            err = AssertionError(f"DID NOT RAISE {types}")
        except types as exc:
            err = None if match is None or re.search(match, str(exc)) else AssertionError(
                f"{type(exc).__name__}: {exc!s} does not match {match!r}")
        except Exception as exc:  # noqa: BLE001
            err = AssertionError(f"expected {types}, got {type(exc).__name__}: {exc}")
        bad = self._gather_failures(err)
        if bad:
            raise AssertionError(f"[seed {self.seed}] " + "\n".join(f"rank {r}: {m}" for r, m in bad))


@pytest.fixture(params=[pytest.param("serial", id="serial"),
                        pytest.param("dist", id="dist", marks=pytest.mark.mpi)])
def ctx(request):
    distributed = request.param == "dist"
    comm = MPI.COMM_WORLD.Dup() if distributed else MPI.COMM_SELF
    env = os.environ.get("DISTSCAN_PEERS_SEED")
    seed = int(env) if env else np.random.SeedSequence().entropy
    if distributed:
        seed = comm.bcast(seed)
    print(f"seed={seed} (DISTSCAN_PEERS_SEED={seed} repeats this run), mode={request.param}, "
          f"ranks={comm.Get_size()}")
    yield Ctx(comm, distributed, seed)
    if distributed:
        comm.Free()


# ---------------------------------------------------------------------------------------------
# NumPy reference on the global array, and the comparison
# ---------------------------------------------------------------------------------------------

def identity(opname, dtype):
    dtype = np.dtype(dtype)
    if opname == "sum":
        return np.zeros((), dtype)[()]
    if opname == "prod":
        return np.ones((), dtype)[()]
    if opname in ("max", "min"):
        low = opname == "max"
        if dtype.kind == "f":
            return dtype.type(-np.inf if low else np.inf)
        if dtype.kind == "b":
            return np.bool_(not low)
        info = np.iinfo(dtype)
        return dtype.type(info.min if low else info.max)
    if opname == "logical_and":
        return np.True_
    if opname in ("logical_or", "logical_xor"):
        return np.False_
    if opname == "bitwise_and":
        return np.array(-1).astype(dtype)[()] if dtype.kind != "b" else np.True_
    return np.zeros((), dtype)[()]


def numpy_result_dtype(opname, in_dtype, dtype=None):
    """The dtype NumPy gives (byte order is native in a result)."""
    in_dtype = np.dtype(in_dtype).newbyteorder("=")
    if opname in LOGICAL:
        return np.dtype(bool)
    if dtype is not None:
        return np.dtype(dtype)
    if opname == "sum":
        return np.cumsum(np.zeros(1, in_dtype)).dtype
    if opname == "prod":
        return np.cumprod(np.ones(1, in_dtype)).dtype
    return UFUNCS[opname].accumulate(np.zeros(1, in_dtype)).dtype


def _scan0(x, opname, dt, exclusive, initial):
    uf = UFUNCS[opname]
    if exclusive or initial is not None:
        first = identity(opname, dt) if initial is None else initial
        first = np.broadcast_to(np.asarray(first).astype(dt), (1,) + x.shape[1:])
        x = np.concatenate([first, x.astype(dt)])
    with np.errstate(all="ignore"):
        r = uf.accumulate(x, axis=0, dtype=dt) if x.shape[0] else x.astype(dt)
    if exclusive or initial is not None:
        r = r[:-1] if exclusive else r[1:]
    return r


class Ref:
    """NumPy's scan of the whole array: ``dtype``, exact values or (wide values, magnitude)."""

    def __init__(self, g, opname, axis=0, dtype=None, exclusive=False, initial=None):
        g = np.asarray(g)
        self.dtype = numpy_result_dtype(opname, g.dtype, dtype)
        flat = axis is None
        if flat:
            g = g.reshape(-1)
        ax = 0 if flat else axis % g.ndim
        x = np.moveaxis(g, ax, 0)
        self.exact = self.wide = self.mag = None
        if self.dtype.kind in "fc" and opname in ("sum", "prod"):
            wide = np.dtype(np.complex128 if self.dtype.kind == "c" else np.float64)
            with np.errstate(all="ignore"):
                xw = x.astype(self.dtype).astype(wide)  # NumPy casts the input to dtype= first
            init = None if initial is None else np.asarray(initial).astype(self.dtype).astype(wide)
            w = _scan0(xw, opname, wide, exclusive, init)
            if opname == "sum" and wide.kind == "c":   # rounding errors per component
                m = (_scan0(np.abs(xw.real), "sum", np.float64, exclusive, None if init is None else np.abs(init.real))
                     + 1j * _scan0(np.abs(xw.imag), "sum", np.float64, exclusive,
                                   None if init is None else np.abs(init.imag)))
            elif opname == "sum":
                m = _scan0(np.abs(xw), "sum", np.float64, exclusive, None if init is None else np.abs(init))
            else:
                m = np.abs(w)
            self.wide = np.moveaxis(w, 0, ax)
            self.mag = np.moveaxis(m, 0, ax)
        else:
            with np.errstate(all="ignore"):
                xe = (x != 0) if opname in LOGICAL else x.astype(self.dtype)
            self.exact = np.moveaxis(_scan0(xe, opname, self.dtype, exclusive, initial), 0, ax)
        self.flat = flat
        self.row_size = int(np.prod(g.shape[1:])) if not flat else 1

    def part(self, counts, rank, row_size):
        """This rank's part: rows along axis 0, or a flat slice when axis=None."""
        def cut(a):
            if a is None:
                return None
            lo = int(np.sum(counts[:rank])) * (row_size if self.flat else 1)
            n = int(counts[rank]) * (row_size if self.flat else 1)
            return a[lo:lo + n]
        p = Ref.__new__(Ref)
        p.__dict__.update(self.__dict__)
        p.exact, p.wide, p.mag = cut(self.exact), cut(self.wide), cut(self.mag)
        return p

    @property
    def shape(self):
        return (self.exact if self.exact is not None else self.wide).shape

    def expected_rounded(self):
        if self.exact is not None:
            return self.exact
        with np.errstate(all="ignore"):
            return self.wide.astype(self.dtype)


def assert_matches(got, ref: Ref, *, tol=None, nonfinite_equiv=False, what=""):
    """``got`` (an ndarray) against the reference (see module docstring)."""
    assert isinstance(got, np.ndarray), f"{what}: result is {type(got).__name__}, not ndarray"
    assert got.dtype == ref.dtype, f"{what}: dtype {got.dtype}, NumPy gives {ref.dtype}"
    assert got.shape == ref.shape, f"{what}: shape {got.shape}, expected {ref.shape}"
    if ref.exact is not None:
        np.testing.assert_array_equal(got, ref.exact, err_msg=what, strict=True)
        return
    fdt = np.dtype(got.dtype.char.lower()) if got.dtype.kind == "c" else got.dtype
    tol = TOL[fdt] if tol is None else tol
    rounded = ref.expected_rounded()
    if got.dtype.kind == "c":
        # A complex value is NaN if a component is NaN, else inf if a component is inf (np.isnan,
        # np.isinf); which component carries the NaN is not compared (nan+0j and nan+nanj are both
        # complex NaN, and the association of the products decides between them).
        def classify(z):
            return np.where(np.isnan(z), 1, np.where(np.isinf(z), 2, 0))
        gc, ec = classify(got), classify(rounded)
        if nonfinite_equiv:
            # CuPy's _mitigate_cumprod: complex overflow may end as inf or nan depending on order.
            gc, ec = gc != 0, ec != 0
        if not np.array_equal(gc, ec):
            idx = np.argwhere(gc != ec)[:5]
            sel = tuple(idx.T)
            raise AssertionError(f"{what}: NaN/inf positions differ from NumPy's at {idx.tolist()}: "
                                 f"got {got[sel]}, expected {rounded[sel]}")
        finite = (gc == 0) & (ec == 0)
        parts = [np.real, np.imag]
    else:
        finite = None
        parts = [lambda a: a]
    for part in parts:
        g = part(got).astype(np.float64)
        e = part(rounded).astype(np.float64)
        w = part(ref.wide).astype(np.float64)
        if finite is None:
            if nonfinite_equiv:
                np.testing.assert_array_equal(~np.isfinite(g), ~np.isfinite(e), err_msg=f"{what}: non-finite positions")
            for name, test in (("NaN", np.isnan), ("+inf", np.isposinf), ("-inf", np.isneginf)):
                gm, em = test(g), test(e)
                if not nonfinite_equiv and not np.array_equal(gm, em):
                    idx = np.argwhere(gm != em)[:5].tolist()
                    raise AssertionError(f"{what}: {name} positions differ from NumPy's at {idx}: "
                                         f"got {g[tuple(np.array(idx).T)] if idx else ''}, "
                                         f"expected {e[tuple(np.array(idx).T)] if idx else ''}")
        fin = np.isfinite(e) & np.isfinite(g) & (True if finite is None else finite)
        with np.errstate(invalid="ignore"):
            err = np.abs(g - w)
        mag = part(ref.mag) if np.iscomplexobj(ref.mag) else ref.mag
        mag = np.where(np.isfinite(mag), mag, np.inf).astype(np.float64)
        allowed = tol * mag + np.finfo(fdt).tiny
        bad = fin & ~(err <= allowed)
        if bad.any():
            idx = np.argwhere(bad)[:5]
            sel = tuple(idx.T)
            raise AssertionError(f"{what}: {int(bad.sum())} values off by more than {tol} x magnitude; "
                                 f"at {idx.tolist()}: got {g[sel]}, expected {w[sel]}")


def call_scan(ctx, part, opname, *, via="named", **kwargs):
    kwargs = {k: v for k, v in kwargs.items() if v is not _UNSET}
    if via == "named":
        return ctx.run(lambda: NAMED[opname](part, comm=ctx.comm, **kwargs))
    if via == "exclusive_scan":
        kwargs.pop("exclusive", None)
        return ctx.run(lambda: distscan.exclusive_scan(part, opname, comm=ctx.comm, **kwargs))
    return ctx.run(lambda: distscan.scan(part, opname, comm=ctx.comm, **kwargs))


_UNSET = object()


def check_scan(ctx, g, opname, *, axis=_UNSET, dtype=_UNSET, exclusive=_UNSET, initial=_UNSET,
               counts=None, prepare=None, via=None, tol=None, nonfinite_equiv=False, what="",
               extra=None):
    """Split ``g`` over the ranks, scan each part with distscan, compare with NumPy on ``g``."""
    g = np.asarray(g)
    if via is None:
        via = "named" if opname in NAMED else "scan"
    if via == "exclusive_scan":
        exclusive = True
    counts = ctx.counts(g.shape[0]) if counts is None else counts
    part = Ctx.rows(g, counts, ctx.rank).copy()
    if prepare is not None:
        part = prepare(part)
    before = part.copy()
    got = call_scan(ctx, part, opname, via=via, axis=axis, dtype=dtype, exclusive=exclusive,
                    initial=initial, **(extra or {}))
    ref = Ref(g, opname, axis=0 if axis is _UNSET else axis, dtype=None if dtype is _UNSET else dtype,
              exclusive=False if exclusive is _UNSET else exclusive,
              initial=None if initial is _UNSET else initial)
    row_size = int(np.prod(g.shape[1:])) if g.ndim else 1
    mine = ref.part(counts, ctx.rank, row_size)
    label = (f"{what} {opname} {g.dtype}{list(g.shape)} axis={'default' if axis is _UNSET else axis} "
             f"dtype={None if dtype is _UNSET else dtype} exclusive={exclusive is True} "
             f"counts={list(map(int, counts))} via={via}")

    def verify():
        assert_matches(got, mine, tol=tol, nonfinite_equiv=nonfinite_equiv, what=label)
        assert np.array_equal(part, before, equal_nan=part.dtype.kind in "fc") and part.dtype == before.dtype, \
            f"{label}: the input was modified"
    ctx.check(verify)
    return got


def shaped_arange(shape, dtype, order="C"):
    """cupy.testing.shaped_arange: 1..N; bool: even -> True; complex: a + a*1j."""
    dtype = np.dtype(dtype)
    a = np.arange(1, int(np.prod(shape)) + 1)
    if dtype == np.bool_:
        a = a % 2 == 0
    elif dtype.kind == "c":
        a = a + a * 1j
    return np.array(a.astype(dtype).reshape(shape), order=order)


def shaped_random(shape, dtype, scale=10, seed=0, order="C"):
    """cupy.testing.shaped_random: uniform [0, scale) (bool: fair coin), fixed seed."""
    rng = np.random.RandomState(seed)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        a = rng.randint(2, size=shape)
    elif dtype.kind == "c":
        a = (rng.rand(*shape) + 1j * rng.rand(*shape)) * scale
    else:
        a = rng.rand(*shape) * scale
    return np.asarray(a, dtype=dtype, order=order)


def ops_for(dtype):
    kind = np.dtype(dtype).kind
    return ["sum", "prod"] + (["max", "min"] if kind != "c" else [])


# ---------------------------------------------------------------------------------------------
# NumPy: numpy/lib/tests/test_function_base.py
# ---------------------------------------------------------------------------------------------

BA = [1, 2, 10, 11, 6, 5, 4]
BA2 = [[1, 2, 3, 4], [5, 6, 7, 9], [10, 3, 4, 5]]


@pytest.mark.parametrize("ctype", ["int8", "uint8", "int16", "uint16", "int32", "uint32",
                                   "float32", "float64", "complex64", "complex128"])
def test_numpy_TestCumsum_basic(ctx, ctype):
    a, a2 = np.array(BA, ctype), np.array(BA2, ctype)
    c = ctx.counts(7)
    got = check_scan(ctx, a, "sum", axis=0, counts=c)
    tgt = np.array([1, 3, 13, 24, 30, 35, 39])
    ctx.check(lambda: np.testing.assert_array_equal(got, Ctx.rows(tgt, c, ctx.rank)))
    c2 = ctx.counts(3)
    got = check_scan(ctx, a2, "sum", axis=0, counts=c2)
    tgt = np.array([[1, 2, 3, 4], [6, 8, 10, 13], [16, 11, 14, 18]])
    ctx.check(lambda: np.testing.assert_array_equal(got, Ctx.rows(tgt, c2, ctx.rank)))
    got = check_scan(ctx, a2, "sum", axis=1, counts=c2)
    tgt = np.array([[1, 3, 6, 10], [5, 11, 18, 27], [10, 13, 17, 22]])
    ctx.check(lambda: np.testing.assert_array_equal(got, Ctx.rows(tgt, c2, ctx.rank)))


@pytest.mark.parametrize("ctype", ["int16", "uint16", "int32", "uint32", "float32", "float64",
                                   "complex64", "complex128"])
def test_numpy_TestCumprod_basic(ctx, ctype):
    a, a2 = np.array(BA, ctype), np.array(BA2, ctype)
    c = ctx.counts(7)
    got = check_scan(ctx, a, "prod", axis=-1, counts=c)
    tgt = np.array([1, 2, 20, 220, 1320, 6600, 26400])
    ctx.check(lambda: np.testing.assert_array_equal(got, Ctx.rows(tgt, c, ctx.rank)))
    c2 = ctx.counts(3)
    got = check_scan(ctx, a2, "prod", axis=0, counts=c2)
    tgt = np.array([[1, 2, 3, 4], [5, 12, 21, 36], [50, 36, 84, 180]])
    ctx.check(lambda: np.testing.assert_array_equal(got, Ctx.rows(tgt, c2, ctx.rank)))
    got = check_scan(ctx, a2, "prod", axis=-1, counts=c2)
    tgt = np.array([[1, 2, 6, 24], [5, 30, 210, 1890], [10, 30, 120, 600]])
    ctx.check(lambda: np.testing.assert_array_equal(got, Ctx.rows(tgt, c2, ctx.rank)))


def test_numpy_cumulative_include_initial(ctx):
    """np.cumulative_sum/prod(..., include_initial=True) == exclusive scan, then the total."""
    arr = np.arange(8).reshape((2, 2, 2))
    c = ctx.counts(2)
    part = Ctx.rows(arr, c, ctx.rank).copy()
    expected = np.array([[[0, 0], [0, 1], [2, 4]], [[0, 0], [4, 5], [10, 12]]])
    got = ctx.run(lambda: distscan.exclusive_scan(part, "sum", axis=1, comm=ctx.comm))
    ctx.check(lambda: np.testing.assert_array_equal(got, Ctx.rows(expected[:, :-1], c, ctx.rank), strict=True))
    expected = np.array([[[1, 0, 0], [1, 2, 6]], [[1, 4, 20], [1, 6, 42]]])
    got = ctx.run(lambda: distscan.exclusive_scan(part, "prod", axis=2, comm=ctx.comm))
    ctx.check(lambda: np.testing.assert_array_equal(got, Ctx.rows(expected[:, :, :-1], c, ctx.rank), strict=True))

    # Along the distributed axis: out=float64 (3, 2) in NumPy; here the exclusive part + reduce.
    arr = np.arange(1, 5).reshape((2, 2))
    expected = np.array([[0, 0], [1, 2], [4, 6]], dtype=np.float64)
    c = ctx.counts(2)
    part = Ctx.rows(arr, c, ctx.rank).copy()
    got = ctx.run(lambda: distscan.exclusive_scan(part, "sum", dtype=np.float64, comm=ctx.comm))
    total = ctx.run(lambda: distscan.reduce(part, "sum", dtype=np.float64, comm=ctx.comm))
    ctx.check(lambda: np.testing.assert_array_equal(got, Ctx.rows(expected[:-1], c, ctx.rank), strict=True))
    ctx.check(lambda: np.testing.assert_array_equal(total, expected[-1]))

    x = np.array([2, 2])
    c = ctx.counts(2)
    part = Ctx.rows(x, c, ctx.rank).copy()
    got = ctx.run(lambda: distscan.exclusive_scan(part, "prod", comm=ctx.comm))
    total = ctx.run(lambda: distscan.reduce(part, "prod", comm=ctx.comm))
    ctx.check(lambda: np.testing.assert_array_equal(got, Ctx.rows(np.array([1, 2]), c, ctx.rank), strict=True))
    ctx.check(lambda: np.testing.assert_equal(total, 4))


# ---------------------------------------------------------------------------------------------
# NumPy: numpy/_core/tests/test_ufunc.py, test_umath.py, test_regression.py
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("opname", ["max", "sum"])
@pytest.mark.parametrize("shape", [(30, 0), (0, 30), (30, 30), (0, 0)])
@pytest.mark.parametrize("axis", [0, 1, None])
def test_numpy_accumulate_zero_size(ctx, opname, shape, axis):
    """test_ufunc.py TestUfunc.test_reduce_zero_axis (accumulate part): any n x m works."""
    g = np.zeros(shape)
    check_scan(ctx, g, opname, axis=axis)
    check_scan(ctx, g, opname, axis=axis, exclusive=True)


def test_numpy_regression_zerosize_accumulate(ctx):
    """test_regression.py test_zerosize_accumulate (ticket #1733)."""
    x = np.array([[42, 0]], dtype=np.uint32)
    got = check_scan(ctx, x[:-1, 0], "sum")
    ctx.check(lambda: np.testing.assert_equal(got, []))


@pytest.mark.parametrize("dtype", [">i8", "<i8", ">i4", ">u2", ">f8", ">f4", ">f2", ">c16"])
def test_numpy_reducelike_byteorder_resolution(ctx, dtype):
    """test_ufunc.py test_reducelike_byteorder_resolution: byte order is storage only."""
    g = np.arange(10, dtype=dtype)
    check_scan(ctx, g, "sum")
    check_scan(ctx, g, "sum", exclusive=True)
    if np.dtype(dtype).kind != "c":
        check_scan(ctx, g[::-1], "max")
    c = ctx.counts(10)
    part = Ctx.rows(g, c, ctx.rank).copy()
    total = ctx.run(lambda: distscan.reduce(part, comm=ctx.comm))
    ctx.check(lambda: np.testing.assert_equal(total, np.add.reduce(g.astype(g.dtype.newbyteorder("=")))))


def test_numpy_reducelike_output_needs_identical_cast(ctx):
    """test_ufunc.py test_reducelike_output_needs_identical_cast (accumulate part).

    DEBATABLE: distscan documents out= as 'of the result's dtype'; a byte-swapped float64 is that
    dtype in another byte order, and NumPy explicitly accepts it (the test exists so that it is
    'not rejected directly').  Expected here: accepted, as in NumPy.
    """
    g = np.ones(20, dtype="f8")
    c = ctx.counts(20)
    part = Ctx.rows(g, c, ctx.rank).copy()
    out = np.empty(part.shape, dtype=part.dtype.newbyteorder())
    res = ctx.run(lambda: distscan.cumsum(part, out=out, comm=ctx.comm))
    expected = Ctx.rows(np.add.accumulate(g), c, ctx.rank)
    ctx.check(lambda: (np.testing.assert_array_equal(out, expected), _assert_is(res, out)))


def _assert_is(a, b):
    assert a is b, "the result is not the out= array"


@pytest.mark.parametrize("with_cast", [True, False])
def test_numpy_accumulate_out_shape_mismatch(ctx, with_cast):
    """test_ufunc.py test_reduceat_and_accumulate_out_shape_mismatch."""
    g = np.arange(5 * ctx.size)
    c = ctx.counts(len(g))
    part = Ctx.rows(g, c, ctx.rank).copy()
    out = np.arange(len(part) + 3)  # definitely the wrong shape, on every rank
    if with_cast:
        out = out.astype(np.float64)
    ctx.raises((ValueError, TypeError) if with_cast else ValueError,
               lambda: distscan.cumsum(part, out=out, comm=ctx.comm))
    if not with_cast:
        ctx.raises(ValueError, lambda: distscan.cumsum(part, out=out, comm=ctx.comm), match="(shape|size)")


def test_numpy_accumulate_out_dtype_resolution_failure(ctx):
    """test_ufunc.py test_reduceat_and_accumulate_out_dtype_resolution_failure: str out."""
    g = np.arange(3 * ctx.size)
    part = Ctx.rows(g, ctx.counts(len(g)), ctx.rank).copy()
    out = np.empty(part.shape, dtype="U5")
    ctx.raises(TypeError, lambda: distscan.cumsum(part, out=out, comm=ctx.comm))


def test_numpy_accumulate_dtype_int32_with_out(ctx):
    """test_ufunc.py test_reduction_no_reference_leak: np.add.accumulate(int32, dtype=int32, out=int32)."""
    g = np.array([1, 2, 3] * 4, dtype=np.int32)
    check_scan(ctx, g, "sum", dtype=np.int32)
    c = ctx.counts(len(g))
    part = Ctx.rows(g, c, ctx.rank).copy()
    out = np.empty(part.shape, dtype=np.int32)
    res = ctx.run(lambda: distscan.cumsum(part, dtype=np.int32, out=out, comm=ctx.comm))
    ctx.check(lambda: (_assert_is(res, out),
                       np.testing.assert_array_equal(out, Ctx.rows(np.add.accumulate(g, dtype=np.int32), c, ctx.rank))))


@pytest.mark.parametrize("ftype", [np.float32, np.float64])
def test_numpy_memoverlap_accumulate(ctx, ftype):
    """test_umath.py test_memoverlap_accumulate (gh-15597)."""
    arr = np.array([0.61, 0.60, 0.77, 0.41, 0.19], dtype=ftype)
    for opname, tgt in (("max", [0.61, 0.61, 0.77, 0.77, 0.77]), ("min", [0.61, 0.60, 0.60, 0.41, 0.19])):
        c = ctx.counts(5)
        got = check_scan(ctx, arr, opname, counts=c)
        ctx.check(lambda: np.testing.assert_array_equal(got, Ctx.rows(np.array(tgt, ftype), c, ctx.rank)))


def _symmetric_cases():
    for dt in INT_DTYPES + FLOAT_DTYPES:
        for opname in ("sum", "prod", "max", "min", "bitwise_and", "bitwise_or", "bitwise_xor"):
            if opname.startswith("bitwise") and np.dtype(dt).kind == "f":
                continue
            yield opname, dt


@pytest.mark.parametrize("opname,dtype", list(_symmetric_cases()))
def test_numpy_memoverlap_accumulate_symmetric(ctx, opname, dtype):
    """test_umath.py test_memoverlap_accumulate_symmetric: [0, 1, 2] * size, accumulated with
    dtype=dtype, equals itertools.accumulate (no promotion: dtype= forces the input dtype)."""
    for size in (2, 8, 32, 64, 128, 256):
        arr = np.array([0, 1, 2] * size).astype(dtype)
        check_scan(ctx, arr, opname, dtype=dtype)
        if np.dtype(dtype).kind in "iu":
            # The reference inside check_scan is NumPy's accumulate; the peer's itertools one agrees.
            with np.errstate(all="ignore"):
                exp = np.array(list(itertools.accumulate(arr, UFUNCS[opname])), dtype=dtype)
                np.testing.assert_array_equal(exp, UFUNCS[opname].accumulate(arr, dtype=dtype))


def _cmp_cases():
    for dt in ["bool"] + INT_DTYPES + FLOAT_DTYPES:
        for opname in LOGICAL:
            yield opname, dt


@pytest.mark.parametrize("opname,dtype", list(_cmp_cases()))
def test_numpy_memoverlap_accumulate_cmp(ctx, opname, dtype):
    """test_umath.py test_memoverlap_accumulate_cmp: logical accumulations to bool."""
    for size in (2, 8, 32, 64, 128, 256):
        arr = np.array([0, 1, 1] * size, dtype=dtype)
        got = check_scan(ctx, arr, opname)
        ctx.check(lambda: np.testing.assert_equal(got.dtype, np.bool_))


@pytest.mark.parametrize("dtype", ["int64", "float64", "complex128"])
def test_numpy_accumulate_inplace_twice(ctx, dtype):
    """test_ufunc.py test_object_array_accumulate_inplace (with numeric dtypes: distscan has no
    object dtype): np.add.accumulate(arr, out=arr) twice, along axis 0 and axis -1."""
    g = np.ones((10, 6), dtype=dtype)
    c = ctx.counts(10)
    part = Ctx.rows(g, c, ctx.rank).copy()
    for _ in range(2):
        res = ctx.run(lambda: distscan.cumsum(part, out=part, comm=ctx.comm))
        ctx.check(lambda: _assert_is(res, part))
    expected = np.add.accumulate(np.add.accumulate(g, axis=0), axis=0)
    ctx.check(lambda: np.testing.assert_array_equal(part, Ctx.rows(expected, c, ctx.rank)))
    part = Ctx.rows(g, c, ctx.rank).copy()
    for _ in range(2):
        ctx.run(lambda: distscan.cumsum(part, out=part, axis=-1, comm=ctx.comm))
    expected = np.add.accumulate(np.add.accumulate(g, axis=-1), axis=-1)
    ctx.check(lambda: np.testing.assert_array_equal(part, Ctx.rows(expected, c, ctx.rank)))


# ---------------------------------------------------------------------------------------------
# NumPy: numpy/lib/tests/test_nanfunctions.py (the cumsum/cumprod reference side), NaN and inf
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "complex64", "complex128"])
def test_numpy_allnans(ctx, axis, dtype):
    """TestNanFunctions_CumSumProd.test_allnans, for cumsum/cumprod: NaN stays NaN everywhere."""
    g = np.full((3, 3), np.nan).astype(dtype)
    for opname in ("sum", "prod"):
        check_scan(ctx, g, opname, axis=axis)
    # 0-d NaN, axis=None (every rank holds one element of the global array).
    zero_d = np.array(np.nan).astype(dtype)
    got = ctx.run(lambda: distscan.cumsum(zero_d, axis=None, comm=ctx.comm))
    ctx.check(lambda: (np.testing.assert_equal(got.shape, (1,)), np.testing.assert_equal(np.isnan(got).all(), True),
                       np.testing.assert_equal(got.dtype, np.dtype(dtype))))


def test_numpy_nanfunctions_empty(ctx):
    """TestNanFunctions_CumSumProd.test_empty (cumsum/cumprod side): zeros((0, 3))."""
    mat = np.zeros((0, 3))
    for opname in ("sum", "prod"):
        for axis in (0, 1, None):
            got = check_scan(ctx, mat, opname, axis=axis)
            ctx.check(lambda: np.testing.assert_equal(got.shape, (0,) if axis is None else (0, 3)))


def test_numpy_nanfunctions_keepdims_shapes(ctx):
    """TestNanFunctions_CumSumProd.test_keepdims: ones((3, 5, 7, 11)) with NaNs; shapes and values."""
    d = np.ones((3, 5, 7, 11))
    rs = np.random.RandomState(0)
    d[rs.rand(*d.shape) < 0.5] = np.nan
    for opname in ("sum", "prod"):
        got = check_scan(ctx, d, opname, axis=None)
        c = ctx.counts(3)
        got = check_scan(ctx, d, opname, axis=None, counts=c)
        ctx.check(lambda: np.testing.assert_equal(got.shape, (int(c[ctx.rank]) * 385,)))
        for axis in range(4):
            check_scan(ctx, d, opname, axis=axis)


def test_numpy_nanfunctions_out(ctx):
    """TestNanFunctions_CumSumProd.test_out: eye(3), out=eye(3), axis -2, -1, 0, 1."""
    mat = np.eye(3)
    for opname, fn in (("sum", distscan.cumsum), ("prod", distscan.cumprod)):
        c = ctx.counts(3)
        part = Ctx.rows(mat, c, ctx.rank).copy()
        for axis in (-2, -1, 0, 1):
            resout = Ctx.rows(np.eye(3), c, ctx.rank).copy()
            res = ctx.run(lambda: fn(part, axis=axis, out=resout, comm=ctx.comm))
            tgt = Ctx.rows(UFUNCS[opname].accumulate(mat, axis=axis), c, ctx.rank)
            ctx.check(lambda: (_assert_is(res, resout), np.testing.assert_array_equal(resout, tgt)))


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "complex64", "complex128"])
def test_nan_and_inf_propagate_across_ranks(ctx, dtype):
    """NaN and inf anywhere (also at a rank boundary) propagate exactly as in NumPy."""
    vals = [1.0, 2.0, np.nan, 3.0, -1.0, np.inf, 4.0, -np.inf, 5.0, 1.0, 2.0, 0.5]
    for start in range(0, 8, 3):
        g = np.array(vals[start:] + vals[:start]).astype(dtype)
        for c in ctx.all_counts(len(g)):
            for opname in ops_for(dtype):
                check_scan(ctx, g, opname, counts=c)
                check_scan(ctx, g, opname, counts=c, exclusive=True)
    g = np.array([np.inf, 1.0, -np.inf, 2.0, 3.0]).astype(dtype)   # inf + -inf = nan
    check_scan(ctx, g, "sum")
    g = np.array([2.0, 0.0, np.inf, 3.0]).astype(dtype)            # 0 * inf = nan (the input holds inf)
    check_scan(ctx, g, "prod")
    if np.dtype(dtype).kind == "f":
        g = np.array([1.0, 5.0, np.nan, 7.0, 2.0, -np.inf]).astype(dtype)
        for c in ctx.all_counts(len(g)):
            check_scan(ctx, g, "max", counts=c)
            check_scan(ctx, g, "min", counts=c)
            check_scan(ctx, g[::-1].copy(), "max", counts=c)


# ---------------------------------------------------------------------------------------------
# NumPy: numpy/ma/tests/test_core.py and numpy/matrixlib/tests/test_interaction.py
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("opname", ["sum", "prod", "max", "min"])
def test_numpy_ma_cumsumprod(ctx, opname):
    """test_core.py TestMaskedArrayMethods.test_cumsumprod / test_cumsumprod_with_output data.

    numpy.ma semantics: the result is a masked array with the input's mask, and masked positions
    count as the identity (``mX.cumsum(0)._data == mX.filled(0).cumsum(0)`` at unmasked positions).
    A clear TypeError (masked arrays unsupported) on every rank is accepted instead.
    """
    rng = np.random.default_rng(7)
    data = np.round(rng.uniform(0.5, 2.0, (6, 4)), 2)
    mask = np.zeros(data.shape, bool)
    mask[:, 0] = mask[0] = True
    mask[-1, -1] = True
    mask[3, 2] = True
    g = np.ma.array(data, mask=mask)
    for axis in (0, 1):
        c = ctx.counts(6)
        part = np.ma.array(Ctx.rows(data, c, ctx.rank).copy(), mask=Ctx.rows(mask, c, ctx.rank).copy())
        try:
            got = ctx.run(lambda: NAMED[opname](part, axis=axis, comm=ctx.comm))
        except TypeError:
            continue  # "a clear TypeError" is acceptable
        filled = g.filled(identity(opname, g.dtype))
        exp = Ctx.rows(UFUNCS[opname].accumulate(filled, axis=axis), c, ctx.rank)
        pmask = Ctx.rows(mask, c, ctx.rank)

        def verify():
            assert isinstance(got, np.ma.MaskedArray), (
                f"cum{opname} of a masked array returned {type(got).__name__}: the mask is lost "
                f"(numpy.ma keeps it); data={np.asarray(got).tolist()}")
            np.testing.assert_array_equal(np.ma.getmaskarray(got), pmask)
            np.testing.assert_allclose(np.asarray(got)[~pmask], exp[~pmask], rtol=1e-12,
                                       err_msg="masked positions must count as the identity")
        ctx.check(verify)


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")
def test_numpy_matrix_cumulative(ctx):
    """test_interaction.py (nancumsum/nancumprod on np.matrix; the same holds for cumsum/cumprod).

    Values must be NumPy's.  DEBATABLE (not asserted): the array type and, for axis=None, the
    shape -- NumPy returns np.matrix of shape (1, N); distscan documents a 1-D result for
    axis=None.  Either is accepted here.
    """
    g = np.arange(1, 10).reshape(3, 3)
    for opname in ("sum", "prod"):
        for axis in (0, 1, None):
            c = ctx.counts(3)
            part = np.matrix(Ctx.rows(g, c, ctx.rank))
            got = ctx.run(lambda: NAMED[opname](part, axis=axis, comm=ctx.comm))
            ref = Ref(g, opname, axis=axis).part(c, ctx.rank, 3)

            def verify():
                vals = np.asarray(got)
                if axis is None:
                    assert vals.shape in ((int(c[ctx.rank]) * 3,), (1, int(c[ctx.rank]) * 3)), vals.shape
                    vals = vals.reshape(-1)
                else:
                    assert vals.shape == (int(c[ctx.rank]), 3), vals.shape
                np.testing.assert_array_equal(vals, ref.exact, err_msg=f"cum{opname} matrix axis={axis}")
            ctx.check(verify)


# ---------------------------------------------------------------------------------------------
# Dask: dask/array/tests/test_reductions.py
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("opname", ["sum", "prod"])
@pytest.mark.parametrize("use_nan", [False, True])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_dask_array_cumreduction_axis(ctx, opname, use_nan, axis):
    """test_array_cumreduction_axis: arange(1320.).reshape(10, 11, 12), a[1] = nan.

    With axis=None, NumPy's cumprod is all zeros (the first element is 0; later values overflow
    to inf only in partial products that never meet the zero).  No NaN may appear where NumPy has
    none."""
    s = (10, 11, 12)
    a = np.arange(np.prod(s), dtype=float).reshape(s)
    if use_nan:
        a[1] = np.nan
    check_scan(ctx, a, opname, axis=axis)
    check_scan(ctx, a, opname, axis=axis)   # a second split of the rows (ctx.counts rotates schemes)


@pytest.mark.parametrize("opname", ["sum", "prod"])
@pytest.mark.parametrize("target_dtype", [None, int, float])
def test_dask_array_cumreduction_dtype(ctx, opname, target_dtype):
    """test_array_cumreduction_dtype: linspace(0, 1, 10) with dtype None/int/float."""
    a = np.linspace(0, 1, num=10, dtype=float)
    check_scan(ctx, a, opname, axis=0, dtype=target_dtype if target_dtype else _UNSET)


@pytest.mark.parametrize("opname", ["sum", "prod", "max"])
@pytest.mark.parametrize("target_dtype", [None, int, float])
@pytest.mark.parametrize("spelling", ["name", "ufunc"])
def test_dask_array_cumreduction_ufunc(ctx, opname, target_dtype, spelling):
    """test_array_cumreduction_ufunc: ufunc.accumulate(a, dtype=target) through distscan.scan,
    the operator given by name or, as Dask does, as the NumPy ufunc itself."""
    a = np.linspace(0, 1, num=10, dtype=float)
    c = ctx.counts(10)
    check_scan(ctx, a, opname, dtype=target_dtype if target_dtype else _UNSET, via="scan", counts=c)
    if spelling == "ufunc":
        part = Ctx.rows(a, c, ctx.rank).copy()
        kw = {} if target_dtype is None else {"dtype": target_dtype}
        got = ctx.run(lambda: distscan.scan(part, UFUNCS[opname], comm=ctx.comm, **kw))
        ref = Ref(a, opname, dtype=target_dtype).part(c, ctx.rank, 1)
        ctx.check(lambda: assert_matches(got, ref, what=f"op={UFUNCS[opname].__name__}"))


@pytest.mark.parametrize("opname", ["sum", "prod"])
def test_dask_array_cumreduction_out(ctx, opname):
    """test_array_cumreduction_out: func(x, axis=0, out=x) with x = ones((10, 10))."""
    g = np.ones((10, 10))
    for c in ctx.all_counts(10):
        x = Ctx.rows(g, c, ctx.rank).copy()
        res = ctx.run(lambda: NAMED[opname](x, axis=0, out=x, comm=ctx.comm))
        expected = Ctx.rows(UFUNCS[opname].accumulate(g, axis=0), c, ctx.rank)
        ctx.check(lambda: (_assert_is(res, x), np.testing.assert_array_equal(x, expected)))


# ---------------------------------------------------------------------------------------------
# CuPy: tests/cupy_tests/math_tests/test_sumprod.py
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_cupy_TestCumsum(ctx, dtype):
    """TestCumsum: test_cumsum (5,), test_cumsum_2dim (4, 5) flattened (NumPy's default axis is
    None; distscan's is 0, so it is passed), test_cumsum_axis / test_ndarray_cumsum_axis
    (4, 5, 6) with axis 0, 1, 2, and the input is never overwritten."""
    check_scan(ctx, shaped_arange((5,), dtype), "sum")
    check_scan(ctx, shaped_arange((4, 5), dtype), "sum", axis=None)
    for axis in (0, 1, 2, -1):
        check_scan(ctx, shaped_arange((4, 5, 6), dtype), "sum", axis=axis)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_cupy_TestCumsum_out(ctx, dtype):
    """TestCumsum.test_cumsum_out / _out_noncontiguous / test_cumsum_axis_out / _axis_out_noncontiguous.

    CuPy passes out of the *input* dtype; NumPy then casts.  distscan requires out of the result
    dtype (README; the brief: wrong dtype -> error), so out here has NumPy's result dtype, and
    test_out_of_another_dtype_is_an_error covers the input-dtype out."""
    rd = numpy_result_dtype("sum", dtype)
    a = shaped_arange((5,), dtype)
    for noncontig in (False, True):
        c = ctx.counts(5)
        part = Ctx.rows(a, c, ctx.rank).copy()
        out = np.zeros((2 * len(part),), rd)[::2] if noncontig else np.zeros(part.shape, rd)
        res = ctx.run(lambda: distscan.cumsum(part, out=out, comm=ctx.comm))
        ref = Ref(a, "sum").part(c, ctx.rank, 1)
        ctx.check(lambda: (_assert_is(res, out), assert_matches(out, ref, what="out")))
    shape = (4, 5, 6)
    a = shaped_arange(shape, dtype)
    for axis in (0, 1, 2):
        for noncontig in (False, True):
            c = ctx.counts(4)
            part = Ctx.rows(a, c, ctx.rank).copy()
            out = (np.zeros((2 * part.shape[0],) + shape[1:], rd)[::2] if noncontig
                   else np.zeros(part.shape, rd))
            res = ctx.run(lambda: distscan.cumsum(part, axis=axis, out=out, comm=ctx.comm))
            ref = Ref(a, "sum", axis=axis).part(c, ctx.rank, 30)
            ctx.check(lambda: (_assert_is(res, out), assert_matches(out, ref, what=f"out axis={axis}")))


@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_cupy_TestCumsum_axis_empty(ctx, dtype, axis):
    """TestCumsum.test_cumsum_axis_empty: shape (0, 1, 2)."""
    check_scan(ctx, shaped_arange((0, 1, 2), dtype), "sum", axis=axis)


@pytest.mark.parametrize("opname", ["sum", "prod"])
def test_cupy_invalid_axis(ctx, opname):
    """TestCumsum/TestCumprod.test_invalid_axis_lower*/upper*: AxisError."""
    a = shaped_arange((4, 5), np.float32)
    part = Ctx.rows(a, ctx.counts(4), ctx.rank).copy()
    for axis in (-a.ndim - 1, a.ndim + 1, a.ndim):
        ctx.raises(np.exceptions.AxisError, lambda: NAMED[opname](part, axis=axis, comm=ctx.comm))


def test_cupy_arraylike(ctx):
    """TestCumsum/TestCumprod.test_*_arraylike: CuPy rejects a tuple; NumPy (and distscan's README:
    'lists and scalars are accepted') take it as an array."""
    vals = tuple(range(1, 2 * ctx.size + 1))
    # Every rank holds at least one element: an empty tuple has no integer dtype (NumPy makes it
    # float64), so an empty part would make the ranks' dtypes differ.
    c = np.full(ctx.size, 2)
    part = tuple(Ctx.rows(np.array(vals), c, ctx.rank).tolist())
    got = ctx.run(lambda: distscan.cumsum(part, comm=ctx.comm))
    ctx.check(lambda: np.testing.assert_array_equal(got, Ctx.rows(np.cumsum(vals), c, ctx.rank), strict=True))
    got = ctx.run(lambda: distscan.cumprod(part, comm=ctx.comm))
    ctx.check(lambda: np.testing.assert_array_equal(got, Ctx.rows(np.cumprod(vals), c, ctx.rank), strict=True))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_cupy_TestCumprod(ctx, dtype):
    """TestCumprod: test_cumprod_1dim, test_cumprod_2dim_without_axis (flattened),
    test_cumprod_2dim_with_axis / test_ndarray_cumprod_2dim_with_axis (axis=1), and axis 0."""
    check_scan(ctx, shaped_arange((5,), dtype), "prod")
    check_scan(ctx, shaped_arange((4, 5), dtype), "prod", axis=None)
    check_scan(ctx, shaped_arange((4, 5), dtype), "prod", axis=1)
    check_scan(ctx, shaped_arange((4, 5), dtype), "prod", axis=0)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_cupy_TestCumprod_out(ctx, dtype):
    """TestCumprod.test_cumprod_out / _out_noncontiguous (out of NumPy's result dtype, see above)."""
    rd = numpy_result_dtype("prod", dtype)
    a = shaped_arange((5,), dtype)
    for noncontig in (False, True):
        c = ctx.counts(5)
        part = Ctx.rows(a, c, ctx.rank).copy()
        out = np.zeros((2 * len(part),), rd)[::2] if noncontig else np.zeros(part.shape, rd)
        res = ctx.run(lambda: distscan.cumprod(part, out=out, comm=ctx.comm))
        ref = Ref(a, "prod").part(c, ctx.rank, 1)
        ctx.check(lambda: (_assert_is(res, out), assert_matches(out, ref, what="out")))


def test_cupy_cumprod_int8_dtype_int8(ctx):
    """TestCumprod.test_cumprod_huge_array in small: ones(n, 'b') with dtype='b' stays all 1."""
    g = np.ones(1000, np.int8)
    got = check_scan(ctx, g, "prod", dtype=np.int8)
    ctx.check(lambda: np.testing.assert_equal(bool((got == 1).all()), True))


@pytest.mark.parametrize("opname", ["sum", "prod"])
@pytest.mark.parametrize("dtype", [d for d in ALL_DTYPES if d != "bool"])
def test_cupy_TestCumulativeSumProd_dtype(ctx, opname, dtype):
    """TestCumulativeSumProd.test_dtype: int16 arange with every dtype= (narrowing included)."""
    a = shaped_arange((5,), np.int16)
    check_scan(ctx, a, opname, dtype=dtype)
    a = shaped_arange((12,), np.int16) * np.int16(25)   # values up to 300: narrowing to int8 wraps
    check_scan(ctx, a, opname, dtype=dtype)


@pytest.mark.parametrize("opname", ["sum", "prod"])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_cupy_TestCumulativeSumProd_axes_and_include_initial(ctx, opname, dtype):
    """TestCumulativeSumProd: test_axis (axis=1), test_negative_axis (axis=-1), test_1d, and the
    include_initial variants (exclusive scan; the last element is the total, see reduce)."""
    a3 = shaped_arange((3, 4, 5), dtype)
    check_scan(ctx, a3, opname, axis=1)
    check_scan(ctx, a3, opname, axis=-1)
    check_scan(ctx, a3, opname, axis=1, exclusive=True)
    check_scan(ctx, a3, opname, axis=-1, via="exclusive_scan")
    a1 = shaped_arange((5,), dtype)
    check_scan(ctx, a1, opname)
    c = ctx.counts(5)
    check_scan(ctx, a1, opname, via="exclusive_scan", counts=c)
    part = Ctx.rows(a1, c, ctx.rank).copy()
    total = ctx.run(lambda: distscan.reduce(part, opname, comm=ctx.comm))
    ref = Ref(a1, opname)

    def verify():
        last = (ref.exact if ref.exact is not None else ref.expected_rounded())[-1]
        assert np.asarray(total).dtype == ref.dtype, (np.asarray(total).dtype, ref.dtype)
        np.testing.assert_allclose(np.asarray(total, np.complex128), np.asarray(last, np.complex128), rtol=1e-3)
    ctx.check(verify)


@pytest.mark.parametrize("opname", ["sum", "prod"])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_cupy_TestCumulativeSumProd_0d_and_empty_axis(ctx, opname, dtype):
    """TestCumulativeSumProd.test_0d (flattened: each rank holds one element), test_empty_axis
    and test_empty_axis_include_initial ((3, 0, 4), axis=1)."""
    x = np.asarray(3, dtype=dtype)
    got = ctx.run(lambda: NAMED[opname](x, axis=None, comm=ctx.comm))
    ref = Ref(np.full(ctx.size, x), opname).part(np.ones(ctx.size, int), ctx.rank, 1)
    ctx.check(lambda: assert_matches(got, ref, what="0-d"))
    e = np.empty((3, 0, 4), dtype=dtype)
    check_scan(ctx, e, opname, axis=1)
    check_scan(ctx, e, opname, axis=1, exclusive=True)


@pytest.mark.parametrize("opname", ["sum", "prod"])
@pytest.mark.parametrize("in_dtype", [np.int8, np.uint16])
def test_cupy_narrow_int_promotion_include_initial(ctx, opname, in_dtype):
    """TestCumulativeSumProd.test_narrow_int_promotion_include_initial: int8 -> int64,
    uint16 -> uint64, also for the exclusive scan."""
    a = shaped_arange((5,), in_dtype)
    got = check_scan(ctx, a, opname, via="exclusive_scan")
    ctx.check(lambda: np.testing.assert_equal(got.dtype, np.dtype(np.int64 if in_dtype == np.int8 else np.uint64)))


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("shape", [(64,), (16, 16), (8, 2, 8), (4, 2, 2, 4)])
@pytest.mark.parametrize("dtype", list("bhilBHILfdFD"))
def test_cupy_TestCubReduction_cumsum_cumprod(ctx, dtype, shape, order):
    """TestCubReduction.test_cub_cumsum / test_cub_cumprod: shaped_random, C or Fortran order,
    flattened scan (a.cumsum()).  For complex cumprod the overflow may end as inf or nan
    (CuPy's _mitigate_cumprod); only the non-finite positions are compared there."""
    a = shaped_random(shape, dtype, order=order)
    prep = (lambda p: np.asfortranarray(p)) if order == "F" else None
    check_scan(ctx, a, "sum", axis=None, prepare=prep)
    check_scan(ctx, a, "prod", axis=None, prepare=prep, nonfinite_equiv=np.dtype(dtype).kind == "c")


# ---------------------------------------------------------------------------------------------
# Heat: tests/core/test_arithmetics.py
# ---------------------------------------------------------------------------------------------

def test_heat_cumsum(ctx):
    """test_cumsum: ones (2, 4) int32 axis 1; (4, 2) int64 split=0 axis 0; (2, 2, 2) float with
    out=float32 along the split axis; dtype=float64; axis 2; errors."""
    # heat's int32 stays int32; NumPy's (and distscan's) cumsum of int32 is int64.
    a = np.ones((2, 4), np.int32)
    c = ctx.counts(2)
    got = check_scan(ctx, a, "sum", axis=1, counts=c)
    ctx.check(lambda: np.testing.assert_array_equal(got, Ctx.rows(np.array([[1, 2, 3, 4]] * 2), c, ctx.rank)))
    a = np.ones((4, 2), np.int64)
    c = ctx.counts(4)
    got = check_scan(ctx, a, "sum", axis=0, counts=c)
    ctx.check(lambda: np.testing.assert_array_equal(got, Ctx.rows(np.array([[1, 1], [2, 2], [3, 3], [4, 4]]), c, ctx.rank)))

    a = np.ones((2, 2, 2), np.float32)
    c = ctx.counts(2)
    part = Ctx.rows(a, c, ctx.rank).copy()
    out = np.empty(part.shape, np.float32)
    res = ctx.run(lambda: distscan.cumsum(part, axis=0, out=out, comm=ctx.comm))
    expected = np.array([[[1, 1], [1, 1]], [[2, 2], [2, 2]]], np.float32)
    ctx.check(lambda: (_assert_is(res, out), np.testing.assert_array_equal(out, Ctx.rows(expected, c, ctx.rank))))

    a = np.ones((2, 2, 2), np.int32)
    got = check_scan(ctx, a, "sum", axis=1, dtype=np.float64)
    check_scan(ctx, np.ones((2, 2, 2), np.float32), "sum", axis=2)

    part = Ctx.rows(np.ones((2, 2)), ctx.counts(2), ctx.rank).copy()
    ctx.raises(TypeError, lambda: distscan.cumsum(part, axis="1", comm=ctx.comm))
    ctx.raises(TypeError, lambda: distscan.cumsum(part, axis=0.5, comm=ctx.comm))
    ctx.raises(ValueError, lambda: distscan.cumsum(part, axis=2, comm=ctx.comm))
    a = Ctx.rows(np.ones((2, 2, 2)), ctx.counts(2), ctx.rank).copy()
    bad_out = np.empty((a.shape[0] + 1, 2, 2))
    ctx.raises(ValueError, lambda: distscan.cumsum(a, axis=2, out=bad_out, comm=ctx.comm))


def test_heat_cumprod(ctx):
    """test_cumprod: full((2, 4), 2) int32 axis 1; (4, 2) int64 split=0; (2, 2, 2) out=float32;
    dtype=float64; errors."""
    a = np.full((2, 4), 2, np.int32)
    c = ctx.counts(2)
    got = check_scan(ctx, a, "prod", axis=1, counts=c)
    ctx.check(lambda: np.testing.assert_array_equal(got, Ctx.rows(np.array([[2, 4, 8, 16]] * 2), c, ctx.rank)))
    a = np.full((4, 2), 2, np.int64)
    c = ctx.counts(4)
    got = check_scan(ctx, a, "prod", axis=0, counts=c)
    ctx.check(lambda: np.testing.assert_array_equal(got, Ctx.rows(np.array([[2, 2], [4, 4], [8, 8], [16, 16]]), c, ctx.rank)))
    a = np.full((2, 2, 2), 2, np.float32)
    c = ctx.counts(2)
    part = Ctx.rows(a, c, ctx.rank).copy()
    out = np.empty(part.shape, np.float32)
    res = ctx.run(lambda: distscan.cumprod(part, axis=0, out=out, comm=ctx.comm))
    expected = np.array([[[2, 2], [2, 2]], [[4, 4], [4, 4]]], np.float32)
    ctx.check(lambda: (_assert_is(res, out), np.testing.assert_array_equal(out, Ctx.rows(expected, c, ctx.rank))))
    check_scan(ctx, np.full((2, 2, 2), 2, np.int32), "prod", axis=1, dtype=np.float64)
    check_scan(ctx, np.full((2, 2, 2), 2, np.float32), "prod", axis=2)
    part = Ctx.rows(np.ones((2, 2)), ctx.counts(2), ctx.rank).copy()
    ctx.raises(TypeError, lambda: distscan.cumprod(part, axis="1", comm=ctx.comm))
    ctx.raises(ValueError, lambda: distscan.cumprod(part, axis=2, comm=ctx.comm))


@pytest.mark.parametrize("opname", ["sum", "prod"])
@pytest.mark.parametrize("dtype", ["int32", "int64", "float32"])
def test_heat_inplace_cumsum_cumprod(ctx, opname, dtype):
    """test_cumsum_ / test_cumprod_: in place (out is the input) along every axis of split
    tensors; int32 keeps int32 through dtype=, as heat's in-place operation does."""
    base = np.full((2, 4), 2 if opname == "prod" else 1, dtype)
    for axis in (0, 1):
        c = ctx.counts(2)
        x = Ctx.rows(base, c, ctx.rank).copy()
        res = ctx.run(lambda: NAMED[opname](x, axis=axis, dtype=x.dtype, out=x, comm=ctx.comm))
        expected = Ctx.rows(UFUNCS[opname].accumulate(base, axis=axis, dtype=dtype), c, ctx.rank)
        ctx.check(lambda: (_assert_is(res, x), np.testing.assert_array_equal(x, expected)))
    base3 = np.full((2, 2, 2), 2 if opname == "prod" else 1, dtype)
    for axis in (0, 1, 2):
        c = ctx.counts(2)
        x = Ctx.rows(base3, c, ctx.rank).copy()
        ctx.run(lambda: NAMED[opname](x, axis=axis, dtype=x.dtype, out=x, comm=ctx.comm))
        expected = Ctx.rows(UFUNCS[opname].accumulate(base3, axis=axis, dtype=dtype), c, ctx.rank)
        ctx.check(lambda: np.testing.assert_array_equal(x, expected))


def test_heat_single_element_split(ctx):
    """test_cumsum_ 'Single element split': [1, 2] over all ranks (more ranks than elements)."""
    g = np.array([1, 2])
    for c in ctx.all_counts(2):
        x = Ctx.rows(g, c, ctx.rank).copy()
        res = ctx.run(lambda: distscan.cumsum(x, out=x, comm=ctx.comm))
        ctx.check(lambda: (_assert_is(res, x), np.testing.assert_array_equal(x, Ctx.rows(np.array([1, 3]), c, ctx.rank))))


# ---------------------------------------------------------------------------------------------
# Array API test suite: array_api_tests/test_statistical_functions.py
# ---------------------------------------------------------------------------------------------

# dh.promotion_table: the dtypes each dtype promotes to (for the kwarg dtype= of cumulative_sum).
_PROMOTES_TO = {
    "bool": ["bool"],
    "int8": ["int8", "int16", "int32", "int64"], "int16": ["int16", "int32", "int64"],
    "int32": ["int32", "int64"], "int64": ["int64"],
    "uint8": ["uint8", "uint16", "uint32", "uint64", "int16", "int32", "int64"],
    "uint16": ["uint16", "uint32", "uint64", "int32", "int64"], "uint32": ["uint32", "uint64", "int64"],
    "uint64": ["uint64"],
    "float32": ["float32", "float64", "complex64", "complex128"], "float64": ["float64", "complex128"],
    "complex64": ["complex64", "complex128"], "complex128": ["complex128"],
}


@pytest.mark.parametrize("opname", ["sum", "prod"])
def test_array_api_cumulative_sum_prod(ctx, opname):
    """test_cumulative_sum / test_cumulative_prod: random numeric arrays (min_dims=1), any axis
    (None only for 1-D there; any ndim here), kwarg dtype from the promotion table, and
    include_initial (exclusive scan: the first element is 0 / 1; then the total).  The suite's
    hypothesis search is replaced by a seeded draw of 40 cases."""
    rng = ctx.rng
    for _ in range(40):
        dt = str(rng.choice(list(_PROMOTES_TO)))
        ndim = int(rng.integers(1, 4))
        shape = (int(rng.integers(0, 13)),) + tuple(int(rng.integers(0, 5)) for _ in range(ndim - 1))
        kind = np.dtype(dt).kind
        if kind == "b":
            g = rng.integers(0, 2, shape).astype(bool)
        elif kind in "iu":
            info = np.iinfo(dt)
            g = rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True)  # overflow wraps
        else:
            g = (rng.uniform(0.5, 1.5, shape) * rng.choice([-1, 1], shape)).astype(dt)
            if kind == "c":
                g = (g + 1j * rng.uniform(-0.5, 0.5, shape)).astype(dt)
        axis = rng.choice([None] + list(range(-ndim, ndim)))
        axis = None if axis is None else int(axis)
        kw_dtype = rng.choice([None] + _PROMOTES_TO[dt])
        include_initial = bool(rng.integers(0, 2))
        kwargs = dict(axis=axis, dtype=_UNSET if kw_dtype is None else np.dtype(kw_dtype))
        check_scan(ctx, g, opname, **kwargs)
        if include_initial:
            # The leading 0 / 1 of include_initial is the exclusive scan's first element (the
            # reference starts with NumPy's identity); the trailing total is reduce's (tested below).
            check_scan(ctx, g, opname, exclusive=True, **kwargs)


# ---------------------------------------------------------------------------------------------
# Required coverage beyond the peers' own cases
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_every_dtype_random_multidim(ctx, dtype):
    """Random data of every dtype, 1-3 dims, axis 0/1/-1/None, every operator NumPy has."""
    rng = ctx.rng
    kind = np.dtype(dtype).kind
    for shape in [(37,), (23, 3), (11, 2, 3)]:
        if kind == "b":
            g = rng.integers(0, 2, shape).astype(bool)
        elif kind in "iu":
            info = np.iinfo(dtype)
            g = rng.integers(max(info.min, -100), min(info.max, 100), shape, endpoint=True).astype(dtype)
        elif kind == "c":
            g = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
        else:
            g = rng.standard_normal(shape).astype(dtype)
        for opname in ops_for(dtype):
            x = g
            if opname == "prod" and kind in "fc":
                x = (1 + 0.05 * g).astype(dtype)  # keep long products finite
            for axis in [0, None] + ([1, -1] if len(shape) > 1 else [-1]):
                check_scan(ctx, x, opname, axis=axis)
            check_scan(ctx, x, opname, exclusive=True)


def test_float16_accumulates_in_float32(ctx):
    """README: numpy.cumsum(ones(3000, float16)) stops at 2048; distscan returns 3000."""
    g = np.ones(3000, np.float16)
    for c in ctx.all_counts(3000):
        got = check_scan(ctx, g, "sum", counts=c)
        ctx.check(lambda: np.testing.assert_array_equal(got, Ctx.rows(np.arange(1, 3001, dtype=np.float16), c, ctx.rank)))


def test_integer_overflow_wraps_like_numpy(ctx):
    """Integer sums and products wrap as NumPy's do, also across rank boundaries."""
    i64 = np.iinfo(np.int64)
    cases = [
        (np.full(12, i64.max // 3, np.int64), "sum", {}),
        (np.array([i64.max, 1, 1, i64.min, -1, -1] * 2, np.int64), "sum", {}),
        (np.full(10, np.iinfo(np.uint64).max // 3, np.uint64), "sum", {}),
        (np.full(9, 100, np.int8), "sum", {"dtype": np.int8}),
        (np.full(9, 200, np.uint8), "sum", {"dtype": np.uint8}),
        (np.arange(1, 100, dtype=np.int64), "prod", {}),                # wraps, then exactly 0
        (np.arange(1, 40, dtype=np.int32), "prod", {"dtype": np.int32}),
        (np.full(20, 3, np.uint32), "prod", {"dtype": np.uint32}),
        (np.full(20, -3, np.int16), "prod", {"dtype": np.int16}),
        (np.arange(1, 30, dtype=np.uint8), "prod", {}),                 # -> uint64
    ]
    for g, opname, kw in cases:
        for c in ctx.all_counts(len(g)):
            check_scan(ctx, g, opname, counts=c, **kw)
            check_scan(ctx, g, opname, counts=c, exclusive=True, **kw)
        part = Ctx.rows(g, ctx.counts(len(g)), ctx.rank).copy()
        total = ctx.run(lambda: distscan.reduce(part, opname, comm=ctx.comm, **kw))
        with np.errstate(all="ignore"):
            exp = UFUNCS[opname].reduce(g, dtype=kw.get("dtype", numpy_result_dtype(opname, g.dtype)))
        ctx.check(lambda: (np.testing.assert_equal(total, exp), np.testing.assert_equal(np.asarray(total).dtype, exp.dtype)))


@pytest.mark.parametrize("strategy", ["reduce_then_scan", "scan_then_add"])
def test_cumprod_zeros_and_overflow_no_spurious_nan(ctx, strategy):
    """NumPy's cumprod(arange(1320.)) is all zeros; so is every product after a zero when no inf is
    in the input, even where the later partial products alone overflow.  distscan may not turn
    0 * (an overflowed carry) into NaN."""
    cases = [np.arange(1320.0),
             np.array([2.0, 0.0, 1e300, 1e300, 5.0, 1e300, 1e300, 3.0]),
             np.concatenate([[0.0], np.full(50, 1e200)]),
             np.arange(1320.0).astype(np.float32)]
    for g in cases:
        for c in ctx.all_counts(len(g)):
            got = check_scan(ctx, g, "prod", counts=c, extra={"strategy": strategy})
            ctx.check(lambda: np.testing.assert_equal(np.isnan(got).any(), False))
        part = Ctx.rows(g, ctx.counts(len(g)), ctx.rank).copy()
        total = ctx.run(lambda: distscan.reduce(part, "prod", comm=ctx.comm))
        ctx.check(lambda: np.testing.assert_equal(total, g.dtype.type(0)))


def test_cumprod_zeros_and_overflow_long_arrays(ctx):
    """The same, on arrays long enough to be scanned in several chunks inside a rank, with a cast
    (dtype=float32 from float64: NumPy casts, then multiplies: all zeros) and with initial=0."""
    g = np.arange(300_000, dtype=np.float64)
    check_scan(ctx, g, "prod", dtype=np.float32)
    g = np.concatenate([np.full(10, 1e30), np.full(300_000, 1e30)])
    check_scan(ctx, g, "prod", initial=0.0)
    check_scan(ctx, np.arange(1, 300_000, dtype=np.float64), "prod", initial=0.0, exclusive=True)


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int16", "int32", "int64", "uint64", "float16",
                                   "float32", "float64", "complex128"])
def test_dtype_narrowing_and_bool(ctx, dtype):
    """dtype=: narrowing (the input is cast first, as NumPy does and the README states: with
    dtype=float16 the float64 input is rounded to float16 before the float32 accumulation),
    bool -> int, bool -> bool (NumPy's add/multiply on bool are logical or/and)."""
    rng = ctx.rng
    g = rng.integers(-300, 300, 50)
    if np.dtype(dtype).kind == "b":
        g = rng.integers(0, 2, 50).astype(bool)
    elif np.dtype(dtype).kind == "u":
        g = np.abs(g)
    gf = rng.uniform(-300, 300, 50)
    if np.dtype(dtype).kind in "iu":   # float -> int casts out of range are undefined in C: stay inside
        info = np.iinfo(dtype)
        gf = rng.uniform(max(info.min, -300), min(info.max, 300), 50)
    for opname in ("sum", "prod"):
        for src in (g, gf):
            if np.dtype(dtype).kind == "b" and src is gf:
                continue
            src = src if np.dtype(dtype).kind not in "fc" or opname == "sum" else (1 + src / 3000)
            check_scan(ctx, src, opname, dtype=dtype)
            check_scan(ctx, src, opname, dtype=dtype, exclusive=True)
    b = rng.integers(0, 2, 40).astype(bool)
    for dt in ("int8", "uint8", "int32", "int64", "float32", "bool"):
        for opname in ("sum", "prod"):
            check_scan(ctx, b, opname, dtype=dt)
    check_scan(ctx, b, "sum")
    check_scan(ctx, b, "max")
    check_scan(ctx, b, "min")


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


def test_scalars(ctx):
    """A Python or NumPy scalar is this rank's one element of the global array: exclusive_scan
    returns this rank's exclusive prefix and reduce the global total, both as scalars."""
    v = ctx.rank + 2
    prefix = sum(r + 2 for r in range(ctx.rank))
    total = sum(r + 2 for r in range(ctx.size))
    got = ctx.run(lambda: distscan.exclusive_scan(v, comm=ctx.comm))
    ctx.check(lambda: (np.testing.assert_equal(np.ndim(got), 0), np.testing.assert_equal(isinstance(got, np.ndarray), False),
                       np.testing.assert_equal(got, prefix)))
    got = ctx.run(lambda: distscan.reduce(v, comm=ctx.comm))
    ctx.check(lambda: (np.testing.assert_equal(np.ndim(got), 0), np.testing.assert_equal(isinstance(got, np.ndarray), False),
                       np.testing.assert_equal(got, total)))
    got = ctx.run(lambda: distscan.exclusive_scan(np.int32(v), comm=ctx.comm))
    ctx.check(lambda: (np.testing.assert_equal(np.ndim(got), 0), np.testing.assert_equal(got, prefix),
                       np.testing.assert_equal(np.asarray(got).dtype, np.cumsum(np.int32(1)).dtype)))
    got = ctx.run(lambda: distscan.reduce(np.float32(v), "max", comm=ctx.comm))
    ctx.check(lambda: (np.testing.assert_equal(np.ndim(got), 0), np.testing.assert_equal(got, ctx.size + 1),
                       np.testing.assert_equal(np.asarray(got).dtype, np.float32)))
    got = ctx.run(lambda: distscan.exclusive_scan(True, comm=ctx.comm))    # bool counts as int
    ctx.check(lambda: (np.testing.assert_equal(np.ndim(got), 0), np.testing.assert_equal(got, ctx.rank),
                       np.testing.assert_equal(np.asarray(got).dtype, np.cumsum(True).dtype)))
    got = ctx.run(lambda: distscan.exclusive_scan(float(v), "prod", comm=ctx.comm))
    ctx.check(lambda: (np.testing.assert_equal(np.ndim(got), 0),
                       np.testing.assert_equal(got, float(np.prod([r + 2 for r in range(ctx.rank)])))))


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
        ctx.check(lambda: (_assert_is(res, x), assert_matches(x, ref, what="out=x")))
        # out one element ahead of / behind the input, in one buffer
        for shift in (1, -1):
            buf = np.empty(len(mine) + 1, np.int64)
            if shift == 1:
                x, out = buf[:-1], buf[1:]
            else:
                x, out = buf[1:], buf[:-1]
            x[...] = mine
            res = ctx.run(lambda: distscan.cumsum(x, out=out, exclusive=exclusive, strategy=strategy, comm=ctx.comm))
            ctx.check(lambda: (_assert_is(res, out), assert_matches(out, ref, what=f"out shifted by {shift}")))
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
    ctx.check(lambda: (_assert_is(res, out),
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
    ctx.check(lambda: (_assert_is(res, out),
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


def test_reduce_matches_numpy(ctx):
    """reduce: NumPy's sum/prod/max/min of the global array (dtype included), axis 0 and None;
    empty: sum is 0, max raises ValueError (no identity) on every rank."""
    rng = ctx.rng
    for dtype in ("int8", "uint16", "int64", "float32", "float64", "complex64", "bool"):
        g = rng.integers(0, 5, (17, 3)).astype(dtype)
        for c in ctx.all_counts(17)[:2]:
            part = Ctx.rows(g, c, ctx.rank).copy()
            for opname in ops_for(dtype):
                for axis in (0, None):
                    got = ctx.run(lambda: distscan.reduce(part, opname, axis=axis, comm=ctx.comm))
                    with np.errstate(all="ignore"):
                        if opname in ("sum", "prod"):
                            exp = getattr(np, opname)(g, axis=axis)
                        else:
                            exp = UFUNCS[opname].reduce(g, axis=axis)
                    ctx.check(lambda: (np.testing.assert_allclose(np.asarray(got, np.complex128),
                                                                  np.asarray(exp, np.complex128), rtol=1e-5),
                                       np.testing.assert_equal(np.asarray(got).dtype, np.asarray(exp).dtype)))
    empty = np.empty((0, 2))
    got = ctx.run(lambda: distscan.reduce(empty, comm=ctx.comm))
    ctx.check(lambda: np.testing.assert_array_equal(got, [0.0, 0.0]))
    ctx.raises(ValueError, lambda: distscan.reduce(empty, "max", comm=ctx.comm))
