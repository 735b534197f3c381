"""Bounded caches that threads fill at once: :func:`publish`, the one way an entry goes in."""

from __future__ import annotations

import threading

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
