"""The command line at its edges: environment values, --gpu, running without mpi4py, the report
written before publishing, --op xor, distscan-example's next command, zero-element and
non-regular files under mpiexec, signals (SIGINT to mpiexec, SIGTERM to one rank, SIGKILL then
a rerun).  Error paths run in-process (fast); the command lines for 3 ranks run in one mpiexec
job (``_mpi_run.CliBatches``); signals, running without mpi4py and the README's commands start
processes of their own."""

import glob
import os
import signal
import stat
import subprocess
import sys
import time

import numpy as np
import pytest

from tests.support.launch import CliBatches, find_mpiexec, mpi_command, python_env, run, run_mpi
from distscan import cli

pytestmark = [
    pytest.mark.timeout(180),
    pytest.mark.skipif(bool(os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK")),
                       reason="launches processes itself; run it from a serial pytest"),
]
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
T = 60


def _files(folder):
    return sorted(os.path.relpath(p, folder) for p in glob.glob(os.path.join(str(folder), "**"), recursive=True)
                  if os.path.isfile(p) or os.path.islink(p))


def _temps(folder):
    return sorted(glob.glob(os.path.join(str(folder), "*.part")) + glob.glob(os.path.join(str(folder), ".*.part")))


def _one_line(err, *words):
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("distscan: error: "), err
    for w in words:
        assert w.lower() in lines[0].lower(), (w, lines[0])
    return lines[0]


def _in(tmp_path, a=None):
    p = tmp_path / "in.npy"
    np.save(p, np.arange(100, dtype=np.int64) if a is None else a)
    return str(p)


# The command lines of this file at 3 ranks, registered next to their tests, run in one mpiexec job.
JOBS = []  # (key, prepare)


def job3(key):
    def register(prepare):
        JOBS.append((key, prepare))
        return prepare
    return register


@pytest.fixture(scope="module")
def batch3(tmp_path_factory):
    b = CliBatches(tmp_path_factory)
    for key, prepare in JOBS:
        b.add(3, key, prepare)
    return lambda key: b.get(3, key)


# -- 16/10: environment values: one line, at start-up, nothing written ------------------------------

@pytest.mark.parametrize("name, value", [("DISTSCAN_FINAL_TIMEOUT", "abc"), ("DISTSCAN_FINAL_TIMEOUT", "-1"),
                                         ("DISTSCAN_FINAL_TIMEOUT", "inf"), ("DISTSCAN_NODE_SIZE", "x"),
                                         ("DISTSCAN_NODE_SIZE", "0"), ("DISTSCAN_GPU", "foo"),
                                         ("DISTSCAN_ALLOW_SHARED_GPU", "maybe")])
def test_bad_environment_value_is_one_line_and_publishes_nothing(tmp_path, monkeypatch, capsys, name, value):
    inp = _in(tmp_path)
    before = _files(tmp_path)
    monkeypatch.setenv(name, value)
    assert cli.main([inp, "--report", str(tmp_path / "r.json"), "--quiet"]) == 1
    _one_line(capsys.readouterr().err, name)
    assert _files(tmp_path) == before


@job3("bad_env")
def _bad_env_job(folder):
    return [_in(folder)], {"env": {"DISTSCAN_FINAL_TIMEOUT": "abc"}}


def test_bad_environment_value_under_mpiexec(batch3):
    tmp_path, proc, _ = batch3("bad_env")
    assert proc.returncode == 1 and proc.codes == [1, 1, 1] and "Traceback" not in proc.stderr
    _one_line(proc.stderr, "DISTSCAN_FINAL_TIMEOUT")
    assert _files(tmp_path) == ["in.npy"]


# -- 16: --gpu needs --backend cuda --------------------------------------------------------------------

@pytest.mark.parametrize("flags", [["--gpu", "0"], ["--gpu-memory-limit", "1G"], ["--gpu", "1", "--backend", "cpu"]])
def test_gpu_options_without_cuda_backend_are_refused(tmp_path, capsys, flags):
    inp = _in(tmp_path)
    assert cli.main([inp, *flags]) == 2
    err = capsys.readouterr().err
    assert "needs --backend cuda" in err and err.count("distscan: error:") == 1
    assert _files(tmp_path) == ["in.npy"]


# -- 10: a report that cannot be written: nothing published --------------------------------------

def test_report_write_failure_publishes_nothing(tmp_path, monkeypatch, capsys):
    inp = _in(tmp_path)

    def full_disk(report):
        def write(f):
            raise OSError(28, "No space left on device")
        return write
    monkeypatch.setattr(cli, "_report_writer", full_disk)
    assert cli.main([inp, "--report", str(tmp_path / "r.json"), "--quiet"]) == 1
    _one_line(capsys.readouterr().err, "No space left")
    assert _files(tmp_path) == ["in.npy"]


@pytest.mark.parametrize("kind", ["fifo", "directory", "missing_folder"])
def test_bad_report_path_fails_before_anything(tmp_path, capsys, kind):
    inp = _in(tmp_path)
    rep = tmp_path / "r.json"
    if kind == "fifo":
        os.mkfifo(rep)
    elif kind == "directory":
        rep.mkdir()
    else:
        rep = tmp_path / "no" / "r.json"
    assert cli.main([inp, "--report", str(rep), "--force"]) == 1
    _one_line(capsys.readouterr().err)
    assert not os.path.exists(tmp_path / "in.cumsum.npy") and _temps(tmp_path) == []


def test_report_is_complete_when_the_output_is(tmp_path, capsys):
    import json
    inp = _in(tmp_path)
    assert cli.main([inp, "--report", str(tmp_path / "r.json"), "--verify", "--quiet"]) == 0
    r = json.loads((tmp_path / "r.json").read_text())
    assert r["verify"]["passed"] and r["times_s"]["total"] > 0 and r["argv"][0] == inp
    assert _temps(tmp_path) == []


# -- 16: .npz and malformed headers through the command ------------------------------------------

def test_npz_and_deep_header_messages(tmp_path, capsys):
    np.savez(tmp_path / "x.npz", a=np.arange(3))
    assert cli.main([str(tmp_path / "x.npz")]) == 1
    _one_line(capsys.readouterr().err, "npz archive", "np.save('a.npy'")
    text = b"{'descr': '<i8', 'fortran_order': False, 'shape': (" + b"-" * 200_000 + b"1,), }"
    text += b" " * (-(len(text) + 13) % 64) + b"\n"
    (tmp_path / "deep.npy").write_bytes(b"\x93NUMPY\x02\x00" + len(text).to_bytes(4, "little") + text)
    assert cli.main([str(tmp_path / "deep.npy")]) == 1
    line = _one_line(capsys.readouterr().err, "malformed .npy header")
    assert "unknown error" not in line and len(line) < 300


# -- 16: one process without mpi4py ------------------------------------------------------------------

def _no_mpi4py_env(tmp_path, **extra):
    fake = tmp_path / "fake" / "mpi4py"
    fake.mkdir(parents=True, exist_ok=True)
    (fake / "__init__.py").write_text("raise ImportError('mpi4py is not installed (test)')\n")
    env = python_env(**extra)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path / "fake"), env["PYTHONPATH"]])
    for k in list(env):
        if k.startswith(("PMI_", "OMPI_", "PMIX_")):
            del env[k]
    env.update({k: str(v) for k, v in extra.items()})
    return env


