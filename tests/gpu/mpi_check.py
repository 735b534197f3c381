"""Multi-GPU checks run under ``mpirun`` by ``tests/gpu/test_mpi.py`` (one rank per GPU, or shared).

    mpirun -n K python tests/gpu/mpi_check.py [--expect-shared] [--only CHECKS_FUNCTION]

Every rank binds its GPU (``distscan.gpus.bind_gpu``), then scans CuPy arrays
(device-resident: only totals travel through MPI) and host arrays sent to
``backend="cuda"`` for both strategies, inclusive and exclusive, 1-D and 2-D, with
balanced, uneven and empty shards, and compares each rank's part with NumPy's scan
of the whole array: integers exactly, and both strategies identical.  Outputs are
poisoned first.  Prints ``GPU-MPI OK <checks>`` on rank 0 and exits 0, or prints
every failure and exits 1 (on every rank).
"""

from __future__ import annotations

import os
import sys
import traceback

import numpy as np
from mpi4py import MPI

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))  # the repository

import cupy as cp  # noqa: E402

import distscan  # noqa: E402
from distscan.gpus import bind_gpu  # noqa: E402
from distscan._dtypes import scan_types  # noqa: E402
from distscan.ops import get_op  # noqa: E402
from tests.support.reference import reference_scan  # noqa: E402 - NumPy's scan of the whole array

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()

CASES = [  # (dtype, op, trailing)
    ("int32", "sum", ()),
    ("int64", "sum", ()),
    ("int64", "sum", (3,)),
    ("uint8", "bitwise_xor", ()),
    ("int16", "prod", ()),
    ("int32", "max", ()),
    ("uint32", "sum", (40,)),
]


def layouts(n, rng):
    """Per-rank row counts: balanced, uneven (random), empty shards, all on the last rank."""
    base, extra = divmod(n, size)
    out = {"balanced": [base + (1 if r < extra else 0) for r in range(size)]}
    cuts = np.sort(rng.integers(0, n + 1, size - 1))
    out["uneven"] = list(np.diff(np.concatenate([[0], cuts, [n]])).astype(int))
    empty = [0] * size
    for r in range(0, size, 2):
        empty[r] = n // ((size + 1) // 2)
    empty[0] += n - sum(empty)
    out["empty-shards"] = empty
    out["last-only"] = [0] * (size - 1) + [n]
    return out


def random_global(rng, n, dtype, trailing, op):
    dt = np.dtype(dtype)
    shape = (n,) + trailing
    if op == "prod":
        return rng.choice(np.array([1, -1, 3, 1, 5, -1, 1], dtype=dt), size=shape)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dt)


