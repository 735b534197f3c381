"""Calls in a row across every public function and option, where each rank draws its own way of
passing its part and, now and then, its own mistake; under the gather exchange and under recursive
doubling (``DOUBLING_RANKS`` patched to 1 on every rank alike), at any rank count.

Each call draws one function (``cumsum``, ``cumprod``, ``cummax``, ``nancumsum``, ``scan``,
``exclusive_scan``, ``cumulative_sum``, ``linear_recurrence``, ``reduce``), its dtype and options
(``reverse=``, ``segments=``, ``exclusive=``, ``initial=``, ``include_initial=``, ``compensated=``,
``dtype=``, ``axis=`` over 2-D parts), the row counts (empty parts among them), and for every rank on
its own: the kind of its part (contiguous, strided, reversed, Fortran, list, read-only, byte-swapped,
memmap, a NumPy scalar), of its flags (bool array, list, int8), of its coefficients (array or a
Python number), an ``out=`` or none (and, alike on every rank, ``node_size=`` now and then: the
node method under the gather), a ``dtype=`` that names the default or none, ``timings={}`` or
none.  Then, in about half the calls, one or two ranks make a mistake of their own: one that is
refused on one rank alone too (an unknown keyword, a positional argument too many, a missing part, a
part passed by position and by keyword, an ``out=`` of another shape, read-only or a list, flags of
another length or 2-D, an axis out of bounds, an object part, a non-associative ufunc, a flag given
as an array, a ragged or complex ``initial=``, an unknown dtype/strategy/hierarchy/algorithm/backend
name, ``node_size=0``), or a difference from the other ranks (flags on some ranks only,
``reverse=``/``exclusive=``/``compensated=``/``include_initial=``/``dtype=``/the operator/a projected
``initial=`` that differ, another trailing shape).

Caught by it (2026-11-27; found by reading the code before the first collective while writing it, each hung
every other rank; tests/dist/test_agree.py has their own tests):
a flag without a truth value (``reverse=np.array([True, False])``), a ragged ``linear_recurrence``
``initial=``, and a part passed twice (``scan(x, "max", op="min")``) raised on their rank alone,
before any collective.

The promise checked: a call without a mistake gives every rank NumPy's answer on the concatenation
(the data are small whole numbers: exact in any association), and a call with one raises on every
rank, with the same type and message; never a hang (pytest-timeout ends one), and the calls after a
failure are right.  The draws come from a seed of rank 0 (``DISTSCAN_TEST_SEED`` repeats one).

Runs serially and under ``mpiexec -n K python -m pytest --with-mpi``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import distscan
from distscan import _kinds
from distscan._dtypes import scan_types
from distscan.dist import exchange as exchange_module
from distscan.ops import get_op

from tests.support.kinds import part_as
from tests.support.ranks import all_ranks_ok
from tests.support.reference import accumulate0, plain_scan_reference, recurrence_reference, segmented_reference
from tests.support.seeds import shared_rng

pytestmark = [pytest.mark.anyranks, pytest.mark.timeout(240)]

CALLS = 30  # calls in a row per test
BLOCKS = 2  # tests (new seeds) per exchange

FUNCTIONS = ["cumsum", "cumprod", "cummax", "nancumsum", "scan", "exclusive_scan", "cumulative_sum",
             "linear_recurrence", "reduce"]
DTYPES = {"cumsum": ["int64", "int32", "float64", "float32", "bool", "uint8"], "cumprod": ["int64", "float64"],
          "cummax": ["int16", "float32", "int64"], "nancumsum": ["float64", "float32"],
          "scan": ["int64", "float64", "int32"], "exclusive_scan": ["int64", "float64"],
          "cumulative_sum": ["int64", "float64", "int32"], "linear_recurrence": ["float64", "int64"],
          "reduce": ["int64", "float64", "int32"]}
SCAN_OPS = ["sum", "prod", "max", "min", "bitwise_xor"]
NAMED_OPS = {"cumsum": "sum", "cumprod": "prod", "cummax": "max", "nancumsum": "nansum", "cumulative_sum": "sum"}
PART_KINDS = ["contiguous", "contiguous", "contiguous", "strided", "reversed", "fortran", "list", "readonly",
              "byteswapped", "memmap", "scalar"]
FLAG_KINDS = ["bool", "bool", "list", "int8"]
# mistakes a rank makes alone (refused on one rank too), and differences between ranks (refused
# where another rank does otherwise: drawn on fewer ranks than all)
LOCAL_MISTAKES = ["unknown keyword", "extra positional", "missing part", "out shape", "read-only out",
                  "segments length", "axis", "object", "subtract", "flag array", "ragged initial", "bogus name",
                  "node size", "segments 2-D", "out list", "complex initial", "part twice"]
DIFFERENCES = ["segments missing", "segments extra", "reverse", "exclusive", "compensated", "include_initial",
               "dtype", "operator", "initial", "trailing"]


# -- one call, drawn alike on every rank ----------------------------------------------------------------

def draw_call(rng, size):
    fn = str(rng.choice(FUNCTIONS))
    dtype = np.dtype(str(rng.choice(DTYPES[fn])))
    op = NAMED_OPS.get(fn)
    if fn in ("scan", "reduce"):
        op = str(rng.choice(SCAN_OPS if dtype.kind in "iu" else SCAN_OPS[:4]))
    elif fn == "exclusive_scan":
        op = str(rng.choice(["sum", "max"]))
    elif fn == "linear_recurrence":
        op = "sum"
    c = {"fn": fn, "dtype": dtype, "op": op, "reverse": False, "segmented": False, "exclusive": False,
         "initial": None, "include_initial": False, "compensated": False, "axis": 0, "width": 0}
    state_ok = fn not in ("reduce", "cumulative_sum", "exclusive_scan") and not (fn == "scan" and op == "bitwise_xor")
    if fn != "reduce":
        c["reverse"] = bool(rng.random() < 0.4)
    if state_ok and fn != "linear_recurrence" and rng.random() < 0.35:
        c["segmented"] = True
    if fn == "linear_recurrence" and rng.random() < 0.3:
        c["segmented"] = True
    if fn == "exclusive_scan":
        c["exclusive"] = True
    elif fn == "scan" and rng.random() < 0.3:
        c["exclusive"] = True
    if fn == "scan" and op == "sum" and dtype.kind == "f" and not c["segmented"] and rng.random() < 0.5:
        c["compensated"] = True
    if fn in ("scan", "cumulative_sum") and not c["exclusive"] and not c["segmented"] and rng.random() < 0.4:
        c["include_initial"] = True
    if fn in ("scan", "exclusive_scan", "cumsum", "linear_recurrence") and rng.random() < 0.4:
        if fn == "linear_recurrence":
            c["initial"] = int(rng.integers(1, 4))
        elif op in ("sum", "prod", "bitwise_xor") or op in ("max", "min") and c["segmented"]:
            c["initial"] = int(rng.integers(1, 4))
        elif op in ("max", "min"):
            c["initial"] = int(rng.integers(-2, 3))
    if fn in ("cumsum", "scan", "reduce", "cumulative_sum") and not c["segmented"] and rng.random() < 0.3:
        c["width"] = 2  # 2-D parts
        c["axis"] = rng.choice([0, None, 1, -1]) if fn != "reduce" else rng.choice([0, None])
        c["axis"] = None if c["axis"] is None else int(c["axis"])
        if fn == "cumulative_sum" and c["axis"] is None:
            c["axis"] = 0  # the Array API's cumulative_sum takes axis=None for 1-D parts only
    if fn == "linear_recurrence":
        # (floats: whole numbers that stay small, exact in any association; integers wrap exactly)
        c["a_values"] = [-1, 0, 1, 2] if dtype.kind == "i" else [-1.0, 0.0, 1.0, 1.0]
        c["a_scalar"] = bool(rng.random() < 0.3)  # one a for every element: a Python number on some ranks
    # the node method under the gather (node_size= on every rank alike; reduce takes none)
    c["node_size"] = None if fn == "reduce" else [None, None, None, 1, 2][int(rng.integers(0, 5))]
    counts = rng.choice([0, 0, 1, 1, 2, 3, 5, 8], size)
    if rng.random() < 0.1:
        counts[:] = 0
    c["counts"] = [int(k) for k in counts]
    n = int(counts.sum())
    shape = (n, c["width"]) if c["width"] else (n,)
    if op == "prod":
        g = rng.integers(-2, 3, shape)
    elif dtype.kind == "b":
        g = rng.integers(0, 2, shape)
    elif dtype.kind == "u":
        g = rng.integers(0, 10, shape)
    else:
        g = rng.integers(-9, 10, shape)
    c["g"] = g.astype(dtype)
    if fn == "nancumsum":
        c["g"][rng.random(shape) < 0.2] = np.nan
    c["flags"] = rng.random(n) < 0.3
    if fn == "linear_recurrence":
        a = rng.choice(c["a_values"], n)
        if c["a_scalar"]:
            a[:] = a[0] if n else c["a_values"][2]
        c["a"] = np.asarray(a, dtype)
    # per rank: how it passes its part
    c["kinds"] = [str(k) for k in rng.choice(PART_KINDS, size)]
    c["flag_kinds"] = [str(k) for k in rng.choice(FLAG_KINDS, size)]
    c["outs"] = [bool(b) for b in rng.random(size) < 0.3]
    c["dtype_named"] = [bool(b) for b in rng.random(size) < 0.2]
    c["a_kinds"] = [bool(b) for b in rng.random(size) < 0.5]  # a Python number where a is one value
    c["timed"] = [bool(b) for b in rng.random(size) < 0.15]  # timings={} (this rank's phases timed)
    # mistakes: none in about half the calls, else on one rank or two
    c["mistakes"] = {}
    if size > 1 and rng.random() < 0.5 or size == 1 and rng.random() < 0.2:
        kinds = LOCAL_MISTAKES + (DIFFERENCES if size > 1 else [])
        for rank in rng.choice(size, 1 if size <= 2 or rng.random() < 0.7 else 2, replace=False):
            c["mistakes"][int(rank)] = str(rng.choice(kinds))
    return c


def expected_whole(c):
    """NumPy's answer on the whole array: the scan (of the result dtype) or the reduction."""
    g, fn, op = c["g"], c["fn"], c["op"]
    if fn == "nancumsum":
        g = np.where(np.isnan(g), 0, g).astype(g.dtype)
        op = "sum"
    if fn == "linear_recurrence":
        a = c["a"]
        y = recurrence_reference(a, g, initial=c["initial"] or 0, reverse=c["reverse"],
                                 segments=c["flags"] if c["segmented"] else None)
        return y.astype(np.result_type(a, g))
    o = get_op(op)
    t = scan_types(o, g.dtype, None)
    if fn == "reduce":
        whole = g.reshape(-1) if c["axis"] is None else g
        if whole.shape[0] == 0 and o.ufunc.identity is None:
            return None  # NumPy refuses: every rank raises
        with np.errstate(all="ignore"):
            return np.asarray(o.ufunc.reduce(whole, axis=0, dtype=t.acc)).astype(t.result)
    if c["segmented"]:
        return segmented_reference(g, c["flags"], op, exclusive=c["exclusive"], initial=c["initial"],
                                   reverse=c["reverse"])
    if c["axis"] == 1 or c["axis"] == -1:
        return None  # each rank's own scan (local_expected)
    h = g.reshape(-1) if c["axis"] is None else g
    return plain_scan_reference(h, o, t, exclusive=c["exclusive"], initial=c["initial"], reverse=c["reverse"],
                                include_initial=c["include_initial"])