def test_runs_in_one_process_without_mpi4py(tmp_path):
    a = np.random.default_rng(0).integers(-9, 9, 1001)
    inp = _in(tmp_path, a)
    proc = run([sys.executable, "-m", "distscan", inp, "--verify", "--report", tmp_path / "r.json"],
               env=_no_mpi4py_env(tmp_path), timeout=T)
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "in.cumsum.npy"), np.cumsum(a))
    assert "verify passed" in proc.stdout
    # started as one of several ranks without mpi4py: refused, not 3 processes racing on one file
    proc = run([sys.executable, "-m", "distscan", inp, "--force"], env=_no_mpi4py_env(tmp_path, PMI_SIZE=3),
               timeout=T)
    assert proc.returncode == 1
    _one_line(proc.stderr, "mpi4py")


# -- 15: --op xor is bitwise on integers, logical on bool ---------------------------------------------

def _xor_input(folder, dtype):
    rng = np.random.default_rng(7)
    a = rng.integers(-2**40, 2**40, 1003).astype(dtype) if dtype != np.bool_ else rng.random(1003) < 0.5
    inp = _in(folder, a)
    return a, [inp, "--op", "xor", "-o", folder / "x.npy", "--verify"]


@job3("xor")
def _xor_job(folder):
    return _xor_input(folder, np.int64)[1], {}


