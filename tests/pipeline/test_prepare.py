"""``distscan.pipeline.prepare``'s checks of a recurrence's files: A and B must be bool, integer, float
or complex (named in one line, before NumPy's promotion); without coefficients the input's own check
speaks instead."""

import re

import numpy as np
import pytest

from distscan.pipeline import prepare
from distscan.pipeline.context import Job


@pytest.mark.parametrize("a, b, named", [
    ("text", "float", "A"), ("float", "text", "B"), ("float", "dates", "B"), ("dates", "float", "A"),
    ("text", "text", "A"),  # A is checked first
])
def test_a_recurrence_file_that_is_not_numeric_is_named(tmp_path, a, b, named):
    data = {"text": np.array(["x", "y", "z"]), "float": np.ones(3), "dates": np.arange(3).astype("M8[D]")}
    for name, kind in (("a", a), ("b", b)):
        np.save(tmp_path / f"{name}.npy", data[kind])
    job = Job(input=str(tmp_path / "b.npy"), output=str(tmp_path / "y.npy"), coefficients=str(tmp_path / "a.npy"))
    bad = data[a if named == "A" else b].dtype
    message = (f"recurrence: {named} {tmp_path / named.lower()}.npy has dtype {bad}; a recurrence takes bool, "
               "integer, float or complex data")
    with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
        prepare(job)


def test_numeric_recurrence_files_and_a_scan_without_coefficients(tmp_path):
    np.save(tmp_path / "a.npy", np.full(3, 0.5, np.float32))
    np.save(tmp_path / "b.npy", np.arange(3, dtype=np.int16))
    np.save(tmp_path / "t.npy", np.array(["x", "y", "z"]))
    _, _, types, _, dtype = prepare(Job(input=str(tmp_path / "b.npy"), output=str(tmp_path / "y.npy"),
                                        coefficients=str(tmp_path / "a.npy")))
    assert np.dtype(dtype) == np.result_type(np.float32, np.int16)
    with pytest.raises(TypeError) as info:  # no coefficients: the scan's own dtype check, not the recurrence's
        prepare(Job(input=str(tmp_path / "t.npy"), output=str(tmp_path / "y.npy")))
    assert "recurrence" not in str(info.value) and "<U1" in str(info.value)
