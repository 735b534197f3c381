"""The command's refusals speak in its own flags, not in the library's keywords (the forty-first
session's audit of the messages with ``name=`` reaching the command): ``--compensated --segments``
said "compensated=True and segments= together are not supported", ``--compensated --op max``
"compensated=True is for sums (op='sum' or 'nansum')", ``--op logical_and --dtype int64`` "dtype=int64
is not allowed", a recurrence's float A with an integer ``--dtype`` "NumPy's a*y in dtype=int32", a
state scan of a long double file "pass dtype=numpy.float64", and an ``--algorithm`` that the GPU's
reverse and state scans do not take "algorithm='blelloch'" (``pipeline.prepare``,
``pipeline.cuda.check_algorithm``); and (the forty-second session) ``--compensated`` on an integer or
bool input, or with an integer ``--dtype``, "operator 'compensated sum' is not defined for input dtype
int64"."""

import os
import re

import numpy as np
import pytest

from tests.support.command import assert_one_error_line, cli_in_process, input_npy, job
from tests.support.files import leftover_temps
from tests.support.launch import files_and_sizes

pytestmark = [
    pytest.mark.timeout(120),
    # cli_in_process runs the command on COMM_WORLD: under mpiexec each rank would name its own folder
    pytest.mark.skipif(bool(os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK")),
                       reason="runs the command in this process; run it from a serial pytest"),
]


def _refused(tmp_path, capsys, *args, words, code=1):
    """The command's one line, with ``words`` and no ``name=`` of the library's; nothing written."""
    before = sorted(os.listdir(tmp_path))
    proc = cli_in_process(capsys, *args, "-o", tmp_path / "o.npy", "--quiet")
    line = assert_one_error_line(proc, *words, code=code)
    assert not re.search(r"\b[a-z_]+=", line), line
    assert sorted(os.listdir(tmp_path)) == before and leftover_temps(tmp_path) == []
    return line


@pytest.fixture
def files(tmp_path):
    np.save(tmp_path / "x.npy", np.arange(10.0))
    np.save(tmp_path / "i.npy", np.arange(10))
    np.save(tmp_path / "flags.npy", np.arange(10) % 3 == 0)
    np.save(tmp_path / "a.npy", np.full(10, 0.5))
    np.save(tmp_path / "ld.npy", np.arange(10, dtype=np.longdouble))
    return tmp_path


def test_compensated_and_segments_are_refused_in_the_command_s_flags(files, capsys):
    _refused(files, capsys, files / "x.npy", "--compensated", "--segments", files / "flags.npy", "--backend", "cpu",
             words=["--compensated and --segments together are not supported"])


@pytest.mark.parametrize("op", ["max", "prod", "logaddexp"])
def test_compensated_with_an_operator_other_than_a_sum_is_refused_in_the_command_s_flags(files, capsys, op):
    _refused(files, capsys, files / "x.npy", "--compensated", "--op", op, "--backend", "cpu",
             words=[f"--compensated is for sums (--op sum or nansum), not --op {op}"])


def test_compensated_on_an_integer_input_is_refused_in_the_command_s_flags(files, capsys):
    """The library's words were "operator 'compensated sum' is not defined for input dtype int64"."""
    _refused(files, capsys, files / "i.npy", "--compensated", "--backend", "cpu",
             words=[f"--compensated takes float or complex data; {files / 'i.npy'} holds int64",
                    "add --dtype float64 to sum it as floats"])


def test_compensated_with_an_integer_dtype_is_refused_in_the_command_s_flags(files, capsys):
    _refused(files, capsys, files / "x.npy", "--compensated", "--dtype", "int64", "--backend", "cpu",
             words=["--compensated takes float or complex data; --dtype int64 is neither"])


def test_compensated_on_an_integer_input_with_a_float_dtype_still_runs(files, capsys):
    proc = cli_in_process(capsys, files / "i.npy", "--compensated", "--dtype", "float64", "--backend", "cpu",
                          "-o", files / "o.npy", "--quiet")
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(files / "o.npy"), np.cumsum(np.arange(10.0)))


@job(3, "compensated_int")
def _compensated_int_job(folder):
    return [input_npy(folder), "--compensated", "--backend", "cpu", "-o", folder / "o.npy"], {}


def test_compensated_on_an_integer_input_is_refused_on_every_rank(batch3):
    """Every rank refuses from the header it was given (rank 0's, broadcast): one line, the same status."""
    folder, proc, opts = batch3("compensated_int")
    assert_one_error_line(proc, "--compensated takes float or complex data", "holds int64")
    assert files_and_sizes(folder) == opts["before"] and leftover_temps(folder) == []


def test_a_logical_operator_with_another_dtype_is_refused_in_the_command_s_flags(files, capsys):
    _refused(files, capsys, files / "i.npy", "--op", "logical_and", "--dtype", "int64", "--backend", "cpu",
             words=["--op logical_and always gives bool; --dtype int64 is not allowed"])


def test_recurrence_coefficients_the_dtype_would_truncate_are_refused_in_the_command_s_flags(files, capsys):
    _refused(files, capsys, "recurrence", files / "a.npy", files / "i.npy", "--dtype", "int32", "--backend", "cpu",
             words=[f"recurrence: A {files / 'a.npy'} is float64", "--dtype int32"])


@pytest.mark.parametrize("extra", [["--compensated"], ["--segments", "flags.npy"]], ids=["compensated", "segments"])
def test_a_long_double_state_scan_is_refused_in_the_command_s_flags(files, capsys, extra):
    extra = [str(files / x) if x.endswith(".npy") else x for x in extra]
    _refused(files, capsys, files / "ld.npy", *extra, "--backend", "cpu", code=1,
             words=["take no float128 (long double)", "pass --dtype float64"])


def test_a_long_double_recurrence_is_refused_in_the_command_s_flags(files, capsys):
    np.save(files / "lda.npy", np.full(10, 0.5, dtype=np.longdouble))
    _refused(files, capsys, "recurrence", files / "lda.npy", files / "ld.npy", "--backend", "cpu",
             words=["take no float128 (long double)", "pass --dtype float64"])


@pytest.mark.parametrize("extra", [["--segments", "flags.npy"], ["--reverse"], ["--compensated"]],
                         ids=["segments", "reverse", "compensated"])
def test_an_algorithm_the_gpu_state_scans_do_not_take_is_refused_in_the_command_s_flags(files, capsys, extra):
    """Refused before the GPU starts (on a machine without one too): the CUDA backend refused it at the
    first chunk, "algorithm='blelloch' is for plain forward scans; ..."."""
    extra = [str(files / x) if x.endswith(".npy") else x for x in extra]
    _refused(files, capsys, files / "x.npy", *extra, "--algorithm", "blelloch", "--backend", "cuda",
             words=["--algorithm blelloch is for plain forward scans on a GPU", "auto, lookback, lookahead"])


def test_the_command_s_gpu_algorithms_for_state_scans_are_the_cuda_backend_s():
    """``pipeline.cuda.EXTENDED_ALGORITHMS`` is what ``backends.cuda.plans.ext_device`` takes."""
    from distscan import ALGORITHMS
    from distscan.backends.cuda import plans
    from distscan.ops import derive, get_op
    from distscan.pipeline.cuda import EXTENDED_ALGORITHMS

    op = derive.segmented(get_op("sum"))
    taken = []
    for name in ALGORITHMS:
        try:
            plans.ext_device(op, name, 1000, 8, 8, "i")
        except ValueError:
            continue
        taken.append(name)
    assert tuple(taken) == EXTENDED_ALGORITHMS
