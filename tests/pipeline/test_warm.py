"""The command makes a state scan's CPU loops on a thread while its first chunks are read
(``ScanPlan.warm``, started by ``pipeline.host.run_chunked``).  Its promises: the loops and folds are
made once when that thread and the first scan meet (their locks), and a warm-up that fails keeps
nothing, so that the first scan makes them again and fails (agreed) as it would have alone."""

import threading
import time

import numpy as np
import pytest

from distscan.backends import cpu_states
from distscan.dist.plan import ScanPlan
from distscan.ops import get_op, segmented

pytest.importorskip("numba")


def _plan(w_tag):
    # a kind no other test made (exclusive + an odd dtype): its loops are not cached yet
    return ScanPlan(segmented(get_op("sum")), np.dtype(w_tag), exclusive=True, backend="cpu")


def test_the_warm_thread_and_the_first_scan_make_the_loops_once(monkeypatch):
    plan = _plan(np.int16)
    made = []
    real = cpu_states.Loops

    def slow_loops(*args):
        made.append(threading.current_thread().name)
        time.sleep(0.3)  # the first scan arrives while the warm-up is making them
        return real(*args)

    monkeypatch.setattr(cpu_states, "Loops", slow_loops)
    warming = threading.Thread(target=plan.warm, name="distscan-warm")
    warming.start()
    deadline = time.monotonic() + 30
    while not made and time.monotonic() < deadline:  # the warm-up is inside Loops (after the fold)
        time.sleep(0.005)
    x = np.arange(10, dtype=np.int16).reshape(-1, 1)
    flags = np.zeros(10, bool)
    flags[[0, 4]] = True
    out, _ = plan.seeded_scan(x, None, aux=(flags,))
    warming.join()
    assert made == ["distscan-warm"], made
    np.testing.assert_array_equal(np.asarray(out).reshape(-1), [0, 0, 1, 3, 0, 4, 9, 15, 22, 30])


def test_a_warm_up_that_fails_keeps_nothing_and_the_scan_raises_it(monkeypatch):
    plan = _plan(np.uint16)

    def broken(*args):
        raise RuntimeError("this operator's CPU loops need numba: pip install numba")

    monkeypatch.setattr(cpu_states, "Loops", broken)
    plan.warm()  # swallowed: the first run is the one that fails, agreed with the other ranks
    assert plan._loops is None
    with pytest.raises(RuntimeError, match="need numba"):
        plan._prepare()
    monkeypatch.undo()
    assert plan._prepare() is not None  # nothing of the failure was kept
