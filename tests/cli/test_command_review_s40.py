"""Defects of the ``distscan`` command found by the red-team pass of 2026-11-27 (fortieth session),
mended: an ``--initial`` past 64 bits for an integer recurrence ended in NumPy's "Python int too
large to convert to C long" (``_call.initial_row``).  The --dtype that NumPy's parser chokes on is in
test_args.py, a non-numeric recurrence A or B in test_command_adversarial.py.
"""

import os

import numpy as np
import pytest

from tests.support.command import assert_one_error_line, cli_in_process
from tests.support.files import leftover_temps
from tests.support.launch import files_and_sizes

pytestmark = [
    pytest.mark.timeout(120),
    # cli_in_process runs the command on COMM_WORLD: under mpiexec each rank would name its own folder
    pytest.mark.skipif(bool(os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK")),
                       reason="runs the command in this process; run it from a serial pytest"),
]


# -- an --initial past 64 bits: refused naming the value and the dtype ----------------------------------

@pytest.mark.parametrize("initial", [str(2**64), str(-2**63 - 1), "99999999999999999999999"])
def test_an_initial_past_64_bits_is_refused_naming_it(tmp_path, capsys, initial):
    """NumPy keeps such a Python int as an object, which the range check skipped; its cast said
    "Python int too large to convert to C long", naming neither the value nor the dtype."""
    np.save(tmp_path / "a.npy", np.ones(4, np.int64))
    np.save(tmp_path / "b.npy", np.arange(4, dtype=np.int64))
    before = files_and_sizes(tmp_path)
    proc = cli_in_process(capsys, "recurrence", tmp_path / "a.npy", tmp_path / "b.npy", "--initial", initial,
                          "-o", tmp_path / "y.npy", "--backend", "cpu", "--quiet")
    assert_one_error_line(proc, "initial value", initial, "int64")
    assert files_and_sizes(tmp_path) == before and leftover_temps(tmp_path) == []


def test_an_initial_past_64_bits_still_works_for_a_float_recurrence(tmp_path, capsys):
    np.save(tmp_path / "a.npy", np.ones(3))
    np.save(tmp_path / "b.npy", np.zeros(3))
    proc = cli_in_process(capsys, "recurrence", tmp_path / "a.npy", tmp_path / "b.npy", "--initial", str(2**70),
                          "-o", tmp_path / "y.npy", "--backend", "cpu", "--quiet")
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), np.full(3, float(2**70)))
