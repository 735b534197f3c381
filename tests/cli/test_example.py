"""``distscan-example`` (distscan.cli.example): it writes an input, refuses to overwrite one, and its
suggested next command works, also right after the README's first command."""

import contextlib
import io
import os
import subprocess
import sys

import numpy as np
import pytest

from tests.support.command import T, job
from tests.support.launch import find_mpiexec, mpi_command, python_env, run

pytestmark = [
    pytest.mark.timeout(180),
    # These tests launch processes (mpiexec) themselves: under `mpiexec ... pytest --with-mpi` every
    # rank would launch nested jobs, so they run in the serial pytest pass only.
    pytest.mark.skipif(bool(os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK")),
                       reason="launches mpiexec itself; run it from a serial pytest"),
]


# -- distscan-example ---------------------------------------------------------------------------------

def _example(*args):
    """``distscan-example ARGS`` in this process: (exit status, stdout, stderr)."""
    from distscan.cli import example
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = example.main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("dtype", ["bogus", "(i8,2)", "((2,)i8", "i8,(a)"])
def test_example_refuses_a_dtype_numpy_cannot_read_in_one_line(tmp_path, dtype):
    """A --dtype NumPy refuses (TypeError, ValueError or SyntaxError): exit 2 naming it, no file."""
    with pytest.raises(SystemExit) as info:
        _example("--n", "10", "--dtype", dtype, "-o", tmp_path / "ex.npy")
    assert info.value.code == 2 and not (tmp_path / "ex.npy").exists()


def test_example_reads_its_dtype_by_the_commands_rule(tmp_path, monkeypatch, capsys):
    """distscan-example reads --dtype by the command's rule (``distscan.cli.args.dtype_named``), not a
    copy of it: a name that rule refuses is refused here too."""
    from distscan.cli import example
    monkeypatch.setattr(example, "dtype_named", lambda text: None if text == "int16" else np.dtype(text))
    with pytest.raises(SystemExit) as info:
        example.main(["--n", "10", "--dtype", "int16", "-o", str(tmp_path / "ex.npy")])
    assert info.value.code == 2 and "unknown dtype 'int16'" in capsys.readouterr().err
    assert example.main(["--n", "10", "--dtype", "int8", "-o", str(tmp_path / "ex.npy")]) == 0


@job(2, "example")
def _example_job(folder):
    first = _example("--n", "1009", "--dtype", "int16", "--seed", "3", "-o", folder / "ex.npy")
    again = _example("-o", folder / "ex.npy")
    return [folder / "ex.npy", "--verify"], {"first": first, "again": again}


def test_example_then_scan(batches):
    tmp_path, proc, opts = batches.get(2, "example")
    code, out, err = opts["first"]  # written before the batch ran
    assert code == 0, err
    assert "mpiexec -n 4" in out and "-m distscan" in out
    a = np.load(tmp_path / "ex.npy")
    assert a.shape == (1009,) and a.dtype == np.int16 and a.any()
    code, out, err = opts["again"]
    assert code == 1 and "exists" in err
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "ex.cumsum.npy"), np.cumsum(a))


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
