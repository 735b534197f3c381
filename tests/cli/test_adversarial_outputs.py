"""Where the ``distscan`` command's output goes, adversarially: an output that is a symbolic link (to
another file, to the input, dangling) or a hard link to the input, an output equal to the segment
flags or to a recurrence's coefficients, the same command twice in a row, two runs at once to one
output (with and without ``--force``), stale and live temporary files of other runs, an input
truncated while the ranks read it, and SIGTERM to rank 0 in the middle of a run.  A run either
publishes a complete result or fails with one line, publishes nothing and leaves no temporary file.
"""

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from distscan.io import temp_name_for

from tests.support.command import T, assert_one_error_line
from tests.support.files import leftover_temps
from tests.support.launch import CliBatches, files_and_sizes, mpi_command, python_env, run

pytestmark = [
    pytest.mark.timeout(180),
    pytest.mark.skipif(bool(os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK")),
                       reason="launches mpiexec itself; run it from a serial pytest"),
]

A = np.arange(1000, dtype=np.int64) * 3 - 700
OTHER = np.full(5, 42.0)


def _base(folder):
    np.save(folder / "in.npy", A)
    np.save(folder / "other.npy", OTHER)
    np.save(folder / "flags.npy", np.arange(1000) % 7 == 0)
    np.save(folder / "coef.npy", np.ones(1000, np.int64))
    return [str(folder / "in.npy"), "--backend", "cpu", "--quiet"]


def _link(folder, name, target):
    os.symlink(target, folder / name)


CASES = {
    # key: (prepare extra files and return extra args, expected error words or None for success)
    "symlink_to_other_no_force": (lambda f: (_link(f, "o.npy", "other.npy"), ["-o", f / "o.npy"])[1],
                                  ["exists", "--force"]),
    "symlink_to_other_force": (lambda f: (_link(f, "o.npy", "other.npy"), ["-o", f / "o.npy", "--force"])[1], None),
    "symlink_to_input_force": (lambda f: (_link(f, "o.npy", "in.npy"), ["-o", f / "o.npy", "--force"])[1],
                               ["is the input"]),
    "hardlink_to_input_force": (lambda f: (os.link(f / "in.npy", f / "o.npy"), ["-o", f / "o.npy", "--force"])[1],
                                ["is the input"]),
    "dangling_symlink_no_force": (lambda f: (_link(f, "o.npy", "no/such.npy"), ["-o", f / "o.npy"])[1],
                                  ["exists"]),
    "dangling_symlink_force": (lambda f: (_link(f, "o.npy", "no/such.npy"), ["-o", f / "o.npy", "--force"])[1],
                               None),
    "link_to_a_descriptor_force": (lambda f: (_link(f, "o.npy", "/proc/self/fd/1"), ["-o", f / "o.npy", "--force"])[1],
                                   ["link to a process's file descriptor"]),
    "output_is_flags": (lambda f: ["-o", f / "flags.npy", "--segments", f / "flags.npy", "--force"],
                        ["is the input"]),
    "output_is_coefficients": (lambda f: ["recurrence-coef", "-o", f / "coef.npy", "--force"], ["is the input"]),
    "output_is_directory": (lambda f: (os.mkdir(f / "o.npy"), ["-o", f / "o.npy", "--force"])[1], ["directory"]),
    "report_is_input": (lambda f: ["-o", f / "o.npy", "--report", f / "in.npy"], ["overwrite an input"]),
    "report_is_output": (lambda f: ["-o", f / "o.npy", "--report", f / "o.npy"], ["overwrite an input or the output"]),
    "stale_temp_removed": (lambda f: (open(temp_name_for(str(f / "o.npy"), pid=4_000_000), "wb").close(),
                                      ["-o", f / "o.npy"])[1], None),
    "live_temp_kept": (lambda f: (open(temp_name_for(str(f / "o.npy"), pid=1), "wb").close(),
                                  ["-o", f / "o.npy"])[1], None),
}


def _argv(folder, key):
    base = _base(folder)
    if key == "stale_temp_removed":
        base.remove("--quiet")  # the notice of the removal is printed unless --quiet
    extra = [str(x) for x in CASES[key][0](folder)]
    if extra[:1] == ["recurrence-coef"]:
        return ["recurrence", str(folder / "coef.npy"), *base, *extra[1:]]
    return base + extra


# The input loses its data once the header is read: rank 0 truncates it before its first read.
TRUNCATE_ON_RANK_0 = """
import os
import distscan.pipeline.files as files
orig = files.Files.__init__
def init(self, header, writer, layout):
    if rank == 0:
        os.truncate(header.path, header.offset + 8)
    orig(self, header, writer, layout)
patch(files.Files, "__init__", init)
"""


@pytest.fixture(scope="module")
def out_batches(tmp_path_factory):
    b = CliBatches(tmp_path_factory, timeout=240)
    for ranks in (2, 3):
        for key in CASES:
            b.add(ranks, key, lambda folder, key=key: (_argv(folder, key), {}))
        b.add(ranks, "truncated_while_read", lambda folder: (
            _base(folder) + ["-o", str(folder / "o.npy"), "--memory-limit", "1"],
            {"setup": "import distscan.pipeline.chunks as c\npatch(c, 'CHUNK_BYTES', 64)\n" + TRUNCATE_ON_RANK_0}))
    return b


def _cumsum_ok(path):
    got = np.load(path)
    return got.dtype == np.int64 and np.array_equal(got, np.cumsum(A))


@pytest.mark.parametrize("ranks", [2, 3])
@pytest.mark.parametrize("key", list(CASES))
def test_output_paths(out_batches, ranks, key):
    folder, proc, opts = out_batches.get(ranks, key)
    words = CASES[key][1]
    if words is not None:
        assert_one_error_line(proc, *words)
        assert files_and_sizes(folder) == opts["before"], "a failed run must not create or change files"
        assert np.array_equal(np.load(folder / "in.npy"), A)
        return
    assert proc.returncode == 0 and set(proc.codes) == {0}, proc.stderr
    out = folder / "o.npy"
    assert not out.is_symlink() and _cumsum_ok(out)
    assert np.array_equal(np.load(folder / "other.npy"), OTHER), "--force replaced the link, not its target"
    temps = leftover_temps(folder)
    if key == "live_temp_kept":  # pid 1 is alive: its temporary file is another run's, left alone
        assert temps == [temp_name_for(str(out), pid=1)] and "removed stale" not in proc.stderr
    else:
        assert temps == []
    if key == "stale_temp_removed":
        assert "removed stale temporary file" in proc.stderr and "4000000" in proc.stderr


@pytest.mark.parametrize("ranks", [2, 3])
def test_input_truncated_while_the_ranks_read_it(out_batches, ranks):
    folder, proc, _ = out_batches.get(ranks, "truncated_while_read")
    assert_one_error_line(proc, "truncated")
    assert not (folder / "o.npy").exists() and leftover_temps(folder) == []


def _cmd(ranks, *args):
    return mpi_command(ranks, [sys.executable, "-m", "distscan", *map(str, args)])


def test_twice_in_a_row_then_force(tmp_path):
    base = _base(tmp_path)
    out = tmp_path / "o.npy"
    first = run(_cmd(2, *base, "-o", out), timeout=T)
    assert first.returncode == 0, first.stderr
    stamp = (out.stat().st_ino, out.read_bytes())
    second = run(_cmd(3, *base, "-o", out), timeout=T)
    assert_one_error_line(second, "exists", "--force")
    assert (out.stat().st_ino, out.read_bytes()) == stamp, "a refused run changed the output"
    np.save(tmp_path / "in.npy", A * 2)
    third = run(_cmd(3, *base, "-o", out, "--force"), timeout=T)
    assert third.returncode == 0, third.stderr
    assert np.array_equal(np.load(out), np.cumsum(A * 2)) and leftover_temps(tmp_path) == []


def _concurrently(cmds, timeout=T):
    procs = [subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=python_env(), start_new_session=True) for cmd in cmds]
    done = []
    for p in procs:
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for q in procs:
                try:
                    os.killpg(q.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            pytest.fail("a concurrent run hung")
        done.append(subprocess.CompletedProcess(p.args, p.returncode, out, err))
    return done


@pytest.mark.parametrize("force", [False, True])
def test_two_runs_at_once_to_one_output(tmp_path, force):
    big = np.arange(200_000, dtype=np.int64)
    np.save(tmp_path / "a.npy", big)
    np.save(tmp_path / "b.npy", big * 2)
    out = tmp_path / "o.npy"
    flags = ["-o", out, "--backend", "cpu", "--quiet"] + ["--force"] * force
    ra, rb = _concurrently([_cmd(2, tmp_path / "a.npy", *flags), _cmd(1, tmp_path / "b.npy", *flags)])
    got = np.load(out)
    winners = [np.array_equal(got, np.cumsum(big)), np.array_equal(got, np.cumsum(big * 2))]
    assert any(winners), "the output is neither run's complete result"
    if force:
        assert ra.returncode == 0 and rb.returncode == 0, (ra.stderr, rb.stderr)
    else:
        codes = sorted([ra.returncode, rb.returncode])
        assert codes == [0, 1], (ra.stderr, rb.stderr)
        loser = ra if ra.returncode else rb
        assert_one_error_line(loser, "exists")
        assert winners[0] == (ra.returncode == 0)
    assert leftover_temps(tmp_path) == []


SLOW_WRITES = """
import sys, time
import distscan.pipeline.chunks as c
import distscan.pipeline.files as files
c.CHUNK_BYTES = 4096
orig = files.Files._write
def slow(self, lo, rows):
    time.sleep(0.01)
    return orig(self, lo, rows)
files.Files._write = slow
from distscan import cli
raise SystemExit(cli.main(sys.argv[1:]))
"""


def test_sigterm_to_rank_0_in_the_middle(tmp_path):
    """Rank 0 holds the temporary file's lock and writes the header: a SIGTERM to it in the middle of
    the writes ends every rank, with nothing published and no temporary file."""
    np.save(tmp_path / "in.npy", np.arange(150_000, dtype=np.int64))
    script = tmp_path / "slow.py"
    script.write_text(SLOW_WRITES)
    out = tmp_path / "o.npy"
    cmd = mpi_command(3, [sys.executable, script, tmp_path / "in.npy", "-o", out, "--backend", "cpu", "--quiet"])
    proc = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=python_env(DISTSCAN_IO_THREADS="1,1"), start_new_session=True)
    deadline = time.monotonic() + T
    while not leftover_temps(tmp_path) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.01)
    temps = leftover_temps(tmp_path)
    assert temps, "the run never created its temporary file"
    rank0 = int(temps[0].rsplit("-", 1)[1].split(".")[0])  # the temporary file is named after rank 0's pid
    time.sleep(0.3)
    os.kill(rank0, signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail("the job did not end within 30 s of SIGTERM to rank 0")
    assert proc.returncode != 0, "the run finished before the signal: make the writes slower"
    assert "distscan: error: rank 0: interrupted by SIGTERM" in err and "nothing was published" in err
    assert "Traceback" not in err
    assert not out.exists() and leftover_temps(tmp_path) == []
