"""The command's arguments (distscan.cli.args): ``--help`` printed once with an example, a usage error
told once, bad environment values told in one line at start-up (nothing written, in-process and
under mpiexec), and GPU options refused without ``--backend cuda``.
"""

import os

import numpy as np
import pytest

from distscan import cli

from tests.support.command import files_in, input_npy, job, one_error_line

pytestmark = [
    pytest.mark.timeout(180),
    # These tests launch processes (mpiexec) themselves: under `mpiexec ... pytest --with-mpi` every
    # rank would launch nested jobs, so they run in the serial pytest pass only.
    pytest.mark.skipif(bool(os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK")),
                       reason="launches mpiexec itself; run it from a serial pytest"),
]


# -- help and usage ---------------------------------------------------------------------------------

job(2, "help")(lambda folder: (["--help"], {}))


job(2, "usage")(lambda folder: (["x.npy", "--op", "nope"], {}))


def test_help_once_with_example(batches):
    _, proc, _ = batches.get(2, "help")
    assert proc.returncode == 0 and proc.codes == [0, 0]
    assert proc.stdout.count("usage: distscan") == 1
    for word in ("mpiexec -n 4 python -m distscan", "--verify", "--report", "--force", "--debug", "exit status",
                 "cumsum.npy", "--strategy", "--hierarchy", "--backend"):
        assert word in proc.stdout, word


def test_usage_error_once(batches):
    _, proc, _ = batches.get(2, "usage")
    assert proc.returncode == 2 and proc.codes == [2, 2]
    assert proc.stderr.count("distscan: error:") == 1 and "unknown operator" in proc.stderr


# -- 16/10: environment values: one line, at start-up, nothing written ------------------------------

@pytest.mark.parametrize("name, value", [("DISTSCAN_FINAL_TIMEOUT", "abc"), ("DISTSCAN_FINAL_TIMEOUT", "-1"),
                                         ("DISTSCAN_FINAL_TIMEOUT", "inf"), ("DISTSCAN_NODE_SIZE", "x"),
                                         ("DISTSCAN_NODE_SIZE", "0"), ("DISTSCAN_DOUBLING_RANKS", "x"),
                                         ("DISTSCAN_GPU", "foo"),
                                         ("DISTSCAN_ALLOW_SHARED_GPU", "maybe")])
def test_bad_environment_value_is_one_line_and_publishes_nothing(tmp_path, monkeypatch, capsys, name, value):
    inp = input_npy(tmp_path)
    before = files_in(tmp_path)
    monkeypatch.setenv(name, value)
    assert cli.main([inp, "--report", str(tmp_path / "r.json"), "--quiet"]) == 1
    one_error_line(capsys.readouterr().err, name)
    assert files_in(tmp_path) == before


@job(3, "bad_env")
def _bad_env_job(folder):
    return [input_npy(folder)], {"env": {"DISTSCAN_FINAL_TIMEOUT": "abc"}}


def test_bad_environment_value_under_mpiexec(batch3):
    tmp_path, proc, _ = batch3("bad_env")
    assert proc.returncode == 1 and proc.codes == [1, 1, 1] and "Traceback" not in proc.stderr
    one_error_line(proc.stderr, "DISTSCAN_FINAL_TIMEOUT")
    assert files_in(tmp_path) == ["in.npy"]


# -- 16: --gpu needs a backend that may use a GPU (cuda, or auto) ----------------------------------------

@pytest.mark.parametrize("flags", [["--gpu", "0", "--backend", "cpu"], ["--gpu-memory-limit", "1G", "--backend", "cpu"],
                                   ["--backend", "cpu", "--gpu", "1"]])
def test_gpu_options_with_the_cpu_backend_are_refused(tmp_path, capsys, flags):
    inp = input_npy(tmp_path)
    assert cli.main([inp, *flags]) == 2
    err = capsys.readouterr().err
    assert "needs --backend cuda or auto" in err and err.count("distscan: error:") == 1
    assert files_in(tmp_path) == ["in.npy"]


@pytest.mark.parametrize("dtype", ["S3", "i4,i4", "M8", "O", "U2", "(2,)f8"])
def test_a_dtype_that_is_not_numeric_is_a_usage_error(tmp_path, capsys, dtype):
    """A string, record, datetime, object or subarray --dtype: exit 2 naming what was typed (it
    once passed the parser and failed later with exit 1, naming NumPy's 'bytes24' or 'void64')."""
    inp = input_npy(tmp_path)
    assert cli.main([inp, "--dtype", dtype]) == 2
    err = capsys.readouterr().err
    assert f"--dtype {dtype!r} is not a numeric dtype" in err and err.count("distscan: error:") == 1
    assert files_in(tmp_path) == ["in.npy"]


@pytest.mark.parametrize("dtype", ["(i8,2)", "((2,)i8", "(-1,)i8", "i8,(a)"])
def test_a_dtype_numpy_cannot_parse_is_a_usage_error_in_one_line(tmp_path, capsys, dtype):
    """A --dtype that NumPy's parser chokes on: ``np.dtype('(i8,2)')`` raises SyntaxError (a
    traceback, exit 1) and ``np.dtype('((2,)i8')`` ValueError (argparse's "invalid _dtype_arg
    value"), not the TypeError of an unknown name (2026-11-27)."""
    inp = input_npy(tmp_path)
    assert cli.main([inp, "--dtype", dtype]) == 2
    err = capsys.readouterr().err
    assert f"unknown dtype {dtype!r}" in err and err.count("distscan: error:") == 1 and "Traceback" not in err
    assert files_in(tmp_path) == ["in.npy"]


@pytest.mark.parametrize("text", ["bogus", "(i8,2)", "((2,)i8", "(-1,)i8", "i8,(a)", "["])
def test_dtype_named_is_none_for_every_way_numpy_refuses_a_name(text):
    """The one rule of ``--dtype`` and distscan-example's (``distscan.cli.args.dtype_named``): NumPy
    refuses a name with TypeError, ValueError or SyntaxError; each gives None, never an exception."""
    from distscan.cli.args import dtype_named
    assert dtype_named(text) is None
    assert dtype_named("int16") == np.int16 and dtype_named("S3") == np.dtype("S3")  # (numeric or not: read)