def lean_checks(rng, check, failures):
    """The lean distributed call (1-D CuPy parts of a kind seen before: the call kinds of
    ``distscan._kinds.KINDS``): against NumPy for integers and bitwise against the general path
    (``timings=``) for floats, with and without ``out=``, inclusive and exclusive, uneven and
    empty shards; then a rank whose dtype differs once the others' kinds are warm: the same
    error everywhere."""
    from distscan import _kinds

    for dtype, kw in (("int32", {}), ("int32", {"dtype": "int32"}), ("int64", {}), ("float32", {}),
                      ("float64", {})):
        for n in (1_000_003, 2 * size + 1):
            g = rng.standard_normal(n).astype(dtype) if dtype[0] == "f" else \
                rng.integers(-1000, 1000, n).astype(dtype)
            for lname in ("uneven", "empty-shards"):
                counts = layouts(n, rng)[lname]
                starts = np.concatenate([[0], np.cumsum(counts)]).astype(int)
                local = cp.asarray(g[starts[rank]:starts[rank + 1]])
                for exclusive in (False, True):
                    tag = f"lean {dtype} {kw} n={n} {lname} excl={exclusive}"
                    try:
                        general = cp.asnumpy(distscan.cumsum(local, exclusive=exclusive, comm=comm, timings={}, **kw))
                        distscan.cumsum(local, exclusive=exclusive, comm=comm, **kw)  # registers the call kind
                        kinds = [k for k in _kinds.KINDS._kinds if k[0] is cp.ndarray]
                        check(bool(kinds), f"{tag}: no call kind remembered")
                        outs = [distscan.cumsum(local, exclusive=exclusive, comm=comm, **kw)]
                        poisoned = cp.full(local.shape, 77, dtype=general.dtype)
                        r = distscan.cumsum(local, exclusive=exclusive, comm=comm, out=poisoned, **kw)
                        check(r is poisoned, f"{tag}: out= not returned")
                        outs.append(r)
                        for got in outs:
                            got = cp.asnumpy(got)
                            check(got.dtype == general.dtype and np.array_equal(got, general),
                                  f"{tag}: lean differs from the general path")
                        if dtype[0] != "f":
                            want = reference_scan(g, "sum", exclusive=exclusive)[starts[rank]:starts[rank + 1]]
                            check(np.array_equal(general, want.astype(general.dtype)), f"{tag}: differs from NumPy")
                    except Exception as exc:  # noqa: BLE001
                        failures.append(f"rank {rank}: {tag}: {type(exc).__name__}: {exc}")
                        traceback.print_exc()
    if size > 1:
        # A warm kind gives the right result, then a rank whose dtype differs is refused everywhere.
        x = cp.arange(1000, dtype=cp.int64)
        for _ in range(3):
            r = distscan.cumsum(x, comm=comm)
        check(int(r[-1]) == 499500 * (rank + 1), f"a warm call kind gave {r[-1]}")
        part = x.astype(cp.float64) if rank == size - 1 else x
        try:
            distscan.cumsum(part, comm=comm)
            check(False, "a dtype that differs on one rank was not refused after the lean path was warm")
        except ValueError as exc:
            check("differ" in str(exc) and "rank" in str(exc), f"unexpected message: {exc}")


def module_keys():
    """The kernel modules these checks use (tests/gpu/test_mpi.py compiles them in parallel
    processes before it launches mpirun: the ranks then load them from CuPy's disk cache)."""
    from distscan.backends import cuda as gpu
    from distscan.backends.cuda import extended
    from distscan.ops import affine, compensated, segmented

    keys = [gpu.module_key(np.dtype(dt), scan_types(get_op(op), np.dtype(dt)), get_op(op)) for dt, op, _ in CASES]
    keys += [gpu.module_key(np.dtype(dt), scan_types(get_op(op), np.dtype(dt)), get_op(op))
             for dt, op in [("float64", "nansum"), ("float32", "logaddexp"), ("int64", "gcd"), ("int32", "sum"),
                            ("float64", "sum")]]
    for op, dt, reverse in [(get_op("sum"), "int64", True), (get_op("sum"), "int32", True),
                            (segmented(get_op("sum")), "int32", False), (segmented(get_op("sum"), True), "int64", True),
                            (segmented(get_op("max")), "float64", False), (affine(), "float64", False),
                            (affine(True, True), "complex128", True), (compensated(get_op("sum")), "float32", False)]:
        op_types = scan_types(op, np.dtype(dt))
        keys.append(extended.ext_module_key(np.dtype(dt), op_types, op, "lookback", reverse))
    return keys


