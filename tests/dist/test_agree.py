"""Agreement (distscan.dist.agree): a failure or a mismatch on one rank raises the same exception on every
rank, and nobody hangs: dtypes, operators, arguments and trailing shapes that differ (named in words,
an empty part's dtype included), bad input on one rank, a failure injected mid-scan on one rank, a
floating-point error in one rank's finish, a 0-d part on one rank; and how a standard exception is
rebuilt by module and name on the other ranks.

Runs serially and under ``mpiexec -n K python -m pytest --with-mpi``.
"""

import sys

import numpy as np
import pytest

import distscan
from distscan import DistScanError
from distscan.backends import cpu as cpu_backend

from tests.support.ranks import all_ranks_ok, outcome_of, raises_everywhere

pytestmark = [pytest.mark.anyranks, pytest.mark.timeout(120)]

STRATEGIES = ["reduce_then_scan", "scan_then_add"]


@pytest.mark.manyranks
@pytest.mark.mpi(min_size=2)
def test_mismatched_dtype_across_ranks(comm):
    x = np.arange(5, dtype=np.int32 if comm.rank == 0 else np.int64)
    msg = raises_everywhere(comm, ValueError, "differs across ranks", lambda: distscan.cumsum(x, comm=comm))
    assert "int32" in msg or "<i4" in msg


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("kwargs_of_rank", [
    lambda r: {"op": "sum" if r == 0 else "max"},
    lambda r: {"exclusive": r == 1},
    lambda r: {"axis": 0 if r == 0 else None},
    lambda r: {"strategy": STRATEGIES[r % 2]},
])
def test_mismatched_arguments_across_ranks(kwargs_of_rank, comm):
    x = np.arange(6, dtype=np.int64).reshape(3, 2)
    raises_everywhere(comm, ValueError, "differs across ranks",
                       lambda: distscan.scan(x, comm=comm, **{"op": "sum", **kwargs_of_rank(comm.rank)}))


@pytest.mark.mpi(min_size=2)
def test_mismatched_trailing_shape(comm):
    x = np.ones((4, 2 if comm.rank == 0 else 3))
    raises_everywhere(comm, ValueError, "differs across ranks", lambda: distscan.cumsum(x, comm=comm))


@pytest.mark.mpi(min_size=2)
def test_bad_input_on_one_rank_raises_on_all(comm):
    x = np.array(["a", "b"]) if comm.rank == comm.size - 1 else np.arange(3)
    msg = raises_everywhere(comm, TypeError, "not supported", lambda: distscan.cumsum(x, comm=comm))
    assert msg.startswith(f"rank {comm.size - 1}:")


_STRING_DTYPE = getattr(np.dtypes, "StringDType", None)  # NumPy 2 only
_STRING_CALLS = {
    "cumsum": (lambda x, s, comm: distscan.cumsum(x if s is None else x.astype(s), comm=comm), "input"),
    "scan max": (lambda x, s, comm: distscan.scan(x if s is None else x.astype(s), "max", comm=comm), "input"),
    "cumulative_sum": (lambda x, s, comm: distscan.cumulative_sum(x if s is None else x.astype(s), comm=comm),
                       "input"),
    "reduce": (lambda x, s, comm: distscan.reduce(x if s is None else x.astype(s), comm=comm), "input"),
    "cumsum dtype=": (lambda x, s, comm: distscan.cumsum(x, dtype=s, comm=comm), "requested"),
    "reduce dtype=": (lambda x, s, comm: distscan.reduce(x, dtype=s, comm=comm), "requested"),
    "cumsum out=": (lambda x, s, comm: distscan.cumsum(x, out=None if s is None else np.empty(x.shape, s),
                                                       comm=comm), "out"),
}


@pytest.mark.skipif(_STRING_DTYPE is None, reason="NumPy 1 has no StringDType")
@pytest.mark.parametrize("name", sorted(_STRING_CALLS))
def test_a_string_dtype_part_is_refused_in_distscans_words(comm, name):
    """A NumPy 2 StringDType (the input, ``dtype=`` or ``out=``) on the last rank: its newbyteorder,
    called before distscan's check, raised NumPy's "Cannot use DescrNewByteOrder for this new style
    DTypes" (s42); now every rank raises distscan's refusal, and the calls after it are right."""
    call, what = _STRING_CALLS[name]
    x = np.arange(4.0) + comm.rank
    want = call(x, None, comm)
    last = comm.size - 1
    verb = "writes" if what == "out" else "scans"
    msg = raises_everywhere(comm, TypeError, "not supported",
                            lambda: call(x, _STRING_DTYPE() if comm.rank == last else None, comm))
    assert msg == (f"{'' if comm.size == 1 else f'rank {last}: '}{what} dtype StringDType() is not supported: "
                   f"distscan {verb} bool, integer, float and complex data"), msg
    again = call(x, None, comm)
    all_ranks_ok(comm, lambda: np.testing.assert_array_equal(again, want))


