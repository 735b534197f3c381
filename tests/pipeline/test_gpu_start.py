"""CUDA's start on its thread (distscan.pipeline.gpu_start.GpuStart) cancelled by the engine once
every chunk is scanned, with host stand-ins for its steps (the CuPy import, the context, the
buffers and modules), each held by the test where a real one would be inside a CUDA call:

- a cancelled start ends at its next checkpoint, publishes no device, and closes a device that
  it finished after the cancel once, on its thread; ``close()`` then releases nothing twice;
- ``close()`` after a cancel waits only for the step under way, not for the steps after it;
- under ``must_start`` (``--backend cuda``) the start makes its context before it stops, so a
  GPU that cannot start still says so.
"""

import threading
import time

import pytest

from distscan.gpus import Binding
from distscan.pipeline.gpu_start import GpuStart

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
