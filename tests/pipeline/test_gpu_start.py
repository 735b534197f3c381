"""CUDA's start on its thread (distscan.pipeline.gpu_start.GpuStart) cancelled by the engine once
every chunk is scanned, with host stand-ins for its steps (the CuPy import, the context, the
buffers and modules), each held by the test where a real one would be inside a CUDA call:

- a cancelled start ends at its next checkpoint, publishes no device, and closes a device that
  it finished after the cancel once, on its thread; ``close()`` then releases nothing twice;
- ``close()`` after a cancel waits only for the step under way, not for the steps after it;
- under ``must_start`` (``--backend cuda``) the start makes its context before it stops, so a
  GPU that cannot start still says so;
- the process's switch interval is short while a start runs and given back when the last one
  ends, however it ends, unless the user set another meanwhile.
"""

import sys
import threading
import time

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from distscan.gpus import Binding
from distscan.pipeline.gpu_start import GpuStart, _ShortSwitchInterval

BINDING = Binding(device=0, visible=1, local_rank=0, local_size=1, source="local rank", shared=False)


class Device:
    """A stand-in for DeviceChunks: counts its closes."""

    def __init__(self):
        self.closes = 0

    def close(self):
        self.closes += 1


class Held:
    """A step of the start that the test holds: ``entered`` once the start thread is in it; it
    returns when ``go`` is set (as a CUDA call returns: a cancel cannot cut it short)."""

    def __init__(self):
        self.entered, self.go = threading.Event(), threading.Event()

    def __call__(self):
        self.entered.set()
        assert self.go.wait(10)


def _start(hold=None, must_start=False, fail=None, modules_s=0.0):
    """A GpuStart on stand-ins; its step ``hold`` ("import", "context" or "modules") waits for the
    test; ``fail`` is raised by the context; ``modules_s``: how long the buffers and modules take."""
    held, made, contexts = Held(), [], []

    def count():
        if hold == "import":
            held()
        return 1

    def build(device, checkpoint):
        if hold == "context":
            held()
        contexts.append(device)
        if fail is not None:
            raise fail
        checkpoint()  # the context is up; nothing of the "device" is made yet
        if hold == "modules":
            held()
        time.sleep(modules_s)
        made.append(Device())
        return made[-1]

    start = GpuStart(lambda visible: (BINDING, "GPU 0 (stand-in)"), build, count=count, must_start=must_start)
    return start, held, made, contexts


@pytest.mark.parametrize("hold,stop", [("import", "before the context"), ("context", "before the device buffers"),
                                       ("modules", "after making its device, which it closed unused")])
def test_a_cancelled_start_publishes_no_device_and_releases_nothing_twice(hold, stop):
    start, held, made, contexts = _start(hold)
    assert held.entered.wait(10)
    start.cancel()
    held.go.set()
    assert start.wait() is None and start.ready() is None  # never published
    assert start.stopped and start.error is None and start.why.endswith(f"(its start stopped {stop})"), start.why
    # a device finished after the cancel is closed once, on the start thread; none is made earlier
    assert [d.closes for d in made] == ([1] if hold == "modules" else [])
    # the steps reached, in order, and no other
    reached = {"import": ["import"], "context": ["import", "context"], "modules": ["import", "context", "modules"]}
    assert list(start.steps) == reached[hold] and sorted(start.steps.values()) == list(start.steps.values())
    assert contexts == ([] if hold == "import" else [0])
    start.close()
    start.close()
    assert [d.closes for d in made] == ([1] if hold == "modules" else [])


def test_a_published_device_is_closed_once_whatever_the_cancels():
    start, _, made, _ = _start()
    device = start.wait()
    assert device is made[0] and start.ready() is device and not start.stopped
    assert list(start.steps) == ["import", "context", "modules"]
    assert 0 <= start.steps["import"] <= start.steps["context"] <= start.steps["modules"] <= start.t1 - start.t0
    start.cancel()  # too late to stop anything: the device stays published until close
    assert start.ready() is device
    start.close()
    start.close()
    assert device.closes == 1 and start.ready() is None


def test_close_after_a_cancel_waits_only_for_the_step_under_way():
    """The thread is inside "the CuPy import" when close() is called; the buffers and modules after
    it would take 30 s: close() returns once the import ends, at the checkpoint after it."""
    start, held, made, contexts = _start("import", modules_s=30.0)
    assert held.entered.wait(10)
    threading.Timer(0.1, held.go.set).start()
    t0 = time.perf_counter()
    start.close()
    assert time.perf_counter() - t0 < 5
    assert start.done and start.stopped and made == [] and contexts == []
    assert not any(t.name == "distscan-gpu-start" for t in threading.enumerate())