@pytest.mark.manyranks
@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("phase", ["reduce", "scan"])
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_injected_failure_on_one_rank(phase, strategy, comm, monkeypatch):
    """A rank that fails mid-scan (e.g. out of memory) makes every rank raise, before or after the Exscan."""
    victim = 1
    real = getattr(cpu_backend, phase)

    def failing(*args, **kwargs):
        if comm.rank == victim:
            raise MemoryError("injected: cannot allocate the scan buffer")
        return real(*args, **kwargs)

    monkeypatch.setattr(cpu_backend, phase, failing)
    # A strided part takes the backend's general scan; a contiguous one after the first call of
    # its kind takes NumPy's accumulate into memory allocated before the exchange, which has
    # nothing left to fail (distscan.dist.plan.ScanPlan._finish_may_fail; its floating-point errors:
    # test_floating_point_error_in_one_ranks_finish_is_agreed below).
    x = np.arange(200, dtype=np.int64)[::2]
    if phase == "reduce" and (strategy == "scan_then_add" or comm.size - 1 == victim):
        pytest.skip("this strategy does not reduce on the victim")  # same decision on all ranks
    msg = raises_everywhere(comm, MemoryError, "injected", lambda: distscan.cumsum(x, comm=comm, strategy=strategy))
    assert msg.startswith(f"rank {victim}:")
    # The communicator is still usable afterwards: nobody is stuck in a collective.
    monkeypatch.undo()
    np.testing.assert_array_equal(distscan.cumsum(x, comm=comm)[-1], int(x.sum()) * (comm.rank + 1))


# --- 12. mismatches named in words -----------------------------------------------------------

@pytest.mark.mpi(min_size=2)
def test_dtype_mismatch_from_an_empty_part_is_named(comm):
    part = np.array([]) if comm.rank == 1 else np.arange(3)
    with pytest.raises(ValueError) as info:
        distscan.cumsum(part, comm=comm)
    msg = str(info.value)
    assert msg.startswith("dtype differs across ranks: ")
    assert "rank 1 has float64" in msg and "int64" in msg and "empty part" in msg


@pytest.mark.mpi(min_size=2)
def test_the_empty_part_hint_gives_float64_as_the_reason_only_where_it_is(comm):
    """An empty int32 part among int64 ones: the hint names the empty part, and not np.array([])'s
    float64, which is not what happened there."""
    part = np.empty(0, np.int32) if comm.rank == 1 else np.arange(3, dtype=np.int64)
    with pytest.raises(ValueError) as info:
        distscan.cumsum(part, comm=comm)
    msg = str(info.value)
    assert "rank 1 has int32" in msg and "rank 1 has an empty part" in msg
    assert "float64" not in msg


@pytest.mark.mpi(min_size=3)
def test_the_empty_part_hint_names_only_the_empty_parts_of_another_dtype(comm):
    """Rank 1's empty part has the right dtype, rank 2's non-empty part the wrong one: the hint
    about empty parts would blame rank 1 for nothing, so there is none."""
    part = np.empty(0, np.int64) if comm.rank == 1 else np.arange(3, dtype=np.int32 if comm.rank == 2 else np.int64)
    with pytest.raises(ValueError) as info:
        distscan.cumsum(part, comm=comm)
    msg = str(info.value)
    assert msg.startswith("dtype differs across ranks: ") and "rank 2 has int32" in msg
    assert "empty part" not in msg


@pytest.mark.mpi(min_size=2)
def test_operator_mismatch_is_named(comm):
    with pytest.raises(ValueError, match=r"operator differs across ranks: .*rank 0 has sum.*prod"):
        distscan.scan(np.arange(3), "sum" if comm.rank == 0 else "prod", comm=comm)
    with pytest.raises(ValueError, match=r"trailing shape differs across ranks"):
        distscan.cumsum(np.ones((2, 3 if comm.rank == 0 else 4)), comm=comm)


# --- 13. standard exceptions keep their type on every rank --------------------------------------

@pytest.mark.mpi(min_size=2)
def test_floating_point_error_keeps_its_type_everywhere(comm):
    x = np.array([1e308, 1e308]) if comm.rank == 0 else np.array([1.0])
    with np.errstate(all="raise"):
        with pytest.raises(FloatingPointError):
            distscan.cumsum(x, comm=comm)


@pytest.mark.manyranks
@pytest.mark.mpi(min_size=2)
def test_floating_point_error_in_one_ranks_finish_is_agreed(comm):
    """Only the last rank asks NumPy to raise, and only its seeded scan overflows (the offset from
    the ranks before meets its own large values): every rank raises, in every call of a row, and
    the communicator is whole afterwards."""
    last = comm.rank == comm.size - 1
    x = np.array([1e308, 1e308]) if last else np.array([1.0e308 if comm.rank == 0 else 0.0])
    for _ in range(3):
        with np.errstate(over="raise" if last else "ignore", invalid="ignore"):
            with pytest.raises(FloatingPointError, match=f"rank {comm.size - 1}"):
                distscan.cumsum(x, comm=comm)
    np.testing.assert_array_equal(distscan.cumsum(np.ones(3), comm=comm), 3 * comm.rank + np.arange(1, 4))


@pytest.mark.mpi(min_size=2)
def test_zero_d_array_on_one_rank_raises_axis_error_everywhere(comm):
    x = np.array(5) if comm.rank == 0 else np.arange(3)
    with pytest.raises(np.exceptions.AxisError):
        distscan.cumsum(x, comm=comm)