@pytest.mark.parametrize("ranks, dtype", [(3, np.int64), (1, np.bool_)])
def test_op_xor_end_to_end(tmp_path, capsys, batch3, ranks, dtype):
    if ranks == 1:  # in this process
        a, args = _xor_input(tmp_path, dtype)
        capsys.readouterr()
        code = cli.main([str(x) for x in args])
        proc = subprocess.CompletedProcess(args, code, *capsys.readouterr())
    else:
        tmp_path, proc, _ = batch3("xor")
        a = np.load(tmp_path / "in.npy")
    out = tmp_path / "x.npy"
    assert proc.returncode == 0, proc.stderr
    assert "verify passed" in proc.stdout
    got = np.load(out)
    want = np.bitwise_xor.accumulate(a) if dtype != np.bool_ else np.logical_xor.accumulate(a)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


# -- 16: the README's first command, then distscan-example's suggestion verbatim ----------------------

def test_example_suggestion_works_after_readme_first_command(tmp_path):
    mpiexec = find_mpiexec()
    if mpiexec is None:
        pytest.skip("no mpiexec")
    env = python_env()
    env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), os.path.dirname(mpiexec), env.get("PATH", "")])
    # README: distscan-example -o example.npy --force && mpiexec -n 4 distscan example.npy --verify --force
    first = run([sys.executable, "-m", "distscan.cli.example", "-o", "example.npy", "--force"], env=env, cwd=tmp_path,
                timeout=T)
    assert first.returncode == 0, first.stderr
    scan = run(mpi_command(4, [sys.executable, "-m", "distscan", "example.npy", "--verify", "--force"]), env=env,
               cwd=tmp_path, timeout=2 * T)
    assert scan.returncode == 0, scan.stderr
    lines = first.stdout.splitlines()
    suggested = lines[lines.index("next, try:") + 1].strip()
    proc = subprocess.run(suggested, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=2 * T)
    assert proc.returncode == 0, f"{suggested}\n{proc.stderr}"


# -- 6, 7, 8, 9c under mpiexec: zero elements, FIFO input, /dev/null, a 250-byte output name -----------

ZERO_SHAPES = [(2**59, 0), (5, 0, 3)]


def _zero_job(shape):
    def prepare(folder):
        with open(folder / "z.npy", "wb") as f:
            np.lib.format.write_array_header_2_0(f, {"descr": "<f4", "fortran_order": False, "shape": shape})
        return [folder / "z.npy", "--verify"], {}
    return prepare


for _shape in ZERO_SHAPES:
    job3(("zero", _shape))(_zero_job(_shape))


@pytest.mark.parametrize("shape", ZERO_SHAPES)
def test_zero_elements_at_three_ranks(batch3, shape):
    tmp_path, proc, _ = batch3(("zero", shape))
    assert proc.returncode == 0, proc.stderr
    assert proc.seconds < 30
    from distscan.io import read_header
    h = read_header(str(tmp_path / "z.cumsum.npy"))
    assert h.shape == shape and h.dtype == np.float32 and "verify passed" in proc.stdout


@job3("fifo")
def _fifo_job(folder):
    os.mkfifo(folder / "input.npy")
    return [folder / "input.npy"], {}


