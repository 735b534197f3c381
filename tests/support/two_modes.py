"""One test in two modes (the ``ctx`` fixture of tests/conftest.py gives a :class:`Ctx`):

``serial``  ``comm=MPI.COMM_SELF``: the whole array on one rank (runs in a plain ``pytest`` run,
            and on every rank, independently, under ``mpiexec``).
``dist``    marked ``mpi``: the global NumPy array is split along axis 0 over ``MPI.COMM_WORLD``
            (uneven parts, some ranks empty, all rows on one rank, ...); each rank scans its part
            with distscan and compares it with its slice of NumPy's result on the whole array.
            Runs under ``mpiexec -n K python -m pytest --with-mpi``.

``check_scan(ctx, g, op, ...)`` splits ``g``, scans each part, and compares with
``tests.support.reference.Ref`` through ``assert_matches`` (integers and bool exactly, float and
complex within a bound of the rounding; NaN and infinities where NumPy has them); the input must
be left unchanged.  ``shaped_arange`` and ``shaped_random`` are CuPy's test data
(``cupy.testing``).  Used by the tests of the API against NumPy's and the peer projects' cases
(tests/test_api_*.py).
"""

from __future__ import annotations

import numpy as np

import distscan

from tests.support.reference import Ref, assert_matches


ALL_DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
              "float16", "float32", "float64", "complex64", "complex128"]
INT_DTYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]
FLOAT_DTYPES = ["float16", "float32", "float64"]
NAMED = {"sum": distscan.cumsum, "prod": distscan.cumprod, "max": distscan.cummax, "min": distscan.cummin}


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


def call_scan(ctx, part, opname, *, via="named", **kwargs):
    kwargs = {k: v for k, v in kwargs.items() if v is not UNSET}
    if via == "named":
        return ctx.run(lambda: NAMED[opname](part, comm=ctx.comm, **kwargs))
    if via == "exclusive_scan":
        kwargs.pop("exclusive", None)
        return ctx.run(lambda: distscan.exclusive_scan(part, opname, comm=ctx.comm, **kwargs))
    return ctx.run(lambda: distscan.scan(part, opname, comm=ctx.comm, **kwargs))


UNSET = object()


def check_scan(ctx, g, opname, *, axis=UNSET, dtype=UNSET, exclusive=UNSET, initial=UNSET,
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
    ref = Ref(g, opname, axis=0 if axis is UNSET else axis, dtype=None if dtype is UNSET else dtype,
              exclusive=False if exclusive is UNSET else exclusive,
              initial=None if initial is UNSET else initial)
    row_size = int(np.prod(g.shape[1:])) if g.ndim else 1
    mine = ref.part(counts, ctx.rank, row_size)
    label = (f"{what} {opname} {g.dtype}{list(g.shape)} axis={'default' if axis is UNSET else axis} "
             f"dtype={None if dtype is UNSET else dtype} exclusive={exclusive is True} "
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


def assert_is_out(a, b):
    assert a is b, "the result is not the out= array"