def test_rebuild_by_module_and_name():
    from distscan.dist.agree import _rebuild, describe
    e = _rebuild(describe(FloatingPointError("x")), "overflow")
    assert type(e) is FloatingPointError and str(e) == "overflow"
    e = _rebuild(describe(np.exceptions.AxisError("bad axis")), "bad axis")
    assert type(e) is np.exceptions.AxisError
    e = _rebuild("os:system", "no")  # not an exception class: never called
    assert type(e) is DistScanError
    e = _rebuild("evil_module:Thing", "no")  # untrusted module: not imported
    assert type(e) is DistScanError and "evil_module" not in sys.modules


class _LoadedError(Exception):
    """A user's class of a module this process has imported (this one)."""


def test_build_finds_a_users_class_only_in_modules_already_imported(monkeypatch):
    """The agreement (raise_agreed) builds a user's class from a module in sys.modules, and never
    imports one to find it: a name from another rank runs no import."""
    from distscan.dist.agree import _build, describe
    e = _build(describe(_LoadedError("x")), "rank 1: x", loaded=True)
    assert type(e) is _LoadedError and str(e) == "rank 1: x"
    assert _build(describe(_LoadedError("x")), "x") is None  # decide_on_root's rule: trusted modules only
    assert _build("evil_module:Thing", "no", loaded=True) is None and "evil_module" not in sys.modules
    monkeypatch.setitem(sys.modules, "blocked_module", None)  # an import blocked by a None entry
    assert _build("blocked_module:Thing", "no", loaded=True) is None and sys.modules["blocked_module"] is None
    assert _build(f"{__name__}:_LoadedError.nothing", "no", loaded=True) is None
    assert _build(f"{__name__}:test_rebuild_by_module_and_name", "no", loaded=True) is None  # not a class


# --- a declared operator's combine that raises between ranks ---------------------------------------

def _picky(a, b):
    """An addition that refuses sums over 10: each rank's own part (2, 2, 2) scans, the carries
    of the ranks before a rank do not."""
    s = np.add(a, b)
    if np.any(s > 10):
        raise ValueError("picky: too big")
    return s


PICKY = distscan.Operator("picky", _picky, identity=0, kinds="i")
_COUNTED = np.dtype([("s", np.int64), ("n", np.int64)])


def _picky_state(a, b):
    out = np.empty(np.broadcast(a, b).shape, _COUNTED)
    out["s"], out["n"] = _picky(a["s"], b["s"]), a["n"] + b["n"]
    return out


def _counted_lift(x):
    out = np.empty(np.shape(x), _COUNTED)
    out["s"], out["n"] = x, 1
    return out


# the same limit on a declared state of two fields (its fold runs the user's combine in Python)
PICKY_STATE = distscan.Operator("picky state", _picky_state, identity=lambda dt: np.zeros((), _COUNTED),
                                state=_COUNTED, lift=_counted_lift, project=lambda s: s["s"])


@pytest.mark.manyranks
@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("method", ["flat", "node", "doubling"])
def test_declared_combine_raising_in_the_exchange_is_agreed(method, comm, monkeypatch):
    """The user's combine raises while the exchange folds the carries, on the ranks whose prefix
    exceeds its limit only (from rank 1 or 2 on, by scan order), in the middle of the doubling's
    rounds or before the agreement after the finish: every rank raises the same error, in every
    call of a row, forward, reverse, exclusive and of a declared state, and the communicator is whole afterwards."""
    from distscan import _kinds
    from distscan.dist import exchange

    monkeypatch.setattr(exchange, "DOUBLING_RANKS", 1 if method == "doubling" else 1 << 30)  # every rank alike
    _kinds.PLANS.clear()
    hierarchy = "node" if method == "node" else "flat"
    x = np.full(3, 2, np.int64)
    try:
        for op, kw in ((PICKY, {}), (PICKY, {"reverse": True}), (PICKY, {"exclusive": True}),
                       (PICKY_STATE, {}), (PICKY_STATE, {"reverse": True})):
            for _ in range(2):
                with pytest.raises(ValueError, match=r"rank \d+( \(and \d+ other ranks?\))?: picky: too big"):
                    distscan.scan(x, op, comm=comm, hierarchy=hierarchy, node_size=1, **kw)
        with pytest.raises(ValueError, match="picky"):
            distscan.reduce(x, PICKY, comm=comm)
        # within the limit: the same operator scans across ranks
        ones = np.ones(1, np.int64)
        np.testing.assert_array_equal(distscan.scan(ones, PICKY, comm=comm, hierarchy=hierarchy, node_size=1),
                                      [comm.rank + 1] if comm.size <= 10 else distscan.cumsum(ones, comm=comm))
    finally:
        _kinds.PLANS.clear()


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("call", ["linear_recurrence", "linear_recurrence_zero", "segments"])
def test_initial_differing_across_ranks_is_named(call, comm):
    """docs/api.md: arguments that must agree are checked in the exchange, and every rank raises the
    same ValueError naming the difference."""
    # 0 is the default: its field was missing on rank 0, and the message said "arguments differs
    # across ranks: ranks 0-1 have none" (2026-11-25)
    zero = call == "linear_recurrence_zero"
    initial = float(comm.rank + (0 if zero else 1))
    if zero:
        call = "linear_recurrence"
    if call == "linear_recurrence":
        fn = lambda: distscan.linear_recurrence(0.5, np.ones(3), initial=initial, comm=comm)  # noqa: E731
    else:
        fn = lambda: distscan.cumsum(np.ones(3), segments=np.zeros(3, bool), initial=initial, comm=comm)  # noqa: E731
    message = raises_everywhere(comm, ValueError, "differs across ranks", fn)

    def check():
        assert message.startswith("initial differs across ranks: rank 0 has "), message
        assert message.startswith("initial differs across ranks: rank 0 has the default, ") or not zero, message

    all_ranks_ok(comm, check)