def operator_checks(rng, check, failures):
    """Issue 30's scans across the ranks' GPUs against the CPU's scan of the whole array (one
    process, COMM_SELF): reverse, segmented (flags crossing every boundary), linear recurrences,
    compensated sums, the NaN-aware and logaddexp operators, gcd; integers exactly, floats within
    a relative bound."""
    self_ = MPI.COMM_SELF
    for n in (1_000_003, 2 * size + 1):
        b = rng.standard_normal(n)
        ints = rng.integers(-1000, 1000, n)
        a = rng.uniform(-1, 1, n)
        flags = rng.random(n) < 0.001
        nan_b = np.where(rng.random(n) < 0.1, np.nan, b)
        cases = [
            ("reverse int64", lambda f, x: f(x[0], reverse=True), distscan.cumsum, (ints,), True),
            ("reverse excl int32", lambda f, x: f(x[0], reverse=True, exclusive=True, initial=5), distscan.cumsum,
             (ints.astype(np.int32),), True),
            ("segmented int32", lambda f, x: f(x[0], segments=x[1]), distscan.cumsum, (ints.astype(np.int32), flags),
             True),
            ("segmented reverse excl", lambda f, x: f(x[0], segments=x[1], reverse=True, exclusive=True),
             distscan.cumsum, (ints, flags), True),
            ("segmented max f64", lambda f, x: f(x[0], segments=x[1]), distscan.cummax, (b, flags), True),
            ("recurrence f64", lambda f, x: distscan.linear_recurrence(x[1], x[0], comm=f), None, (b, a), False),
            ("recurrence seg rev c128", lambda f, x: distscan.linear_recurrence(x[1], x[0], segments=x[2], reverse=True,
                                                                                initial=1.0, comm=f),
             None, ((b + 1j * b[::-1]).astype(np.complex128), a, flags), False),
            ("compensated f32", lambda f, x: f(x[0], compensated=True), distscan.cumsum, (b.astype(np.float32),),
             False),
            ("nansum f64", lambda f, x: f(x[0]), distscan.nancumsum, (nan_b,), False),
            ("logaddexp f32", lambda f, x: f(x[0], np.logaddexp), distscan.scan, (b.astype(np.float32),), False),
            ("gcd int64", lambda f, x: f(x[0], "gcd"), distscan.scan, ((ints % 36) + 1,), True),
        ]
        for lname, counts in layouts(n, rng).items():
            starts = np.concatenate([[0], np.cumsum(counts)]).astype(int)
            mine = slice(starts[rank], starts[rank + 1])
            held = np.asarray(counts) > 0
            # every part's first row flagged (in reverse its segment end in scan order: the carry's
            # 'end', which the GPU's ordered reduction lost before the identity's EMPTY marker), and
            # every part's last row (forwards its one-item last segment: gcd keeps its sign)
            firsts, lasts = flags.copy(), flags.copy()
            firsts[starts[:-1][held]] = True
            lasts[starts[1:][held] - 1] = True
            edge_cases = [
                ("segmented rev firsts int64", lambda f, x: f(x[0], segments=x[1], reverse=True), distscan.cumsum,
                 (ints, firsts), True),
                ("segmented rev excl firsts gcd", lambda f, x: f(x[0], "gcd", segments=x[1], reverse=True,
                                                                 exclusive=True), distscan.scan, (ints, firsts), True),
                ("segmented lasts gcd", lambda f, x: f(x[0], "gcd", segments=x[1]), distscan.scan, (ints, lasts), True),
                ("segmented excl lasts lcm", lambda f, x: f(x[0], "lcm", segments=x[1], exclusive=True), distscan.scan,
                 ((ints % 7) - 3, lasts), True),
                # the first scanned item of a part (its last) after a carry whose last item ends a
                # segment: an empty prefix, -inf (the GPU gave nanmax's neutral NaN until 2026-11-25)
                ("segmented rev excl firsts nanmax f64", lambda f, x: f(x[0], "nanmax", segments=x[1], reverse=True,
                                                                        exclusive=True), distscan.scan,
                 (nan_b, firsts), True),
                ("recurrence seg rev firsts f64", lambda f, x: distscan.linear_recurrence(x[1], x[0], segments=x[2],
                                                                                          reverse=True, comm=f),
                 None, (b, a, firsts), False),
            ]
            for tag, call, fn, arrays, exact in cases + edge_cases:
                tag = f"{tag} n={n} {lname}"
                try:
                    # floats: the reference in double precision (a sequential float32 sum drifts further
                    # than the GPU's tree), cast to the result's dtype
                    wide = [x.astype(np.complex128 if x.dtype.kind == "c" else np.float64) if x.dtype.kind in "fc"
                            else x for x in arrays]
                    if fn is None:  # the call takes comm itself
                        want = call(self_, wide)
                        got = call(comm, [cp.asarray(x[mine]) for x in arrays])
                    else:
                        want = call(lambda *a_, **k: fn(*a_, comm=self_, **k), wide)
                        got = call(lambda *a_, **k: fn(*a_, comm=comm, **k), [cp.asarray(x[mine]) for x in arrays])
                    got = cp.asnumpy(got)
                    want = np.asarray(want)[mine].astype(got.dtype)
                    if exact:
                        check(got.dtype == want.dtype and np.array_equal(got, want, equal_nan=got.dtype.kind == "f"),
                              f"{tag}: differs")
                    else:
                        scale = np.abs(want).max(initial=1.0)
                        bound = (1e-4 if got.dtype in (np.float32, np.complex64) else 1e-9) * scale
                        check(got.dtype == want.dtype and np.allclose(got, want, rtol=0, atol=bound, equal_nan=True),
                              f"{tag}: differs beyond {bound:.3g}")
                except Exception as exc:  # noqa: BLE001
                    failures.append(f"rank {rank}: {tag}: {type(exc).__name__}: {exc}")
                    traceback.print_exc()


