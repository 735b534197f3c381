"""The command's start-up loads what its first read needs and no more (issue 31): the check of
``--verify``, the GPU pipeline, the state and declared operators, the algorithms' teaching flows,
numba and CuPy load only for the runs that use them."""

import os
import subprocess
import sys

import numpy as np
import pytest

pytestmark = [
    # These tests start interpreters themselves: under mpiexec they would inherit the rank's launcher
    # variables (and fail in MPI_Init), so they run in the serial pytest pass only.
    pytest.mark.skipif(bool(os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK")),
                       reason="starts interpreters itself; run it from a serial pytest"),
]

# Modules that neither ``import distscan.cli`` nor a plain ``--backend cpu`` run may load.
DEFERRED = ("distscan.pipeline.verify", "distscan.pipeline.cuda", "distscan.pipeline.gpu_start",
            "distscan.pipeline.device_chunks",
            "distscan.ops.state", "distscan.ops.declared", "distscan.ops.jit", "distscan.backends.cpu_states",
            "distscan.algorithms.flows", "distscan.algorithms.counts", "numba", "cupy", "json", "socket", "tempfile")


def _loaded(code: str) -> set:
    """The deferred modules that ``code`` (run in a fresh interpreter) leaves loaded."""
    code += f"\nimport sys; print(' '.join(m for m in {DEFERRED!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return set(out.stdout.split())


def _by_dependencies() -> set:
    """What the command's dependencies load by themselves (NumPy 1.25 imports json, say): not
    distscan's to defer."""
    return _loaded("import numpy\ntry:\n    from mpi4py import MPI\nexcept ImportError:\n    pass")


def test_import_of_the_command_loads_nothing_deferred():
    assert _loaded("import distscan.cli") - _by_dependencies() == set()


def test_a_plain_cpu_run_loads_nothing_deferred_and_verify_loads_the_check(tmp_path):
    a = np.arange(1000, dtype=np.int32)
    np.save(tmp_path / "in.npy", a)
    run = ("import distscan.cli; assert distscan.cli.main([{inp!r}, '-o', {out!r}, '--force', '--quiet', "
           "'--backend', 'cpu'{more}]) == 0")
    inp, out = str(tmp_path / "in.npy"), str(tmp_path / "out.npy")
    theirs = _by_dependencies()
    assert _loaded(run.format(inp=inp, out=out, more="")) - theirs == set()
    np.testing.assert_array_equal(np.load(out), np.cumsum(a))
    assert _loaded(run.format(inp=inp, out=out, more=", '--verify'")) - theirs == {"distscan.pipeline.verify"}