UNKNOWN_KEYWORD_CALLS = {
    "cumsum": lambda x, comm, **kw: distscan.cumsum(x, comm=comm, **kw),
    "nancumprod": lambda x, comm, **kw: distscan.nancumprod(x, comm=comm, **kw),
    "scan": lambda x, comm, **kw: distscan.scan(x, "max", comm=comm, **kw),
    "exclusive_scan": lambda x, comm, **kw: distscan.exclusive_scan(x, comm=comm, **kw),
    "cumulative_sum": lambda x, comm, **kw: distscan.cumulative_sum(x, comm=comm, **kw),
    "linear_recurrence": lambda x, comm, **kw: distscan.linear_recurrence(0.5, x, comm=comm, **kw),
    "reduce": lambda x, comm, **kw: distscan.reduce(x, comm=comm, **kw),
}


@pytest.mark.manyranks
@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("name", sorted(UNKNOWN_KEYWORD_CALLS))
def test_an_unknown_keyword_on_one_rank_raises_on_all(comm, name):
    """A keyword the function does not take (a typo; ``reduce(initial=)``, which NumPy's sum takes)
    on one rank raised Python's TypeError there alone, and the other ranks waited in the exchange
    forever (an audit, 2026-11-27); now every rank raises it, with the rank's number, beside warm
    calls of the same kind, and the calls after it are right."""
    call = UNKNOWN_KEYWORD_CALLS[name]
    x = np.arange(5.0) + comm.rank
    want = call(x, comm)  # the kind warm on every rank
    odd = comm.size - 1
    bad = {"initial": 1.0} if name == "reduce" else {"bogus": 1, "typo_d": 2}
    msg = raises_everywhere(comm, TypeError, "unexpected keyword argument",
                            lambda: call(x, comm, **(bad if comm.rank == odd else {})))
    assert msg.startswith(f"rank {odd}: {name}()"), msg
    assert repr(sorted(bad)[0]) in msg
    again = call(x, comm)
    all_ranks_ok(comm, lambda: np.testing.assert_array_equal(again, want))


# Each public function with the positional arguments it takes (the rest go by keyword), and the
# message Python gives for one too many
EXTRA_POSITIONAL_CALLS = {
    "cumsum": (lambda x, comm, *extra: distscan.cumsum(x, *extra, comm=comm), "takes 1 positional argument but 2"),
    "nancumprod": (lambda x, comm, *extra: distscan.nancumprod(x, *extra, comm=comm),
                   "takes 1 positional argument but 2"),
    "scan": (lambda x, comm, *extra: distscan.scan(x, "max", *extra, comm=comm),
             "takes from 1 to 2 positional arguments but 3"),
    "exclusive_scan": (lambda x, comm, *extra: distscan.exclusive_scan(x, "sum", *extra, comm=comm),
                       "takes from 1 to 2 positional arguments but 3"),
    "cumulative_sum": (lambda x, comm, *extra: distscan.cumulative_sum(x, *extra, comm=comm),
                       "takes 1 positional argument but 2"),
    "linear_recurrence": (lambda x, comm, *extra: distscan.linear_recurrence(0.5, x, *extra, comm=comm),
                          "takes 2 positional arguments but 3"),
    "reduce": (lambda x, comm, *extra: distscan.reduce(x, "sum", *extra, comm=comm),
               "takes from 1 to 2 positional arguments but 3"),
}


@pytest.mark.manyranks
@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("name", sorted(EXTRA_POSITIONAL_CALLS))
def test_an_extra_positional_argument_on_one_rank_raises_on_all(comm, name):
    """A positional argument too many on one rank (``cumsum(x, 0)`` where another rank writes
    ``cumsum(x, axis=0)``) raised Python's TypeError there alone before distscan ran, and the other
    ranks waited in the exchange forever; now every rank raises Python's message, with the rank's
    number, beside warm calls of the same kind, and the calls after it are right."""
    call, message = EXTRA_POSITIONAL_CALLS[name]
    x = np.arange(5.0) + comm.rank
    want = call(x, comm)  # the kind warm on every rank
    odd = comm.size - 1
    msg = raises_everywhere(comm, TypeError, "positional argument",
                            lambda: call(x, comm, *((0,) if comm.rank == odd else ())))
    assert msg == f"rank {odd}: {name}() {message} were given", msg
    again = call(x, comm)
    all_ranks_ok(comm, lambda: np.testing.assert_array_equal(again, want))


