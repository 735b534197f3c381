"""Progress of the command, drawn by tqdm: a bar on a terminal, a few lines in a log, nothing otherwise.

``Progress(total, label, mode=...)`` counts bytes toward ``total``; call ``update(n)``
as work is done and ``done()`` at the end.

- ``mode="bar"``: a tqdm bar on ``stream`` (redrawn at most every ``interval``
  seconds, nothing before ``delay`` seconds, so short runs stay quiet);
- ``mode="lines"``: for a log file: at most five lines (25, 50, 75, 100 %), and only
  once ``delay`` seconds have passed;
- ``mode="auto"`` (default): a bar when ``stream`` is a terminal, else nothing;
- ``mode="off"`` or ``enabled=False``: nothing.

:func:`choose_mode` is the command's rule for rank 0 (see its docstring).
"""

from __future__ import annotations

import os
import re
import sys
import time

MODES = ("auto", "bar", "lines", "off")
_TRUE = ("1", "true", "yes", "on", "bar")
_FALSE = ("0", "false", "no", "off", "none")
# Processes that start MPI ranks and forward their output (their stderr is the user's).
_LAUNCHERS = re.compile(r"^(mpiexec|mpirun|orterun|prterun|srun|aprun|jsrun|flux)([.\-_].*)?$")


def _human_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"  # pragma: no cover - loop always returns


class Progress:
    """Progress of one phase (``label``) toward ``total`` bytes, shown on ``stream``."""

    def __init__(self, total: int, label: str, *, enabled: bool = True, stream=None,
                 delay: float = 0.5, interval: float = 0.1, mode: str = "auto", ncols=None):
        self.stream = sys.stderr if stream is None else stream
        if mode == "auto":
            isatty = getattr(self.stream, "isatty", None)
            mode = "bar" if isatty is not None and isatty() else "off"
        self.mode = mode if enabled else "off"
        self.total = max(int(total), 0)
        self.label = label
        self.delay = delay
        self.count = 0
        self.start = time.perf_counter()
        self._bar = None
        self._next = 1  # lines: the next quarter to print
        self._note = ""
        if self.mode == "bar":
            from tqdm import tqdm
            if ncols is None and not _isatty(self.stream):
                ncols = 80  # a forwarded stream: the width of the terminal behind it is unknown
            self._bar = tqdm(total=self.total, desc=label, file=self.stream, unit="B", unit_scale=True,
                             unit_divisor=1000, delay=delay, mininterval=interval, miniters=1, leave=True,
                             ncols=ncols, dynamic_ncols=ncols is None, disable=False,
                             bar_format="{desc:<8} {percentage:5.1f}%|{bar}| {n_fmt}B/{total_fmt}B "
                                        "[{elapsed}<{remaining}, {rate_fmt}{postfix}]")

    def update(self, n: int) -> None:
        self.count += n
        if self._bar is not None:
            self._bar.update(n)
        elif self.mode == "lines":
            self._lines(False)

    def note(self, text: str) -> None:
        """A short status beside the progress (a GPU starting, then ready): the bar's postfix, or the
        end of the next line."""
        self._note = text
        if self._bar is not None:
            self._bar.set_postfix_str(text, refresh=False)

    def _lines(self, final: bool) -> None:
        elapsed = time.perf_counter() - self.start
        frac = min(self.count / self.total, 1.0) if self.total else 1.0
        while self._next <= 4 and frac >= self._next / 4:
            if elapsed >= self.delay:
                self._say(self._next * 25, elapsed)
            self._next += 1
        if final and self._next <= 4 and elapsed >= self.delay:
            self._say(100, elapsed)
            self._next = 5

    def _say(self, percent: int, elapsed: float) -> None:
        rate = self.count / max(elapsed, 1e-9)
        try:
            self.stream.write(f"distscan: {self.label} {percent}% ({_human_bytes(min(self.count, self.total))} "
                              f"of {_human_bytes(self.total)}, {elapsed:.1f} s, {_human_bytes(rate)}/s)"
                              f"{'; ' + self._note if self._note else ''}\n")
            self.stream.flush()
        except (OSError, ValueError):
            self.mode = "off"

    def done(self) -> None:
        """Finish: the bar's last state and a newline (only if it was drawn)."""
        if self._bar is not None:
            if self.count < self.total:
                self._bar.update(self.total - self.count)
                self.count = self.total
            self._bar.close()
            self._bar = None
        elif self.mode == "lines":
            self._lines(True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.done()
        return False


class NullProgress(Progress):
    """A progress that never shows (ranks other than 0, ``--quiet``)."""

    def __init__(self, total: int = 0, label: str = ""):
        super().__init__(total, label, enabled=False)


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, OSError, ValueError):
        return False