def seeded_lean_checks(rng, check, failures):
    """The warm state scans' seeded lean route (``ScanPlan._seeded_lean``: ``extended_lean`` with
    a rank's offset as its seed): calls of one kind in a row, ``out=`` on some ranks and not on
    others (a different set each call), uneven and empty parts, against the CPU's scan of the
    whole array; every earlier result the caller still holds is unchanged by the later calls."""
    self_ = MPI.COMM_SELF
    kinds = [
        ("segmented f32", lambda f, x, **k: distscan.cumsum(x[0], segments=x[1], comm=f, **k), np.float32),
        ("segmented reverse excl i64", lambda f, x, **k: distscan.cumsum(x[0], segments=x[1], reverse=True,
                                                                          exclusive=True, comm=f, **k), np.int64),
        ("recurrence f32", lambda f, x, **k: distscan.linear_recurrence(x[2], x[0], comm=f, **k), np.float32),
        ("recurrence reverse seg f64", lambda f, x, **k: distscan.linear_recurrence(x[2], x[0], segments=x[1],
                                                                                     reverse=True, comm=f, **k),
         np.float64),
        ("compensated f32", lambda f, x, **k: distscan.cumsum(x[0], compensated=True, comm=f, **k), np.float32),
        ("reverse cumsum f64", lambda f, x, **k: distscan.cumsum(x[0], reverse=True, comm=f, **k), np.float64),
        ("reverse excl initial i64", lambda f, x, **k: distscan.cumsum(x[0], reverse=True, exclusive=True,
                                                                        initial=7, comm=f, **k), np.int64),
    ]
    for name, call, dtype in kinds:
        held = []  # (tag, the result this rank holds, what it must stay)
        for k in range(4):
            n = int(rng.integers(1, 200_000)) * size + int(rng.integers(0, 7))
            counts = list(layouts(n, rng).values())[k % 4]
            starts = np.concatenate([[0], np.cumsum(counts)]).astype(int)
            mine = slice(starts[rank], starts[rank + 1])
            x = (rng.integers(-1000, 1000, n) if np.dtype(dtype).kind == "i" else rng.standard_normal(n)).astype(dtype)
            arrays = (x, rng.random(n) < 0.01, rng.uniform(0.5, 1.0, n).astype(dtype))
            wide = [a.astype(np.float64) if a.dtype.kind == "f" else a for a in arrays]
            tag = f"seeded lean {name} call {k} n={n}"
            try:
                want = np.asarray(call(self_, wide))[mine].astype(dtype)
                use_out = (rank + k) % 2 == 1
                out = cp.full(counts[rank], 0x5A, dtype=dtype) if use_out else None
                got = call(comm, [cp.asarray(a[mine]) for a in arrays], **({"out": out} if use_out else {}))
                check(not use_out or got is out, f"{tag}: out= not returned")
                got_h = cp.asnumpy(got)
                if dtype is np.int64:
                    check(np.array_equal(got_h, want), f"{tag}: differs")
                else:
                    bound = (1e-4 if dtype is np.float32 else 1e-9) * np.abs(want).max(initial=1.0)
                    check(np.allclose(got_h, want, rtol=0, atol=bound), f"{tag}: differs beyond {bound:.3g}")
                held.append((tag, got, got_h.copy()))
            except Exception as exc:  # noqa: BLE001
                failures.append(f"rank {rank}: {tag}: {type(exc).__name__}: {exc}")
                traceback.print_exc()
        cp.cuda.get_current_stream().synchronize()
        for tag, got, was in held:
            check(np.array_equal(cp.asnumpy(got), was), f"{tag}: a held result changed after later calls")