@pytest.mark.parametrize("name", sorted(EXTRA_POSITIONAL_CALLS))
def test_an_extra_positional_argument_gives_pythons_message_on_one_rank(name):
    """Alone (no communicator of several ranks) the message is Python's own."""
    call, message = EXTRA_POSITIONAL_CALLS[name]
    with pytest.raises(TypeError, match=f"^{name}\\(\\) {message} were given$"):
        call(np.arange(5.0), None, 0)


# Each public function called without its part (or parts), and Python's message for it; the
# valid keyword beside it must not be named as unknown
MISSING_PART_CALLS = {
    "cumsum": (lambda x, comm, drop: distscan.cumsum(comm=comm, backend="cpu") if drop
               else distscan.cumsum(x, comm=comm, backend="cpu"), "missing 1 required positional argument: 'x'"),
    "nancumprod": (lambda x, comm, drop: distscan.nancumprod(comm=comm) if drop else distscan.nancumprod(x, comm=comm),
                   "missing 1 required positional argument: 'x'"),
    "scan": (lambda x, comm, drop: distscan.scan(op="max", comm=comm) if drop else distscan.scan(x, "max", comm=comm),
             "missing 1 required positional argument: 'x'"),
    "exclusive_scan": (lambda x, comm, drop: distscan.exclusive_scan(comm=comm, initial=1.0) if drop
                       else distscan.exclusive_scan(x, comm=comm, initial=1.0),
                       "missing 1 required positional argument: 'x'"),
    "cumulative_sum": (lambda x, comm, drop: distscan.cumulative_sum(comm=comm, backend="cpu") if drop
                       else distscan.cumulative_sum(x, comm=comm, backend="cpu"),
                       "missing 1 required positional argument: 'x'"),
    "linear_recurrence": (lambda x, comm, drop: distscan.linear_recurrence(0.5, comm=comm, backend="cpu") if drop
                          else distscan.linear_recurrence(0.5, x, comm=comm, backend="cpu"),
                          "missing 1 required positional argument: 'b'"),
    "linear_recurrence, both": (lambda x, comm, drop: distscan.linear_recurrence(comm=comm) if drop
                                else distscan.linear_recurrence(0.5, x, comm=comm),
                                "missing 2 required positional arguments: 'a' and 'b'"),
    "reduce": (lambda x, comm, drop: distscan.reduce(comm=comm) if drop else distscan.reduce(x, comm=comm),
               "missing 1 required positional argument: 'x'"),
}


@pytest.mark.manyranks
@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("name", sorted(MISSING_PART_CALLS))
def test_a_missing_part_on_one_rank_raises_on_all(comm, name):
    """A call without its part on one rank (``cumsum(comm=comm)``) raised Python's TypeError there
    alone before distscan ran, and the other ranks waited in the exchange forever; now every rank
    raises Python's message, with the rank's number, and the calls after it are right."""
    call, message = MISSING_PART_CALLS[name]
    x = np.arange(5.0) + comm.rank
    want = call(x, comm, False)  # the kind warm on every rank
    odd = comm.size - 1
    msg = raises_everywhere(comm, TypeError, "required positional argument",
                            lambda: call(x, comm, comm.rank == odd))
    assert msg == f"rank {odd}: {name.split(',')[0]}() {message}", msg
    again = call(x, comm, False)
    all_ranks_ok(comm, lambda: np.testing.assert_array_equal(again, want))


@pytest.mark.parametrize("name", sorted(MISSING_PART_CALLS))
def test_a_missing_part_gives_pythons_message_on_one_rank(name):
    """Alone (no communicator of several ranks) the message is Python's own."""
    call, message = MISSING_PART_CALLS[name]
    with pytest.raises(TypeError, match=f"^{name.split(',')[0]}\\(\\) {message}$"):
        call(np.arange(5.0), None, True)


def test_an_unknown_keyword_is_named_before_a_missing_or_extra_argument():
    """Python's order: an unknown keyword first, then a positional argument too many, then a
    missing one."""
    with pytest.raises(TypeError, match="^cumsum\\(\\) got unexpected keyword argument 'bogus'$"):
        distscan.cumsum(bogus=1)
    with pytest.raises(TypeError, match="^cumsum\\(\\) got unexpected keyword argument 'bogus'$"):
        distscan.cumsum(np.ones(2), 0, bogus=1)
    with pytest.raises(TypeError, match="^linear_recurrence\\(\\) got unexpected keyword argument 'bogus'$"):
        distscan.linear_recurrence(bogus=1, backend="cpu")