def rank_expected(c, size, rank):
    """This rank's part of the answer (a reduction: the whole), or None where every rank must raise."""
    whole = expected_whole(c)
    starts = np.concatenate([[0], np.cumsum(c["counts"])]).astype(int)
    lo, hi = starts[rank], starts[rank + 1]
    if c["fn"] == "reduce":
        return whole
    w = max(1, c["width"])
    if c["axis"] in (1, -1):  # local: this rank's own part scanned along its rows
        p = c["g"][lo:hi]
        o = get_op(c["op"])
        t = scan_types(o, p.dtype, None)
        q = p[:, ::-1] if c["reverse"] else p
        res = accumulate0(q.T, o.ufunc, t.acc, exclusive=c["exclusive"], initial=c["initial"],
                          first=o.identity(t.acc)).astype(t.result).T
        if c["include_initial"]:
            start = o.identity(t.acc) if c["initial"] is None else c["initial"]
            res = np.concatenate([np.full((res.shape[0], 1), start, t.result), res], axis=1)
        return res[:, ::-1] if c["reverse"] else res
    if c["axis"] is None:
        lo, hi = lo * w, hi * w
    extra = [0] * size
    if c["include_initial"]:
        extra[size - 1 if c["reverse"] else 0] = 1
    lo += sum(extra[:rank])
    hi += sum(extra[:rank + 1])
    return whole[lo:hi]