@job3("dev_null")
def _dev_null_job(folder):
    return [_in(folder), "-o", "/dev/null", "--force"], {}


def test_fifo_input_and_dev_null_output_at_three_ranks(batch3):
    _, proc, _ = batch3("fifo")
    _one_line(proc.stderr, "input.npy is a FIFO", "not a regular file")
    assert proc.returncode == 1 and proc.codes == [1, 1, 1]
    _, proc, _ = batch3("dev_null")
    assert proc.returncode == 1 and proc.codes == [1, 1, 1]
    _one_line(proc.stderr, "/dev/null", "character device", "regular files only")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


@job3("long_name")
def _long_name_job(folder):
    out = folder / ("o" * 246 + ".npy")
    return [_in(folder), "-o", out, "--verify"], {"out": out}


def test_long_output_name_at_three_ranks(batch3):
    tmp_path, proc, opts = batch3("long_name")
    out = opts["out"]
    assert len(out.name) == 250
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(out), np.cumsum(np.arange(100)))
    assert _temps(tmp_path) == []


# -- 9: signals ----------------------------------------------------------------------------------------

def _children(pid):
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                if int(fields[1]) == pid:
                    out.append(int(d))
            except (OSError, IndexError, ValueError):
                pass
    return out


def _tree(pid):
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        kids = _children(p)
        found += kids
        todo += kids
    return found


def _alive(pids):
    alive = []
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] != "Z":
                    alive.append(p)
        except OSError:
            pass
    return alive


@pytest.fixture(scope="module")
def big_input(tmp_path_factory):
    folder = tmp_path_factory.mktemp("big")
    p = folder / "big.npy"
    np.save(p, np.arange(25_000_000, dtype=np.int64))  # 200 MB
    return p


def _start(big_input, out):
    cmd = mpi_command(3, [sys.executable, "-m", "distscan", big_input, "-o", out, "--verify", "--force"])
    proc = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=python_env(), start_new_session=True)
    deadline = time.monotonic() + 30
    while not _temps(out.parent) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _temps(out.parent), "the run never created its temporary file"
    ranks = [p for p in _tree(proc.pid) if "distscan" in open(f"/proc/{p}/cmdline").read()]
    return proc, ranks


def _ends_clean(proc, pids, out):
    t0 = time.monotonic()
    try:
        _, err = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail("mpiexec did not end within 10 s of the signal")
    while _alive(pids) and time.monotonic() - t0 < 10:
        time.sleep(0.05)
    assert _alive(pids) == [], "ranks still running 10 s after the signal"
    assert proc.returncode != 0
    assert _temps(out.parent) == [] and not out.exists()
    return err


@pytest.mark.parametrize("target", ["mpiexec_sigint", "rank_sigterm"])
def test_signal_ends_every_rank_and_removes_the_temp(tmp_path, big_input, target):
    out = tmp_path / "o.npy"
    proc, ranks = _start(big_input, out)
    assert len(ranks) >= 3, ranks
    if target == "mpiexec_sigint":
        os.kill(proc.pid, signal.SIGINT)
    else:
        os.kill(ranks[-1], signal.SIGTERM)
    err = _ends_clean(proc, [proc.pid] + ranks, out)
    assert "distscan: error:" in err and "interrupted by SIG" in err and "nothing was published" in err


def test_sigkill_leaves_a_stale_temp_that_the_next_run_removes(tmp_path, big_input):
    out = tmp_path / "o.npy"
    proc, ranks = _start(big_input, out)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()
    t0 = time.monotonic()
    while _alive(ranks) and time.monotonic() - t0 < 10:
        time.sleep(0.05)
    stale = _temps(tmp_path)
    assert len(stale) == 1
    small = _in(tmp_path)
    rerun = run_mpi(3, [sys.executable, "-m", "distscan", small, "-o", out, "--force"], timeout=T)
    assert rerun.returncode == 0, rerun.stderr
    assert f"removed stale temporary file {stale[0]}" in rerun.stderr
    assert _temps(tmp_path) == []