# A communicator given where the function takes none: by position, or under a misspelt keyword
MISPLACED_COMMUNICATOR_CALLS = {
    # (by position past the parts: the message of tests/dist/test_communicator_as_part.py, s41)
    "cumsum by position": (lambda x, sub: distscan.cumsum(x, sub), "cumsum() got a communicator as an extra "
                           "positional argument: pass it as comm="),
    "scan by position": (lambda x, sub: distscan.scan(x, "sum", sub), "scan() got a communicator as an extra"),
    "linear_recurrence by position": (lambda x, sub: distscan.linear_recurrence(0.5, x, sub),
                                      "linear_recurrence() got a communicator as an extra"),
    "cumulative_sum by position": (lambda x, sub: distscan.cumulative_sum(x, sub),
                                   "cumulative_sum() got a communicator as an extra"),
    "reduce by position": (lambda x, sub: distscan.reduce(x, "sum", sub), "reduce() got a communicator as an extra"),
    "exclusive_scan by position": (lambda x, sub: distscan.exclusive_scan(x, "sum", sub),
                                   "exclusive_scan() got a communicator as an extra"),
    "cumsum misspelt": (lambda x, sub: distscan.cumsum(x, communicator=sub), "unexpected keyword argument"),
    "reduce misspelt": (lambda x, sub: distscan.reduce(x, communicator=sub), "unexpected keyword argument"),
    "linear_recurrence misspelt": (lambda x, sub: distscan.linear_recurrence(0.5, x, communicator=sub),
                                   "unexpected keyword argument"),
    "cumulative_sum misspelt": (lambda x, sub: distscan.cumulative_sum(x, communicator=sub),
                                "unexpected keyword argument"),
    # in the operator's place (found 2026-11-27, s40: refused over COMM_WORLD, whose other ranks
    # never call, so the ranks of sub waited forever)
    "scan as the operator": (lambda x, sub: distscan.scan(x, sub), "got a communicator as its operator"),
    "scan as op=": (lambda x, sub: distscan.scan(x, op=sub), "got a communicator as its operator"),
    "exclusive_scan as the operator": (lambda x, sub: distscan.exclusive_scan(x, sub),
                                       "exclusive_scan() got a communicator as its operator"),
    "reduce as the operator": (lambda x, sub: distscan.reduce(x, sub), "reduce() got a communicator as its operator"),
}


@pytest.mark.manyranks
@pytest.mark.mpi(min_size=3)
@pytest.mark.parametrize("name", sorted(MISPLACED_COMMUNICATOR_CALLS))
def test_a_sub_communicator_given_in_the_wrong_place_is_refused_over_it(comm, name):
    """Every rank of a sub-communicator passes it by position (``cumsum(x, sub)``) or under a
    misspelt keyword: the call is refused over ``sub``, the communicator meant, not over
    ``COMM_WORLD``, whose other ranks never make the call (they would wait for them forever);
    the ranks outside ``sub`` go on with calls of their own meanwhile."""
    call, message = MISPLACED_COMMUNICATOR_CALLS[name]
    inside = comm.rank < comm.size - 1  # the last rank alone in the other part of the split
    sub = comm.Split(0 if inside else 1, comm.rank)
    x = np.arange(4.0) + comm.rank
    outcome, again = None, None
    try:
        if inside:
            try:
                call(x, sub)
            except TypeError as exc:
                outcome = str(exc)
            again = distscan.cumsum(x, comm=sub)  # the sub-communicator still works
        else:
            again = distscan.cumsum(x, comm=sub)
    finally:
        sub.Free()

    def check():
        if inside:
            assert outcome is not None and message in outcome, outcome
            before = np.concatenate([np.arange(4.0) + r for r in range(comm.rank + 1)])
            np.testing.assert_array_equal(again, np.cumsum(before)[-4:])
        else:
            np.testing.assert_array_equal(again, np.cumsum(x))

    all_ranks_ok(comm, check)  # every rank gets here: none waits for another that failed


# What one rank's call may get wrong, beside the others' right or wrong calls
ARGUMENT_MISTAKES = {
    "none": lambda x, comm: distscan.cumsum(x, comm=comm),
    "extra positional": lambda x, comm: distscan.cumsum(x, 0, comm=comm),
    "unknown keyword": lambda x, comm: distscan.cumsum(x, comm=comm, bogus=1),
    "communicator by position": lambda x, comm: distscan.cumsum(x, comm),
    "both": lambda x, comm: distscan.cumsum(x, 0, bogus=2, comm=comm),
    "missing part": lambda x, comm: distscan.cumsum(comm=comm),
}


@pytest.mark.manyranks
@pytest.mark.mpi(min_size=2)
def test_argument_mistakes_drawn_per_rank_raise_alike_and_leave_no_state(comm):
    """Calls in a row where each rank draws its own argument mistake (or none): a call with a
    mistake on any rank raises the same TypeError on every rank, one without raises nowhere and is
    right, and every call after either is right (no rank left in a collective of its own)."""
    rng = np.random.default_rng(3700 + comm.size)  # the same draws on every rank
    names = sorted(ARGUMENT_MISTAKES)
    x = np.arange(5.0) + comm.rank
    want = distscan.cumsum(x, comm=comm)
    for _ in range(40):
        drawn = rng.choice(names, size=comm.size)  # every rank draws the same table, and takes its own
        outcome = outcome_of(lambda: ARGUMENT_MISTAKES[drawn[comm.rank]](x, comm))
        outcomes = comm.allgather(outcome[0] if outcome[0] == "raised" else "ok")
        every = comm.allgather(outcome[1] if outcome[0] == "raised" else None)

        def check():
            if all(d == "none" for d in drawn):
                assert outcomes == ["ok"] * comm.size, outcomes
            else:
                assert outcomes == ["raised"] * comm.size and len(set(every)) == 1, (list(drawn), every)
                assert every[0].startswith("TypeError: "), every[0]

        all_ranks_ok(comm, check)
        again = distscan.cumsum(x, comm=comm)
        all_ranks_ok(comm, lambda: np.testing.assert_array_equal(again, want))