FUNCTION = {name: getattr(distscan, name) for name in FUNCTIONS}


def rank_call(c, size, rank, tmp_path, k):
    """``(function, args, kwargs, mistake)`` of this rank's call."""
    starts = np.concatenate([[0], np.cumsum(c["counts"])]).astype(int)
    lo, hi = starts[rank], starts[rank + 1]
    fn, p = c["fn"], c["g"][lo:hi].copy()
    kind = c["kinds"][rank]
    mistake = c["mistakes"].get(rank)
    if kind == "scalar" and not (hi - lo == 1 and p.ndim == 1 and not c["include_initial"] and c["axis"] == 0
                                 and fn != "cumulative_sum"):  # (the Array API's names refuse 0-d parts)
        kind = "contiguous"
    x = p[0] if kind == "scalar" else part_as(p, kind, tmp_path, f"c{k}r{rank}")
    kw = {}
    if fn in ("scan", "exclusive_scan", "reduce"):
        kw["op"] = c["op"]
    if c["reverse"]:
        kw["reverse"] = True
    if c["segmented"]:
        f = c["flags"][lo:hi]
        fk = c["flag_kinds"][rank]
        kw["segments"] = f.tolist() if fk == "list" else f.astype(np.int8) if fk == "int8" else f.copy()
    if c["exclusive"] and fn == "scan":
        kw["exclusive"] = True
    if c["initial"] is not None:
        kw["initial"] = c["initial"]
    if c["include_initial"]:
        kw["include_initial"] = True
    if c["compensated"]:
        kw["compensated"] = True
    if c["axis"] != 0 or fn == "cumulative_sum" and c["width"]:  # (cumulative_sum's default is None)
        kw["axis"] = c["axis"]
    args = (x,)
    if fn == "linear_recurrence":
        a = c["a"][lo:hi]
        if c["a_scalar"] and c["a_kinds"][rank]:
            a = c["a_values"][2] if not len(c["a"]) else c["a"][0].item()
        args = (a, x)
    expected = None if c["mistakes"] else rank_expected(c, size, rank)
    if c["dtype_named"][rank] and fn not in ("nancumsum",):
        if fn == "linear_recurrence":
            kw["dtype"] = np.result_type(c["a"], c["g"])
        else:
            kw["dtype"] = scan_types(get_op(c["op"]), c["g"].dtype, None).result
    if c["outs"][rank] and fn != "reduce" and kind != "scalar":
        shape_dtype = rank_expected(c, size, rank)
        if shape_dtype is not None:
            kw["out"] = np.full(shape_dtype.shape, 7, shape_dtype.dtype)
    if c["node_size"] is not None:
        kw["node_size"] = c["node_size"]
    if c["timed"][rank] and fn != "reduce":
        kw["timings"] = {}
    if mistake == "flag array":  # no truth value
        name = str(np.random.default_rng(k).choice(["reverse", "include_initial", "compensated", "exclusive"]))
        if fn in ("cumsum", "cumprod", "cummax", "nancumsum", "linear_recurrence", "exclusive_scan") \
                and name in ("include_initial", "compensated") or fn == "reduce" \
                or name == "exclusive" and fn not in ("scan", "cumsum"):
            name = "reverse" if fn != "reduce" else "axis"
        kw[name] = np.array([True, False])
    elif mistake == "ragged initial":
        kw["initial"] = [[1], [1, 2]] if fn != "reduce" else None
        if fn == "reduce" or fn == "cumulative_sum":
            kw.pop("initial")
            kw["axis"] = [[0], [0, 1]]
    elif mistake == "bogus name":
        name = str(np.random.default_rng(k).choice(["dtype", "strategy", "hierarchy", "algorithm", "backend"]))
        if fn == "reduce" and name in ("strategy", "hierarchy", "algorithm"):
            name = "dtype"
        kw[name] = "bogus"
    elif mistake == "node size":
        if fn in ("reduce",):
            kw["axis"] = 3
        else:
            kw["node_size"] = 0
    elif mistake == "segments 2-D":
        if fn in ("reduce", "cumulative_sum", "exclusive_scan") or fn == "scan" and c["op"] == "bitwise_xor" \
                or c["include_initial"] or c["compensated"]:
            kw["axis"] = 7
        else:
            kw["segments"] = np.zeros((hi - lo, 2), bool)
    elif mistake == "out list":
        if fn == "reduce":
            kw["axis"] = 7
        else:
            e = rank_expected(c, size, rank)
            kw["out"] = [0] * (len(e) if e is not None and np.ndim(e) else 1)
    elif mistake == "complex initial":
        if fn == "reduce" or fn == "cumulative_sum" or c["dtype"].kind == "c":
            kw["axis"] = 7
        else:
            kw["initial"] = 1 + 2j
    if mistake == "part twice":  # by position and by keyword
        if "op" in kw:
            args = args + (kw["op"],)
        elif fn == "linear_recurrence":
            kw["b"] = args[-1]
        else:  # (cumulative_sum's x is positional-only: there x= is an unknown keyword)
            kw["x"] = args[0]
    if mistake == "unknown keyword":
        kw["bogus"] = 1
    elif mistake == "extra positional":
        if "op" in kw:
            args = args + (kw.pop("op"),)
        args = args + (0,)
    elif mistake == "missing part":
        args = args[:-1]
    elif mistake == "out shape":
        kw["out"] = np.empty((3, 19), np.float64) if fn != "reduce" else None
        if fn == "reduce":
            kw.pop("out")
            kw["bogus_out"] = 1
    elif mistake == "read-only out":
        e = rank_expected(c, size, rank) if expected is None else expected
        if fn == "reduce" or e is None or kind == "scalar":
            kw["axis"] = 7
        else:
            ro = np.zeros(e.shape, e.dtype)
            ro.flags.writeable = False
            kw["out"] = ro
    elif mistake == "segments length":
        # one flag too many along the scanned axis: a 2-D part's axis=None scans its p.size items, and
        # axis=1 its width (hi - lo + 1 flags were right for a (1, 2) part there: seed 9070254657673149978)
        along = p.size if c["axis"] is None else p.shape[c["axis"]]
        kw["segments"] = np.zeros(along + 1, bool)
        if fn in ("reduce", "cumulative_sum", "exclusive_scan") or fn == "scan" and c["op"] == "bitwise_xor":
            kw.pop("segments")
            kw["axis"] = 7
    elif mistake == "segments missing":
        if "segments" in kw:
            del kw["segments"]
        else:
            kw["axis"] = 7
    elif mistake == "segments extra":
        if "segments" in kw or fn in ("reduce", "cumulative_sum", "exclusive_scan") or c["width"] \
                or fn == "scan" and c["op"] == "bitwise_xor" or c["include_initial"] or c["compensated"]:
            kw["axis"] = 7
        else:
            kw["segments"] = np.zeros(hi - lo, bool)
    elif mistake == "reverse":
        if fn == "reduce":
            kw["reverse"] = True  # an unknown keyword there
        else:
            kw["reverse"] = not c["reverse"]
    elif mistake == "exclusive":
        if fn == "scan" and not c["include_initial"]:
            kw["exclusive"] = not c["exclusive"]
        else:
            kw["axis"] = 7
    elif mistake == "compensated":
        if fn == "scan" and c["op"] == "sum" and c["dtype"].kind == "f" and not c["segmented"]:
            kw["compensated"] = not c["compensated"]
        else:
            kw["axis"] = 7
    elif mistake == "include_initial":
        if fn in ("scan", "cumulative_sum") and not c["exclusive"]:
            kw["include_initial"] = not c["include_initial"]
        else:
            kw["axis"] = 7
    elif mistake == "dtype":
        kw["dtype"] = np.int64 if c["dtype"].kind == "f" or fn == "nancumsum" else np.float64
        if fn in ("cummax",) and c["dtype"] == np.int64:
            kw["dtype"] = np.float32
        if c["dtype"].kind == "f" and fn in ("cumsum", "scan", "reduce") and c["op"] not in ("sum", "prod"):
            kw["dtype"] = np.float32 if c["dtype"] == np.float64 else np.float64
        if fn == "nancumsum" or fn == "linear_recurrence" and c["dtype"].kind == "f":
            kw["dtype"] = np.float32 if c["dtype"] == np.float64 else np.float64
    elif mistake == "operator":
        if "op" in kw:
            kw["op"] = "max" if kw["op"] != "max" else "min"
        else:
            kw["axis"] = 7
    elif mistake == "initial":
        if (c["segmented"] or fn == "linear_recurrence") and c["op"] not in ("max", "min"):
            kw["initial"] = (c["initial"] or 0) + 5
        else:
            kw["axis"] = 7
    elif mistake == "axis":
        kw["axis"] = 5
    elif mistake == "object":
        x = np.asarray(p).astype(object)
        args = (args[0], x) if fn == "linear_recurrence" else (x,)
    elif mistake == "trailing":
        q = np.ones((max(1, hi - lo), 3), c["dtype"])
        args = (args[0], q) if fn == "linear_recurrence" else (q,)
        kw.pop("segments", None)
        kw.pop("out", None)
        if c["axis"] != 0:  # flattened, or scanned along its rows: a part of any trailing shape is valid
            kw["axis"] = 7
    elif mistake == "subtract":
        if "op" in kw:
            kw["op"] = np.subtract
        else:
            kw["axis"] = 9
    return FUNCTION[fn], args, kw, mistake, expected, x


