"""distscan._caches.publish: the bounded caches' one insert-and-evict, from many threads at once
(the CUDA backend's per-stream caches go through it: backends/cuda/device.remember)."""

from __future__ import annotations

import sys
import threading

import pytest

from distscan._caches import publish


@pytest.fixture
def fast_switches():
    """The interpreter switches threads as often as it can, so that evictions collide."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)


def _hammer(put, threads=8, rounds=3000, limit=4):
    cache, errors = {}, []
    start = threading.Barrier(threads)

    def work(t):
        start.wait()
        try:
            for i in range(rounds):
                put(cache, (t, i), i, limit)
        except Exception as exc:  # noqa: BLE001 - what a thread hit is the test's finding
            errors.append(repr(exc))

    pool = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    return cache, errors


def test_publish_from_many_threads_keeps_its_limit_and_raises_nothing(fast_switches):
    cache, errors = _hammer(publish)
    assert errors == []
    assert 1 <= len(cache) <= 4


def test_the_unlocked_insert_and_evict_fails_so_the_test_can_see_it(fast_switches):
    """The same work without the lock (the code before publish): the collisions it is for."""
    def unlocked(cache, key, value, limit):
        cache[key] = value
        while len(cache) > limit:
            cache.pop(next(iter(cache)))

    hit = any(_hammer(unlocked)[1] for _ in range(5))
    assert hit, "no collision in 5 tries: the hammer cannot tell the lock from its absence here"


def _disk_full(src, dst):
    """``os.replace`` on a full disk."""
    raise OSError(28, "No space left on device")


def test_write_whole_writes_a_file_whole_or_leaves_nothing(tmp_path, monkeypatch):
    """``write_whole``: the one writer of the disk caches' files (the CUDA modules', the CPU
    loops'): a reader never finds a part of a file, a failed write leaves no temporary."""
    import os

    from distscan._caches import write_whole
    write_whole(tmp_path / "a.module", b"\x00bin")
    write_whole(tmp_path / "a.py", "x = 1\n")
    assert (tmp_path / "a.module").read_bytes() == b"\x00bin" and (tmp_path / "a.py").read_text() == "x = 1\n"
    monkeypatch.setattr(os, "replace", _disk_full)
    with pytest.raises(OSError):
        write_whole(tmp_path / "b.module", b"bin")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.module", "a.py"]


def test_a_loop_whose_file_cannot_be_written_compiles_in_memory_and_leaves_no_temporary(tmp_path, monkeypatch):
    """ops/jit._cached wrote its module file by hand and left the temporary where the rename
    failed; it goes through ``write_whole`` now and compiles the loop in memory instead."""
    import os

    pytest.importorskip("numba")
    from distscan.ops import jit
    monkeypatch.setenv("DISTSCAN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(os, "replace", _disk_full)
    loop = jit._cached("def add_one(a):\n    return a + 1\n", "add_one", None)
    assert loop(41) == 42
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]