# A flag given as an array of several items (no truth value), by each function that takes it
FLAG_WITHOUT_TRUTH_CALLS = {
    "cumsum reverse": lambda x, comm, bad: distscan.cumsum(x, reverse=bad, comm=comm),
    "cumprod reverse": lambda x, comm, bad: distscan.cumprod(x, reverse=bad, comm=comm),
    "scan reverse": lambda x, comm, bad: distscan.scan(x, "max", reverse=bad, comm=comm),
    "scan include_initial": lambda x, comm, bad: distscan.scan(x, include_initial=bad, comm=comm),
    "scan compensated": lambda x, comm, bad: distscan.scan(x, compensated=bad, comm=comm),
    "cumulative_sum reverse": lambda x, comm, bad: distscan.cumulative_sum(x, reverse=bad, comm=comm),
    "cumulative_sum include_initial": lambda x, comm, bad: distscan.cumulative_sum(x, include_initial=bad,
                                                                                   comm=comm),
    "exclusive_scan reverse": lambda x, comm, bad: distscan.exclusive_scan(x, reverse=bad, comm=comm),
    "linear_recurrence reverse": lambda x, comm, bad: distscan.linear_recurrence(0.5, x, reverse=bad, comm=comm),
    "cumsum exclusive": lambda x, comm, bad: distscan.cumsum(x, exclusive=bad, comm=comm),
}


@pytest.mark.manyranks
@pytest.mark.parametrize("name", sorted(FLAG_WITHOUT_TRUTH_CALLS))
def test_a_flag_without_a_truth_value_on_one_rank_raises_on_all(comm, name):
    """``reverse=``, ``include_initial=`` or ``compensated=`` given as an array of several items on one
    rank: its ``bool`` raised NumPy's ValueError while the API sorted out the call's options, there
    alone and before any collective, and the other ranks waited in the exchange forever (2026-11-27);
    now every rank raises it, with the rank's number, beside warm calls of the same kind, and the
    calls after it are right."""
    call = FLAG_WITHOUT_TRUTH_CALLS[name]
    x = np.arange(5.0) + comm.rank
    want = call(x, comm, False)  # the kind warm on every rank
    odd = comm.size - 1
    msg = raises_everywhere(comm, ValueError, "truth value of an array",
                            lambda: call(x, comm, np.array([True, False]) if comm.rank == odd else False))
    assert msg.startswith(f"rank {odd}: ") or comm.size == 1, msg
    again = call(x, comm, False)
    all_ranks_ok(comm, lambda: np.testing.assert_array_equal(again, want))


@pytest.mark.manyranks
@pytest.mark.parametrize("initial", [[[1.0], [1.0, 2.0]], [1.0, [2.0, 3.0]]], ids=["ragged", "nested"])
def test_a_recurrence_initial_numpy_cannot_read_on_one_rank_raises_on_all(comm, initial):
    """``linear_recurrence(initial=)`` that NumPy cannot make an array of (a ragged list) on one rank:
    the test for a zero ``initial`` (``np.ndim``) raised NumPy's ValueError there alone, before any
    collective, and the other ranks waited in the exchange forever (2026-11-27); now every rank
    raises it, with the rank's number, and the calls after it are right."""
    x = np.arange(4.0) + comm.rank
    want = distscan.linear_recurrence(0.5, x, initial=1.0, comm=comm)
    odd = comm.size - 1
    msg = raises_everywhere(comm, ValueError, "inhomogeneous", lambda: distscan.linear_recurrence(
        0.5, x, initial=initial if comm.rank == odd else 1.0, comm=comm))
    assert msg.startswith(f"rank {odd}: ") or comm.size == 1, msg
    again = distscan.linear_recurrence(0.5, x, initial=1.0, comm=comm)
    all_ranks_ok(comm, lambda: np.testing.assert_array_equal(again, want))


# A part passed by position and by keyword too, and Python's message for it; beside it the same call
# with the part by keyword alone (which is valid)
TWICE_CALLS = {
    "cumsum": (lambda x, comm, twice: distscan.cumsum(x, x=x, comm=comm) if twice
               else distscan.cumsum(x=x, comm=comm), "x"),
    "nancumprod": (lambda x, comm, twice: distscan.nancumprod(x, x=x, comm=comm) if twice
                   else distscan.nancumprod(x=x, comm=comm), "x"),
    "scan": (lambda x, comm, twice: distscan.scan(x, "max", op="min", comm=comm) if twice
             else distscan.scan(x, op="max", comm=comm), "op"),
    "scan, x": (lambda x, comm, twice: distscan.scan(x, x=x, op="max", comm=comm) if twice
                else distscan.scan(op="max", x=x, comm=comm), "x"),
    "exclusive_scan": (lambda x, comm, twice: distscan.exclusive_scan(x, "max", op="max", comm=comm) if twice
                       else distscan.exclusive_scan(x=x, op="max", comm=comm), "op"),
    "linear_recurrence": (lambda x, comm, twice: distscan.linear_recurrence(0.5, x, b=x, comm=comm) if twice
                          else distscan.linear_recurrence(a=0.5, b=x, comm=comm), "b"),
    "reduce": (lambda x, comm, twice: distscan.reduce(x, "sum", op="sum", comm=comm) if twice
               else distscan.reduce(x=x, op="sum", comm=comm), "op"),
}