def seeded_lean_failure_checks(rng, check, failures):
    """A failure inside the seeded lean scanner (``ScanPlan._seeded_lean``) on one rank, after the
    exchange: every rank raises one error (the GPU calls' agreement after the exchange), none hangs;
    the next calls of the kind on every rank give the right results, and what a rank held from
    the call before the failure is unchanged."""
    from distscan.dist.plan import ScanPlan
    original = ScanPlan._seeded_lean
    n = 300_000 * size + 5
    counts = list(layouts(n, rng).values())[1]
    starts = np.concatenate([[0], np.cumsum(counts)]).astype(int)
    mine = slice(starts[rank], starts[rank + 1])
    x = rng.standard_normal(n).astype(np.float32)
    a = rng.uniform(0.5, 1.0, n).astype(np.float32)
    want = np.asarray(distscan.linear_recurrence(a.astype(np.float64), x.astype(np.float64),
                                                 comm=MPI.COMM_SELF))[mine]
    bound = 1e-4 * np.abs(want).max(initial=1.0)

    def call():
        return distscan.linear_recurrence(cp.asarray(a[mine]), cp.asarray(x[mine]), comm=comm)

    def failing(plan, *args):  # the scanner raises on this rank, as a failed launch would
        def scanner(*_):
            raise RuntimeError("injected failure in the seeded scanner")
        made = plan._seeded_state
        plan._seeded_state = scanner
        try:
            return original(plan, *args)
        finally:
            plan._seeded_state = made

    for victim in sorted({0, size - 1}):
        tag = f"seeded lean failure on rank {victim}"
        call()
        held = call()  # the kind is warm: the next call takes the seeded lean route
        held_h = cp.asnumpy(held)
        message = None
        if rank == victim:
            ScanPlan._seeded_lean = failing
        try:
            call()
        except Exception as exc:  # noqa: BLE001 - the agreed error, on every rank
            message = f"{type(exc).__name__}: {exc}"
        finally:
            ScanPlan._seeded_lean = original
        messages = comm.allgather(message)
        check(size == 1 or all(m is not None and "injected failure" in m for m in messages),
              f"{tag}: not raised alike on every rank: {messages}")
        check(len(set(messages)) == 1, f"{tag}: ranks raised different errors: {messages}")
        try:
            got = cp.asnumpy(call())
            check(np.allclose(got, want, rtol=0, atol=bound), f"{tag}: the next call differs")
        except Exception as exc:  # noqa: BLE001
            failures.append(f"rank {rank}: {tag}: next call: {type(exc).__name__}: {exc}")
        check(np.array_equal(cp.asnumpy(held), held_h), f"{tag}: a held result changed")


