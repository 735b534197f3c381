"""Caches: bounded ones that threads fill at once (:func:`publish`, the one way an entry goes in),
and files of a disk cache written whole or not at all (:func:`write_whole`)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

# Threads whose first calls collide publish and evict under it: two evictions at once popped the
# same oldest key (KeyError), and an insert beside an eviction's iteration raised "dictionary
# changed size during iteration" -- on one rank only (tests/dist/test_first_calls_threads.py).
# Entries are built outside it, complete, and never under it: no build waits for another's, and
# none makes a collective here.  Readers take no lock (a dict lookup is atomic under the GIL).
_PUBLISH = threading.Lock()


def publish(cache: dict, key, value, limit: int):
    """``cache[key] = value``, the oldest entries dropped past ``limit``; returns ``value``."""
    with _PUBLISH:
        cache[key] = value
        while len(cache) > limit:
            del cache[next(iter(cache))]
    return value


def write_whole(path: Path, data: bytes | str) -> None:
    """Write ``data`` to ``path`` whole or not at all: to a temporary name in its folder, then
    renamed over it (a reader that finds ``path`` finds it whole; a failed write, an OSError from
    the write or the rename, leaves no temporary behind and raises)."""
    import tempfile  # deferred: only a cache's first compile writes a file (tempfile loads shutil, random)

    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
