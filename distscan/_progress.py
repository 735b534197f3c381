"""A tiny progress bar for the command line: drawn on a terminal only, and only on long runs.

``Progress(total, label)`` counts units (bytes here) toward ``total``; call
``update(n)`` as work is done and ``done()`` at the end.  Nothing is drawn until
``delay`` seconds have passed (short runs stay quiet), nothing at all unless
``enabled`` and the stream is a terminal, and the bar is redrawn at most every
``interval`` seconds so updates from a tight loop cost almost nothing.
"""

from __future__ import annotations

import sys
import time

_WIDTH = 30


def _human_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"  # pragma: no cover - loop always returns


class Progress:
    """Progress of one phase (``label``) toward ``total`` bytes, drawn on ``stream``."""

    def __init__(self, total: int, label: str, *, enabled: bool = True, stream=None,
                 delay: float = 0.5, interval: float = 0.1):
        self.stream = sys.stderr if stream is None else stream
        isatty = getattr(self.stream, "isatty", None)
        self.enabled = bool(enabled and isatty is not None and isatty())
        self.total = max(int(total), 0)
        self.label = label
        self.delay = delay
        self.interval = interval
        self.count = 0
        self.start = time.perf_counter()
        self._last = 0.0
        self._drawn = False

    def update(self, n: int) -> None:
        self.count += n
        if not self.enabled:
            return
        now = time.perf_counter()
        if now - self.start < self.delay or now - self._last < self.interval:
            return
        self._last = now
        self._draw(now)

    def _draw(self, now: float) -> None:
        frac = min(self.count / self.total, 1.0) if self.total else 1.0
        filled = int(frac * _WIDTH)
        rate = self.count / max(now - self.start, 1e-9)
        bar = "#" * filled + "-" * (_WIDTH - filled)
        self.stream.write(f"\r{self.label:<8} [{bar}] {frac * 100:5.1f}%  {_human_bytes(rate)}/s ")
        self.stream.flush()
        self._drawn = True

    def done(self) -> None:
        """Finish the line (only if a bar was drawn)."""
        if self.enabled and self._drawn:
            self.count = max(self.count, self.total)
            self._draw(time.perf_counter())
            self.stream.write("\n")
            self.stream.flush()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.done()
        return False


class NullProgress(Progress):
    """A progress that never draws (ranks other than 0, ``--quiet``)."""

    def __init__(self, total: int = 0, label: str = ""):
        super().__init__(total, label, enabled=False)
