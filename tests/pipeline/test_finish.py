"""The end of a file scan (distscan.pipeline.finish): an array with no elements, whatever its shape,
operator and dtype, finishes at once with only its header written (and --verify passing)."""

import os

import numpy as np
import pytest

from distscan import io as dio
from distscan import pipeline

from tests.support.files import leftover_temps

pytestmark = pytest.mark.timeout(60)


def _empty_header_file(path, shape, descr="<i8"):
    with open(path, "wb") as f:
        np.lib.format.write_array_header_2_0(f, {"descr": descr, "fortran_order": False, "shape": shape})
    return str(path)


# -- 6: arrays with no elements finish at once ---------------------------------------------------

@pytest.mark.parametrize("shape", [(2**59, 0), (0,), (0, 5), (5, 0, 3), (3, 0)])
@pytest.mark.parametrize("op, dtype, want", [("sum", "<i4", np.int64), ("max", "<f4", np.float32),
                                             ("bitwise_xor", "<u1", np.uint8), ("prod", "<f2", np.float16)])
def test_zero_elements_write_header_only(tmp_path, shape, op, dtype, want):
    inp = _empty_header_file(tmp_path / "z.npy", shape, dtype)
    out = str(tmp_path / "z.out.npy")
    rep = pipeline.run(pipeline.Job(input=inp, output=out, op=op, verify=True), None)
    h = dio.read_header(out)
    assert h.shape == shape and h.dtype == want
    assert os.path.getsize(out) == h.offset
    assert rep["elements"] == 0 and rep["verify"]["passed"]
    if shape[0] < 2**20:
        assert np.load(out).shape == shape
    assert leftover_temps(tmp_path) == []