def _shown(v):
    """An argument as a failure's message shows it: arrays and lists by their kind."""
    if isinstance(v, np.ndarray) and v.ndim:
        return f"array{v.shape}"
    return f"list of {len(v)}" if isinstance(v, list) else v


def run_call(c, comm, tmp_path, k):
    size, rank = comm.size, comm.rank
    fn, args, kw, mistake, expected, x = rank_call(c, size, rank, tmp_path, k)
    before = np.array(x, copy=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            got = fn(*args, comm=comm, **kw)
            outcome = ("ok",)
        except Exception as exc:  # noqa: BLE001 - compared across ranks
            got, outcome = None, ("raised", f"{type(exc).__name__}: {exc}")
    seen = comm.allgather(outcome)
    described = {key: (v if not isinstance(v, np.ndarray) else "array") for key, v in c.items()
                 if key not in ("g", "flags", "a")}

    def check():
        what = f"call {k}: {described}; rank {rank}: {[_shown(a) for a in args[:-1]]} " \
               f"{ {key: _shown(v) for key, v in kw.items()} }"
        if c["mistakes"] or (expected is None and c["fn"] == "reduce"):
            assert {o[0] for o in seen} == {"raised"}, f"{what}: {seen}"
            assert len(set(seen)) == 1, f"{what}: different errors {seen}"
            return
        assert outcome == ("ok",), f"{what}: {outcome}, all: {seen}"
        if "out" in kw:
            assert got is kw["out"], f"{what}: out= not returned"
        want = expected
        g = np.asarray(got)
        if c["kinds"][rank] == "scalar" and np.ndim(got) == 0:
            want = want.reshape(())
        assert g.shape == want.shape and g.dtype == want.dtype, (what, g.shape, g.dtype, want.shape, want.dtype)
        np.testing.assert_array_equal(g, want, err_msg=what)
        np.testing.assert_array_equal(np.asarray(x), before, err_msg=f"{what}: input modified")

    all_ranks_ok(comm, check)


@pytest.fixture(params=["gather", "doubling"])
def exchange_kind(request, monkeypatch):
    """The exchange every rank uses alike: the gather, or recursive doubling from one rank on (the
    caches emptied before and after, so that no plan made under the other one is kept)."""
    monkeypatch.setattr(exchange_module, "DOUBLING_RANKS", 1 if request.param == "doubling" else 1 << 30)
    _kinds.PLANS.clear()
    _kinds.KINDS.clear()
    yield request.param
    _kinds.PLANS.clear()
    _kinds.KINDS.clear()


@pytest.mark.manyranks
@pytest.mark.parametrize("block", range(BLOCKS))
def test_mixed_calls_with_per_rank_kinds_and_mistakes(comm, exchange_kind, block, tmp_path_factory):
    rng = shared_rng(comm)
    tmp_path = tmp_path_factory.mktemp("parts")
    for k in range(CALLS):
        run_call(draw_call(rng, comm.size), comm, tmp_path, k)
    # the communicator is whole afterwards
    y = distscan.cumsum(np.arange(3) + comm.rank, comm=comm)
    whole = np.concatenate([np.arange(3) + r for r in range(comm.size)])
    all_ranks_ok(comm, lambda: np.testing.assert_array_equal(y, np.cumsum(whole)[3 * comm.rank:3 * comm.rank + 3]))