@pytest.mark.manyranks
@pytest.mark.parametrize("name", sorted(TWICE_CALLS))
def test_a_part_passed_twice_on_one_rank_raises_on_all(comm, name):
    """A part passed by position and by keyword on one rank (``scan(x, "max", op="min")``) raised
    Python's "got multiple values" TypeError there alone before distscan ran, and the other ranks
    waited in the exchange forever (2026-11-27); now every rank raises Python's message, with the
    rank's number, and a part passed by keyword alone is taken as before."""
    call, part = TWICE_CALLS[name]
    x = np.arange(5.0) + comm.rank
    want = call(x, comm, False)  # the kind warm on every rank
    odd = comm.size - 1
    msg = raises_everywhere(comm, TypeError, "multiple values", lambda: call(x, comm, comm.rank == odd))
    assert msg == f"{'' if comm.size == 1 else f'rank {odd}: '}{name.split(',')[0]}() got multiple values for " \
                  f"argument {part!r}", msg
    again = call(x, comm, False)
    all_ranks_ok(comm, lambda: np.testing.assert_array_equal(again, want))


class _HashRaises(float):
    """A float whose hash raises ValueError (an axis the call kind's key hashes)."""

    def __hash__(self):
        raise ValueError("this argument cannot be hashed")


@pytest.mark.manyranks
def test_an_argument_whose_hash_raises_on_one_rank_raises_on_all(comm):
    """The call kind's key hashes the arguments before any collective; a hash that raised anything
    but TypeError went out of the call on that rank alone while the others waited in the exchange.
    Now the call goes on to Part, whose error every rank raises (or which takes the value)."""
    x = np.arange(4.0)
    axis = _HashRaises(0) if comm.rank == comm.size - 1 else 0
    raises_everywhere(comm, TypeError, "axis", lambda: distscan.cumsum(x, axis=axis, comm=comm))
    all_ranks_ok(comm, lambda: np.testing.assert_array_equal(distscan.cumsum(x, comm=comm)[-1], 6.0 * comm.size
                                                             if comm.rank == comm.size - 1 else 6.0 * (comm.rank + 1)))


class _OddDimensions:
    """A part whose ``ndim`` has no truth value (an array of two numbers)."""

    ndim = np.array([1, 1])


@pytest.mark.manyranks
def test_a_part_whose_ndim_is_not_a_number_on_one_rank_raises_on_all_in_cumulative_sum(comm):
    """cumulative_sum tests the part's ``ndim`` before the call's exchange; an ``ndim`` without a
    truth value raised there on its rank alone while the others waited.  Now every rank raises."""
    x = _OddDimensions() if comm.rank == comm.size - 1 else np.arange(3.0)
    raises_everywhere(comm, ValueError, "truth value", lambda: distscan.cumulative_sum(x, comm=comm))
    all_ranks_ok(comm, lambda: np.testing.assert_array_equal(distscan.cumulative_sum(np.ones(2), comm=comm),
                                                             [2.0 * comm.rank + 1, 2.0 * comm.rank + 2]))


class _Unprintable(Exception):
    """A user's exception whose message raises."""

    def __str__(self):
        raise RuntimeError("no message")


def _unprintable_on_the_last_rank(a, b):
    from mpi4py import MPI

    if MPI.COMM_WORLD.rank == MPI.COMM_WORLD.size - 1:
        raise _Unprintable()
    return np.add(a, b)


UNPRINTABLE = distscan.Operator("unprintable", _unprintable_on_the_last_rank, identity=0, kinds="i")


@pytest.mark.manyranks
def test_an_error_whose_message_raises_on_one_rank_is_raised_on_all(comm):
    """A user's combine raises, on the last rank only, an exception whose ``str`` raises: the
    agreement read its message before the collective that shares it, and that rank left alone
    while the others waited.  Now every rank raises, with the type's name for the message."""
    from distscan.dist.agree import message_of

    x = np.arange(1, 5, dtype=np.int64)
    try:
        distscan.scan(x, UNPRINTABLE, comm=comm)
        outcome = ("ok", "")
    except Exception as exc:  # noqa: BLE001 - compared across ranks
        outcome = ("raised", message_of(exc))
    outcomes = comm.allgather(outcome)
    assert all(o[0] == "raised" for o in outcomes), outcomes
    assert all("_Unprintable (its message raised)" in o[1] for o in outcomes[:-1]), outcomes
    all_ranks_ok(comm, lambda: np.testing.assert_array_equal(distscan.cumsum(x, comm=comm)[-1], 10 * (comm.rank + 1)))