def one_coefficient_checks(rng, check, failures):
    """Recurrences whose coefficient is one value (or one a column) along the scanned axis, which
    the GPU reads for every item (``ext_states.coefficient_row``), passed differently on each rank
    (a Python float, a NumPy scalar, a 0-d or a broadcast CuPy array, a full array), four calls
    in a row (cold, then warm), 1-D and 2-D parts, uneven and empty: the CPU's result of the whole."""
    self_ = MPI.COMM_SELF
    for name, dtype, w, reverse, segs in (("f32", np.float32, 0, False, False), ("rev seg f64", np.float64, 0, True, True),
                                          ("c64 columns", np.complex64, 5, False, False),
                                          ("seg columns f64", np.float64, 3, True, True)):
        for k in range(4):
            n = int(rng.integers(1, 50_000)) * size + int(rng.integers(0, 7))
            counts = list(layouts(n, rng).values())[k % 4]
            starts = np.concatenate([[0], np.cumsum(counts)]).astype(int)
            mine = slice(starts[rank], starts[rank + 1])
            shape = (n,) + ((w,) if w else ())
            b = rng.standard_normal(shape).astype(dtype)
            row = (rng.uniform(0.5, 1.0, w or 1) * (1j if np.dtype(dtype).kind == "c" else 1)).astype(dtype)
            flags = rng.random(n) < 0.001 if segs else None
            tag = f"one coefficient {name} call {k} n={n}"
            try:
                wide = np.complex128 if np.dtype(dtype).kind == "c" else np.float64
                a_all = np.broadcast_to(row if w else row[0], shape).astype(wide)
                want = np.asarray(distscan.linear_recurrence(a_all, b.astype(wide), reverse=reverse, segments=flags,
                                                             comm=self_))[mine]
                way = (rank + k) % 5  # how this rank passes its coefficient, this call
                mine_shape = (counts[rank],) + shape[1:]
                a = ([float(row[0]) if dtype is not np.complex64 else complex(row[0]), row[0], cp.asarray(row[0]),
                      cp.broadcast_to(cp.asarray(row if w else row[0]), mine_shape),
                      cp.asarray(np.broadcast_to(row if w else row[0], mine_shape))][way])
                if w and way < 3:
                    a = cp.asarray(row)  # a row of one coefficient a column
                got = distscan.linear_recurrence(a, cp.asarray(b[mine]), reverse=reverse, comm=comm,
                                                 segments=None if flags is None else cp.asarray(flags[mine]))
                bound = (1e-4 if np.dtype(dtype).itemsize <= 8 and dtype is not np.float64 else 1e-9) * max(
                    1.0, float(np.abs(want).max(initial=1.0)))
                check(got.shape == mine_shape and np.allclose(cp.asnumpy(got), want, rtol=0, atol=bound),
                      f"{tag} way {way}: differs beyond {bound:.3g}")
            except Exception as exc:  # noqa: BLE001
                failures.append(f"rank {rank}: {tag}: {type(exc).__name__}: {exc}")
                traceback.print_exc()


