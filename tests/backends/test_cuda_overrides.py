"""``distscan.backends.cuda.overrides``, the test and benchmark tool that changes the CUDA backend's
settings inside a block: nothing it changed outlives the block, whatever raises.  It needs no GPU
(the settings are a plain object; without CuPy the hot path holds no entry to drop)."""

from __future__ import annotations

import dataclasses
import sys
import threading
import types

import pytest

from distscan._caches import publish
from distscan.backends import cuda as gpu
from distscan.backends.cuda import hotpath

pytestmark = pytest.mark.anyranks


def _settings():
    return dataclasses.asdict(gpu.SETTINGS)


def test_the_old_values_come_back_after_the_block_and_when_it_raises():
    before = _settings()
    with gpu.overrides(lead=3, spare_max_bytes=1) as s:
        assert (s.lead, s.spare_max_bytes) == (3, 1)
        with gpu.overrides(lead=5):  # nested: each block puts back what it found
            assert gpu.SETTINGS.lead == 5
        assert gpu.SETTINGS.lead == 3
    assert _settings() == before
    with pytest.raises(KeyError):
        with gpu.overrides(lead=0, dependent_min_bytes=0):
            raise KeyError("in the block")
    assert _settings() == before


def test_a_name_that_is_not_a_setting_changes_nothing():
    before = _settings()
    with pytest.raises(TypeError, match="not a setting of the CUDA backend: leed"):
        with gpu.overrides(lead=1, leed=2):
            pass
    assert _settings() == before


def test_a_failure_while_the_values_are_set_leaks_none_of_them(monkeypatch):
    """Dropping the entries derived from the settings raises (a thread publishing one meanwhile, say)
    after the values were set, before the block runs: they are put back all the same."""
    before = _settings()
    calls = []

    def fails_once():
        calls.append(dict(lead=gpu.SETTINGS.lead))
        if len(calls) == 1:
            raise RuntimeError("dictionary changed size during iteration")

    monkeypatch.setattr(hotpath, "settings_changed", fails_once)
    with pytest.raises(RuntimeError, match="changed size"):
        with gpu.overrides(lead=7, tuning=(64, 4, 8, 1)):
            pytest.fail("the block ran")
    assert _settings() == before
    assert calls == [{"lead": 7}, {"lead": before["lead"]}]  # dropped again once the old values are back


def test_dropping_the_entries_while_other_threads_publish_raises_nothing(monkeypatch):
    """settings_changed() and stats() walk the hot path's entries while calls on other threads
    publish new ones: they read a snapshot (iterating the dict itself raised "dictionary changed
    size during iteration" on the thread that changed a setting).  The entries are stand-ins."""
    monkeypatch.setattr(hotpath, "FAST", {})
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    stop, errors = threading.Event(), []

    def publisher(t):
        i = 0
        while not stop.is_set():
            entry = types.SimpleNamespace(dependent_min_bytes=0, shapes={1: 2}, graphs=None)
            publish(hotpath.FAST, (t, i), entry, 64)
            i += 1

    pool = [threading.Thread(target=publisher, args=(t,)) for t in range(4)]
    try:
        for th in pool:
            th.start()
        for _ in range(3000):
            try:
                hotpath.settings_changed()
                gpu.stats()
            except RuntimeError as exc:  # the finding, kept for the assert below
                errors.append(repr(exc))
                break
    finally:
        stop.set()
        for th in pool:
            th.join()
        sys.setswitchinterval(old)
    assert errors == []
    assert hotpath.FAST and all(e.shapes == {} or e.shapes == {1: 2} for e in hotpath.FAST.values())
