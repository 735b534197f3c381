"""The agreement after the finish (distscan.dist.plan): made exactly when some rank's finish may
fail, on every rank, and never skipped where a rank's finish can fail.

The finishes that cannot fail take one collective (the exchange): a CPU state scan by its prepared
loops (distscan.backends.cpu_states.Loops), NumPy's accumulate of a plain part.  What a rank alone
knows and that could make its finish fail travels in the exchange (an ``out=`` of another dtype),
and every rank then agrees after the finish.  A failure before the exchange (the loops' compile,
the carry) is agreed in the exchange.

Runs serially and under ``mpiexec -n K python -m pytest --with-mpi``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import distscan
from distscan import _kinds
from distscan.backends import cpu, cpu_states

from tests.dist.test_plan import Counting, _count
from tests.support.ranks import all_ranks_ok, raises_everywhere
from tests.support.reference import segmented_reference

pytestmark = [pytest.mark.anyranks, pytest.mark.timeout(120)]


def _state_calls(comm, n=50):
    rng = np.random.default_rng(comm.rank)
    x, b = rng.integers(-9, 9, n), rng.standard_normal(n)
    f, a = rng.random(n) < 0.1, rng.uniform(0.5, 1, n)
    y, yf = np.empty_like(x), np.empty_like(b)
    return {"segmented": lambda: distscan.cumsum(x, segments=f, out=y, comm=comm),
            "segmented reverse max": lambda: distscan.cummax(x, segments=f, reverse=True, comm=comm),
            "recurrence": lambda: distscan.linear_recurrence(a, b, out=yf, comm=comm),
            "recurrence, segments, scalar a": lambda: distscan.linear_recurrence(0.5, b, segments=f, comm=comm),
            "compensated": lambda: distscan.cumsum(b, compensated=True, comm=comm),
            "segmented, Part's route (strided)": lambda: distscan.cumsum(x[::2], segments=f[::2], comm=comm)}


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("raising", ["no", "errstate", "warnings"])
def test_state_scans_make_one_collective(raising, comm):
    """A warm CPU state scan makes the exchange alone, even where NumPy is told to raise (its loops
    set no flag and warn of nothing)."""
    c = Counting(comm)
    for name, call in _state_calls(c).items():
        call()
        with np.errstate(all="raise" if raising == "errstate" else "warn"), warnings.catch_warnings():
            if raising == "warnings":
                warnings.simplefilter("error")
            made = _count(c, call)
        assert made == ["Allgather"], (name, made)


@pytest.mark.mpi(min_size=2)
def test_a_narrower_out_on_one_rank_makes_every_rank_agree(comm):
    """One rank's ``out=`` of a narrower dtype (a cast after the exchange, which may fail): its record
    asks for the agreement, and every rank makes it, whichever route its own call took."""
    c = Counting(comm)
    rng = np.random.default_rng(comm.rank)
    b, a = rng.standard_normal(40), rng.uniform(0.5, 1, 40)
    out = np.empty(40, np.float32) if comm.rank == comm.size - 1 else None
    distscan.linear_recurrence(a, b, out=out, comm=c)  # the plans' first calls (they resolve the method)
    for _ in range(2):
        made = _count(c, lambda: distscan.linear_recurrence(a, b, out=out, comm=c))
        assert made == ["Allgather", "Allreduce"], made


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("where", ["prepare", "carry"])
def test_a_failure_of_the_state_loops_before_the_exchange_is_agreed(where, comm, monkeypatch):
    """The loops' making (their compile) and the carry pass run before the exchange: a failure on one
    rank raises on every rank, and the next calls work."""
    victim = 0  # the first rank computes a carry (the last one does not)
    x, f = np.arange(30) + comm.rank, (np.arange(30) % 7) == 0
    if where == "prepare":
        _kinds.PLANS.clear()  # plans made anew: each prepares its loops in its first run
        _kinds.KINDS.clear()
        real = cpu.prepare

        def failing(*args, **kwargs):
            if comm.rank == victim:
                raise MemoryError("injected: numba could not compile the loop")
            return real(*args, **kwargs)

        monkeypatch.setattr(cpu, "prepare", failing)
    else:
        distscan.cumsum(x, segments=f, comm=comm)
        real = cpu_states.Loops.carry

        def failing(self, *args, **kwargs):
            if comm.rank == victim:
                raise MemoryError("injected: carry")
            return real(self, *args, **kwargs)

        monkeypatch.setattr(cpu_states.Loops, "carry", failing)
    msg = raises_everywhere(comm, MemoryError, "injected", lambda: distscan.cumsum(x, segments=f, comm=comm))
    assert msg.startswith(f"rank {victim}:"), msg
    monkeypatch.undo()
    g = np.concatenate([np.arange(30) + r for r in range(comm.size)])
    flags = np.tile(f, comm.size)
    ref = segmented_reference(g, flags, "sum")[30 * comm.rank:30 * (comm.rank + 1)]
    for _ in range(2):
        y = distscan.cumsum(x, segments=f, comm=comm)
        all_ranks_ok(comm, lambda: np.testing.assert_array_equal(y, ref))


