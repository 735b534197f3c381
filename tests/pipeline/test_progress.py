"""The command's progress rule and its two displays (tqdm bar, a few log lines), in-process."""

import io

import pytest

from distscan.pipeline import progress as prog
from distscan import cli


class _Stream(io.StringIO):
    def __init__(self, tty):
        super().__init__()
        self._tty = tty

    def isatty(self):
        return self._tty


def _none():
    return None


@pytest.mark.parametrize("option, env, tty, launcher, expected", [
    (False, {"DISTSCAN_PROGRESS": "1"}, True, "/dev/pts/3", "off"),   # --no-progress wins
    (True, {"DISTSCAN_PROGRESS": "0"}, False, None, "bar"),           # --progress wins
    (None, {"DISTSCAN_PROGRESS": "0"}, True, None, "off"),
    (None, {"DISTSCAN_PROGRESS": "lines"}, True, None, "lines"),
    (None, {"DISTSCAN_PROGRESS": "1"}, False, None, "bar"),
    (None, {}, True, None, "bar"),                                    # stderr is a terminal
    (None, {}, False, "/dev/pts/3", "bar"),                           # mpiexec's terminal
    (None, {}, False, None, "lines"),                                 # a log file
])
def test_rule(option, env, tty, launcher, expected):
    mode, _ = prog.choose_mode(option, env=env, stream=_Stream(tty), terminal_of_launcher=lambda: launcher)
    assert mode == expected


def test_launcher_terminal_never_raises():
    assert prog.launcher_terminal() is None or prog.launcher_terminal().startswith("/dev/")
    assert prog.launcher_terminal(pid=10 ** 9) is None


def test_bar_draws_percent_and_ends_the_line():
    s = _Stream(True)
    bar = prog.Progress(1000, "scan", stream=s, delay=0, interval=0)
    for _ in range(10):
        bar.update(100)
    bar.done()
    assert "100.0%" in s.getvalue() and s.getvalue().endswith("\n")
    quiet = _Stream(True)
    bar = prog.Progress(1000, "scan", stream=quiet)  # default delay: short runs draw nothing
    bar.update(1000)
    bar.done()
    assert quiet.getvalue() == ""


def test_forced_bar_on_a_pipe_has_a_width():
    s = _Stream(False)
    bar = prog.Progress(10, "scan", stream=s, delay=0, interval=0, mode="bar")
    bar.update(10)
    bar.done()
    assert "100.0%" in s.getvalue()


def test_lines_in_a_log_are_few():
    s = _Stream(False)
    bar = prog.Progress(10_000, "scan", stream=s, delay=0, mode="lines")
    for _ in range(10_000):
        bar.update(1)
    bar.done()
    lines = s.getvalue().splitlines()
    assert len(lines) == 4 and lines[-1].startswith("distscan: scan 100%")
    slow = _Stream(False)
    bar = prog.Progress(100, "scan", stream=slow, delay=60, mode="lines")  # a short run: nothing
    bar.update(100)
    bar.done()
    assert slow.getvalue() == ""


def test_auto_mode_follows_the_stream():
    assert prog.Progress(1, "x", stream=_Stream(False)).mode == "off"
    assert prog.Progress(1, "x", stream=_Stream(True), delay=10).mode == "bar"
    assert prog.NullProgress(5).mode == "off"


@pytest.mark.parametrize("value, ok", [("1", True), ("lines", True), ("off", True), ("auto", True), ("maybe", False)])
def test_env_value_checked_at_start_up(value, ok):
    if ok:
        cli._check_env({"DISTSCAN_PROGRESS": value})
    else:
        with pytest.raises(ValueError, match="DISTSCAN_PROGRESS"):
            cli._check_env({"DISTSCAN_PROGRESS": value})


def test_options_parse():
    p = cli.build_parser()
    assert p.parse_args(["x.npy"]).progress is None
    assert p.parse_args(["x.npy", "--progress"]).progress is True
    assert p.parse_args(["x.npy", "--no-progress"]).progress is False
    a = p.parse_args(["x.npy", "--fsync", "--memory-limit", "2G"])
    assert a.fsync and a.memory_limit == "2G"


# -- the progress bar ---------------------------------------------------------------------------------

class _Terminal:
    def __init__(self, tty):
        self.tty, self.text = tty, ""

    def isatty(self):
        return self.tty

    def write(self, s):
        self.text += s

    def flush(self):
        pass


def test_progress_bar_only_on_a_terminal():
    from distscan.pipeline.progress import Progress
    tty, pipe = _Terminal(True), _Terminal(False)
    for stream in (tty, pipe):
        bar = Progress(1000, "read", stream=stream, delay=0, interval=0)
        for _ in range(10):
            bar.update(100)
        bar.done()
    assert "100.0%" in tty.text and "[" in tty.text and tty.text.endswith("\n")
    assert pipe.text == ""
    quiet = _Terminal(True)
    bar = Progress(1000, "read", stream=quiet)  # default delay: short runs draw nothing
    bar.update(1000)
    bar.done()
    assert quiet.text == ""