def _stderr_of(pid: int) -> str:
    return os.readlink(f"/proc/{pid}/fd/2")


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as f:
        return int(f.read().rsplit(b")", 1)[1].split()[1])


def launcher_terminal(pid: int = None, depth: int = 6):
    """The terminal the MPI launcher that started this process writes to, or None.

    Walks up at most ``depth`` parents (Linux ``/proc``) to a launcher
    (``mpiexec``, ``mpirun``, ``srun``, ...; the ranks' stderr is a pipe to it); returns
    the path of its stderr when that is a terminal (``/dev/pts/N``, ``/dev/ttyN``).
    Returns None when there is no launcher among the parents, or it writes to a file
    or a pipe (a log), or ``/proc`` cannot tell.
    """
    try:
        pid = os.getpid() if pid is None else pid
        for _ in range(depth):
            pid = _parent(pid)
            if pid <= 1:
                return None
            with open(f"/proc/{pid}/comm") as f:
                name = f.read().strip()
            if _LAUNCHERS.match(name):
                target = _stderr_of(pid)
                return target if re.match(r"^/dev/(pts/\d+|tty\w*)$", target) else None
    except (OSError, ValueError, IndexError):
        return None
    return None


def _terminal_columns(path) -> "int | None":
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        cols = os.get_terminal_size(fd).columns
        return cols if cols >= 40 else None
    except OSError:
        return None
    finally:
        os.close(fd)


def choose_mode(option=None, env=None, stream=None, terminal_of_launcher=launcher_terminal) -> tuple:
    """How rank 0 shows progress: ``(mode, ncols)`` with mode ``"bar"``, ``"lines"`` or ``"off"``.

    In order: ``option`` (``--progress`` True, ``--no-progress`` False); else
    ``DISTSCAN_PROGRESS`` (1/on/bar, lines, 0/off); else a bar when ``stream``
    (stderr) is a terminal, or when the launcher that started this rank
    (``mpiexec``, ``mpirun``, ``srun``, ...) writes to a terminal (its ranks get
    pipes, which it forwards); else a few lines, as in a log file.
    """
    env = os.environ if env is None else env
    stream = sys.stderr if stream is None else stream
    if option is False:
        return "off", None
    if option is True:
        return "bar", None
    value = (env.get("DISTSCAN_PROGRESS") or "").strip().lower()
    if value in _FALSE:
        return "off", None
    if value == "lines":
        return "lines", None
    forced = value in _TRUE
    isatty = getattr(stream, "isatty", None)
    try:
        if isatty is not None and isatty():
            return "bar", None
    except (OSError, ValueError):
        pass
    term = terminal_of_launcher()
    if term is not None:
        return "bar", _terminal_columns(term)
    return ("bar", None) if forced else ("lines", None)


def check_env_value(value) -> None:
    """Raise ``ValueError`` unless ``value`` is a valid ``DISTSCAN_PROGRESS``."""
    if value is None or not value.strip():
        return
    if value.strip().lower() not in _TRUE + _FALSE + ("lines", "auto"):
        raise ValueError(f"DISTSCAN_PROGRESS must be 1 (a bar), lines (a few lines), 0 (nothing) or auto, "
                         f"got {value!r}")
