"""tests/dist/test_ranks_differ.py with CuPy parts: every rank draws the kind of its own part (contiguous,
strided or reversed CuPy views, ``out=`` of the result dtype or of another dtype NumPy computes
alike, ``dtype=``, operator aliases) in several calls in a row; a NumPy part on some ranks beside
CuPy parts on others is refused with the same ``ValueError`` on every rank.  Each scenario runs
under ``mpiexec`` at 2 and 3 ranks (GPU ``rank % GPUs``) with a timeout: a hang fails the test."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.devices import require_gpu

require_gpu()

from hypothesis import HealthCheck, Phase, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests.dist import test_ranks_differ as cpu  # noqa: E402

pytestmark = pytest.mark.gpu

KINDS = ["cupy", "cupy", "cupy_strided", "cupy_reversed", "numpy"]
# Fewer operator and dtype pairs than on the CPU: each is a kernel module to compile (the parent
# compiles them first, into CuPy's disk cache, which the ranks then read).
DTYPES = {"sum": ["int64", "int32", "float64"], "max": ["float32", "int64"]}
_cpu_expected = cpu.expected


@st.composite
def calls(draw, ranks):
    call = draw(cpu.calls(ranks, DTYPES))
    mixed = draw(st.integers(0, 4)) == 0  # a NumPy part on one rank: refused everywhere
    odd = draw(st.integers(0, ranks - 1))
    for r, spec in enumerate(call["specs"]):
        kind = "numpy" if mixed and r == odd else draw(st.sampled_from(KINDS[:4]))
        spec["kind"] = kind if kind != "numpy" else "contiguous"
        if spec["out"] == "swapped":  # CuPy keeps native byte order only
            spec["out"] = "same"
        if spec["out"] == "cast" and call["dtype"] not in ("int64", "float64", "float32"):
            spec["out"] = "same"
    call["mixed"] = mixed
    return call


def expected(call):
    if call.get("mixed") or any(not s["kind"].startswith("cupy") for s in call["specs"]):
        return None
    return _cpu_expected(call)


def issue_scenario(ranks):
    """Issue 28 on 2 H200s: a strided view or out= on one rank, then a NumPy part on one rank."""
    out = []
    for kind, out_kind in (("cupy_strided", "none"), ("cupy", "same"), ("contiguous", "none")):
        for _ in range(4):
            specs = [cpu._spec(kind="cupy") for _ in range(ranks)]
            specs[1] = cpu._spec(kind=kind, out=out_kind)
            out.append({"seed": 1, "op": "sum", "dtype": "int64", "axis": 0, "trailing": [],
                        "counts": [1000] * ranks, "exclusive": False, "initial": None, "specs": specs,
                        "mixed": kind == "contiguous"})
    return {"calls": out}


@pytest.mark.parametrize("ranks", [2, 3])
@settings(max_examples=cpu.EXAMPLES, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate],
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                 HealthCheck.data_too_large])
@given(data=st.data())
@example(data=None)
def test_gpu_ranks_that_call_differently(ranks, data, tmp_path_factory, monkeypatch):
    _compile_kernels()
    scenario = issue_scenario(ranks) if data is None else {"calls": data.draw(st.lists(calls(ranks), min_size=8,
                                                                                          max_size=10))}
    monkeypatch.setattr(cpu, "expected", expected)
    cpu.run_scenario(ranks, scenario, tmp_path_factory.mktemp(f"gpu{ranks}"), worker_args=("--cupy",), timeout=300)


_COMPILED = []


def _compile_kernels():
    """Every kernel module the scenarios use, compiled once into CuPy's disk cache."""
    if _COMPILED:
        return
    import cupy
    import distscan
    from mpi4py import MPI

    for op, dtypes in DTYPES.items():
        for dt in dtypes:
            for exclusive in (False, True):
                x = cupy.arange(5).astype(dt)
                distscan.scan(x, op, exclusive=exclusive, comm=MPI.COMM_SELF)
                distscan.scan(x, op, exclusive=exclusive, initial=1, comm=MPI.COMM_SELF)
                distscan.reduce(x, op, comm=MPI.COMM_SELF)
                cast = cpu.worker.CAST_OUT.get(np.dtype(dt).name)
                if cast and np.dtype(dt).name in ("int64", "float64", "float32"):
                    distscan.scan(x, op, exclusive=exclusive, out=cupy.empty(5, cast), comm=MPI.COMM_SELF)
    _COMPILED.append(True)