def main():
    expect_shared = "--expect-shared" in sys.argv
    b = bind_gpu(comm)
    if rank == 0:
        # Compile every module once (CuPy's disk cache); the other ranks then load them.  No
        # multiprocessing here: spawned workers would re-import this script and start MPI again.
        for dt, op, trailing in CASES:
            distscan.scan(cp.ones((4,) + trailing, dtype=dt), op, comm=MPI.COMM_SELF)
    comm.Barrier()
    node = comm.Split_type(MPI.COMM_TYPE_SHARED)
    local_rank = node.Get_rank()
    node.Free()
    failures, checks = [], 0

    def check(cond, what):
        nonlocal checks
        checks += 1
        if not cond:
            failures.append(f"rank {rank}: {what}")

    check(cp.cuda.Device().id == b.device, f"current device {cp.cuda.Device().id} != bound {b.device}")
    check(b.device == local_rank % b.visible, f"local rank {local_rank} bound to {b.device} of {b.visible}")
    check(b.shared == expect_shared, f"shared={b.shared}, expected {expect_shared}")
    devs = comm.allgather(b.device)
    if not expect_shared:
        check(len(set(devs)) == len(devs), f"ranks share GPUs: {devs}")

    rng = np.random.default_rng(20261121)  # same global arrays on every rank
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None  # one check function alone
    for dtype, op, trailing in CASES if only is None else ():
        for n in (1_000_003, 2 * size + 1):
            g = random_global(rng, n, dtype, trailing, op)
            for lname, counts in layouts(n, rng).items():
                starts = np.concatenate([[0], np.cumsum(counts)]).astype(int)
                local = g[starts[rank]:starts[rank + 1]]
                for exclusive in (False, True):
                    want = reference_scan(g, op, exclusive=exclusive)[starts[rank]:starts[rank + 1]]
                    got_by = {}
                    for strategy in ("reduce_then_scan", "scan_then_add"):
                        tag = f"{dtype}{trailing} {op} n={n} {lname} excl={exclusive} {strategy}"
                        try:
                            x = cp.asarray(local)
                            out = cp.full(local.shape, 0x5A, dtype=want.dtype)  # poison
                            timings = {}
                            r = distscan.scan(x, op, exclusive=exclusive, out=out, comm=comm, strategy=strategy,
                                              timings=timings)
                            check(r is out and isinstance(r, cp.ndarray) and r.device.id == b.device,
                                  f"{tag}: result not the out array on the bound GPU")
                            got = cp.asnumpy(r)
                            check(got.dtype == want.dtype and np.array_equal(got, want), f"{tag}: differs from NumPy")
                            got_by[strategy] = got
                            if size > 1:
                                check("exscan" in timings, f"{tag}: no exscan timing ({timings})")
                        except Exception as exc:  # noqa: BLE001 - every rank raised the same (agreed) error
                            failures.append(f"rank {rank}: {tag}: {type(exc).__name__}: {exc}")
                            traceback.print_exc()
                    if len(got_by) == 2:
                        check(np.array_equal(got_by["reduce_then_scan"], got_by["scan_then_add"]),
                              f"{dtype} {op} {lname}: strategies differ")
            # A host (NumPy) array sent to backend="cuda": runs on the bound GPU, comes back as NumPy.
            counts = layouts(n, rng)["uneven"]
            starts = np.concatenate([[0], np.cumsum(counts)]).astype(int)
            local = g[starts[rank]:starts[rank + 1]]
            try:
                r = distscan.scan(local, op, comm=comm, backend="cuda")
                check(isinstance(r, np.ndarray) and np.array_equal(r, reference_scan(g, op)[starts[rank]:starts[rank + 1]]),
                      f"host array on backend=cuda {dtype} {op} n={n}: differs")
            except Exception as exc:  # noqa: BLE001
                failures.append(f"rank {rank}: host array on backend=cuda {dtype} {op}: {exc}")
            check(cp.cuda.Device().id == b.device, "device changed")

    for checks_of in (lean_checks, operator_checks, seeded_lean_checks, seeded_lean_failure_checks,
                      one_coefficient_checks):
        if only is None or checks_of.__name__ == only:
            checks_of(rng, check, failures)

    # A failure on one rank (a mismatched trailing shape) raises the same error everywhere, no hang.
    try:
        x = cp.zeros((5,) + ((2,) if rank == size - 1 and size > 1 else ()), dtype=cp.int64)
        distscan.cumsum(x, comm=comm)
        check(size == 1, "mismatched trailing shapes were not refused")
    except ValueError as exc:
        check("differs across ranks" in str(exc), f"unexpected message: {exc}")

    all_fail = comm.allgather(failures)
    total_checks = comm.allreduce(checks)
    if rank == 0:
        flat = [f for fs in all_fail for f in fs]
        for f in flat[:50]:
            print("FAIL", f, flush=True)
        print(f"GPU-MPI {'OK' if not flat else 'FAILED'} ranks={size} gpus={len(set(devs))} "
              f"checks={total_checks} failures={len(flat)}", flush=True)
    return 1 if any(all_fail) else 0


if __name__ == "__main__":
    sys.exit(main())