@pytest.mark.parametrize("fail", [None, RuntimeError("injected: CUDA driver too old")])
def test_must_start_makes_the_context_before_it_stops(fail):
    """``--backend cuda``: a cancel during the import does not spare the context, whose failure is
    then the start's error (the engine raises it); a context that starts ends the start there."""
    start, held, made, contexts = _start("import", must_start=True, fail=fail)
    assert held.entered.wait(10)
    start.cancel()
    held.go.set()
    assert start.wait() is None and contexts == [0] and made == []
    if fail is None:
        assert start.stopped and start.error is None and "stopped before the device buffers" in start.why
        assert list(start.steps) == ["import", "context"]
    else:
        assert not start.stopped and start.error is fail and "CUDA did not start: injected" in start.why
        assert list(start.steps) == ["import"]  # the context failed: not reached
    start.close()


def test_the_steps_a_reader_holds_never_change():
    """The report reads ``steps`` while a start it did not wait for still runs: the mapping it holds
    is never changed by the start thread (each step publishes a new one), and it is read-only."""
    start, held, _, _ = _start("modules")
    assert held.entered.wait(10)
    seen = start.steps  # taken while the start is inside its last step
    assert list(seen) == ["import", "context"]
    held.go.set()
    assert start.wait() is not None
    assert list(seen) == ["import", "context"] and list(start.steps) == ["import", "context", "modules"]
    with pytest.raises(TypeError):
        seen["modules"] = 0.0  # read-only
    start.close()


# -- the switch interval while a start runs (gpu_start._ShortSwitchInterval) ----------------------


@pytest.fixture
def interval():
    """The process's switch interval, given back after the test whatever it did."""
    before = sys.getswitchinterval()
    yield before
    sys.setswitchinterval(before)


def test_the_switch_interval_is_short_while_a_start_runs_and_given_back(interval):
    start, held, _, _ = _start("modules")
    assert held.entered.wait(10)
    assert sys.getswitchinterval() == pytest.approx(_ShortSwitchInterval.SHORT_S)
    held.go.set()
    assert start.wait() is not None
    assert sys.getswitchinterval() == interval  # given back before wait() returns
    start.close()


@pytest.mark.parametrize("how", ["cancelled", "failed"])
def test_a_start_that_ends_without_a_device_gives_the_interval_back(interval, how):
    start, held, _, _ = _start("context", fail=RuntimeError("injected") if how == "failed" else None)
    assert held.entered.wait(10)
    if how == "cancelled":
        start.cancel()
    held.go.set()
    assert start.wait() is None and sys.getswitchinterval() == interval
    start.close()


def test_overlapping_starts_give_the_interval_back_when_the_last_ends(interval):
    (a, held_a, _, _), (b, held_b, _, _) = _start("modules"), _start("modules")
    assert held_a.entered.wait(10) and held_b.entered.wait(10)
    held_a.go.set()
    a.wait()
    assert sys.getswitchinterval() == pytest.approx(_ShortSwitchInterval.SHORT_S)  # b still runs
    held_b.go.set()
    b.wait()
    assert sys.getswitchinterval() == interval
    a.close()
    b.close()


@pytest.mark.parametrize("theirs", [0.002, 0.0001])
def test_an_interval_the_user_sets_while_a_start_runs_is_kept(interval, theirs):
    start, held, _, _ = _start("modules")
    assert held.entered.wait(10)
    sys.setswitchinterval(theirs)
    held.go.set()
    start.wait()
    assert sys.getswitchinterval() == pytest.approx(theirs)
    start.close()


def test_a_rank_without_a_gpu_of_its_own_leaves_the_interval(interval):
    start = GpuStart(lambda visible: (None, "no GPU"), None, host_only="rank 2 of 2 on a node with 1 GPU")
    assert start.done and sys.getswitchinterval() == interval


class SwitchIntervalMachine(RuleBasedStateMachine):
    """Starts that begin and end in any order, and a user who sets the interval at any moment: while
    a start runs the interval is the shorter of ours and the one found (unless the user set one
    since); once none runs it is the one found, or the user's last."""

    def __init__(self):
        super().__init__()
        self.before = sys.getswitchinterval()
        self.short = _ShortSwitchInterval()
        self.running = 0
        self.expected_after = self.before  # what the interval must be once no start runs
        self.user_set = False  # the user set one while starts ran

    @rule()
    def begin(self):
        if self.running == 0:
            self.expected_after, self.user_set = sys.getswitchinterval(), False
        self.short.enter()
        self.running += 1

    @precondition(lambda self: self.running > 0)
    @rule()
    def end(self):
        self.short.leave()
        self.running -= 1

    @rule(value=st.sampled_from([0.0001, 0.001, 0.005, 0.02]))
    def user_sets(self, value):
        sys.setswitchinterval(value)
        if self.running:
            self.user_set = True
        self.expected_after = value

    @invariant()
    def interval_is_as_promised(self):
        now = sys.getswitchinterval()
        if self.running and not self.user_set:
            assert now == pytest.approx(min(self.expected_after, _ShortSwitchInterval.SHORT_S))
        else:
            assert now == pytest.approx(self.expected_after)

    def teardown(self):
        sys.setswitchinterval(self.before)


SwitchIntervalMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=20, deadline=None)
test_the_switch_interval_under_any_order_of_starts_and_user_changes = SwitchIntervalMachine.TestCase
