"""The names of a plan's options, resolved and checked: ``strategy``, ``algorithm``, ``hierarchy``;
the operators whose integer scans are exact (:data:`EXACT`); and the timer of a call's phases."""

from __future__ import annotations

import time
from contextlib import contextmanager, nullcontext
from typing import Optional

from .nodes import METHODS
from ..algorithms import resolve_algorithm as _resolve_algorithm

STRATEGIES = ("auto", "reduce_then_scan", "scan_then_add")
STRATEGY_ALIASES = {"3n": "reduce_then_scan", "4n": "scan_then_add",
                    "reduce-then-scan": "reduce_then_scan", "scan-then-add": "scan_then_add"}
# Measured faster at every size and rank count tried (benchmarks/RESULTS.md): 3N bytes, not 4N.
DEFAULT_STRATEGY = "reduce_then_scan"


def resolve_strategy(strategy: str) -> str:
    """A strategy name or alias -> ``reduce_then_scan`` or ``scan_then_add``.

    Raises
    ------
    ValueError
        For an unknown name.
    """
    s = STRATEGY_ALIASES.get(strategy, strategy)
    if s not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
    return DEFAULT_STRATEGY if s == "auto" else s


def resolve_algorithm(algorithm: str) -> str:
    """An ``algorithm=`` name (:data:`distscan.algorithms.ALGORITHMS`), checked.

    Raises
    ------
    ValueError
        For an unknown name, listing the valid ones.
    """
    return _resolve_algorithm(algorithm)


def resolve_hierarchy(hierarchy: str) -> str:
    if hierarchy not in METHODS:
        raise ValueError(f"unknown hierarchy method {hierarchy!r}; choose one of {', '.join(METHODS)}")
    return hierarchy


# Operators whose scan of integers (and bools) is exact: associative and commutative bit for bit
# (wrapping arithmetic included), so a part's total is the same whichever way it is formed.
# Not gcd and lcm (lcm's overflow is not associative) nor the NaN-aware ones (floats).
EXACT = frozenset({"sum", "prod", "max", "min", "logical_and", "logical_or", "logical_xor", "bitwise_and",
                   "bitwise_or", "bitwise_xor"})


NULL = nullcontext()  # reusable: a phase that is not timed, an agreement that is not needed


class Untimed:
    """The timer of a call without ``timings``: its phases cost one call each."""

    @staticmethod
    def phase(name: str):
        return NULL


UNTIMED = Untimed()


class Timer:
    """Per-phase wall times into a dict (device work synchronised first)."""

    def __init__(self, timings: Optional[dict], backend):
        self.timings = timings
        self._sync = getattr(backend, "synchronize", None) if timings is not None else None

    @contextmanager
    def phase(self, name: str):
        if self.timings is None:
            yield
            return
        if self._sync:
            self._sync()
        t0 = time.perf_counter()
        yield
        if self._sync:
            self._sync()
        self.timings[name] = self.timings.get(name, 0.0) + time.perf_counter() - t0
