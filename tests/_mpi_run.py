"""Helpers for tests that launch programs under ``mpiexec`` (shared by the test files).

``find_mpiexec()`` looks next to ``sys.executable`` first (the virtual environment's
``bin``, where the ``mpich`` wheel puts its launcher), then on ``PATH``.
``mpi_command(n, args)`` builds the launch line (``--oversubscribe`` for Open MPI;
MPICH's hydra oversubscribes by itself).  ``run(cmd, timeout=...)`` runs it in its
own process group and kills the whole group on timeout, failing the test: a hang
is a failure, never a stuck CI job.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

_LAUNCHERS = ("mpiexec", "mpirun")


def find_mpiexec():
    """Path of an MPI launcher, or None: beside ``sys.executable`` first, then on ``PATH``."""
    here = Path(sys.executable).parent
    for name in _LAUNCHERS:
        candidate = here / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    for name in _LAUNCHERS:
        found = shutil.which(name)
        if found:
            return found
    return None


def require_mpiexec() -> str:
    """The launcher, or skip the test with the reason."""
    launcher = find_mpiexec()
    if launcher is None:
        pytest.skip(f"no mpiexec/mpirun next to {sys.executable} or on PATH (pip install mpich)")
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        pytest.skip("mpi4py is not installed")
    return launcher


_FLAVOR = {}


def _is_open_mpi(launcher: str) -> bool:
    if launcher not in _FLAVOR:
        try:
            out = subprocess.run([launcher, "--version"], capture_output=True, text=True, timeout=30).stdout
        except (OSError, subprocess.TimeoutExpired):
            out = ""
        _FLAVOR[launcher] = "Open MPI" in out or "OpenRTE" in out
    return _FLAVOR[launcher]


def mpi_command(n: int, args, launcher=None) -> list:
    """``[mpiexec, -n, n, *args]`` (with ``--oversubscribe`` under Open MPI)."""
    launcher = launcher or require_mpiexec()
    extra = ["--oversubscribe"] if _is_open_mpi(launcher) else []
    return [launcher, *extra, "-n", str(n), *map(str, args)]


def python_env(**extra) -> dict:
    """The environment with the repository first on ``PYTHONPATH`` (the package need not be installed)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.setdefault("OMP_NUM_THREADS", "1")
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run(cmd, *, timeout: float = 60, env=None, cwd=None) -> subprocess.CompletedProcess:
    """Run ``cmd``, capturing text output; on timeout kill its process group and fail the test."""
    proc = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env if env is not None else python_env(), cwd=cwd, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = proc.communicate()
        pytest.fail(f"hung: {' '.join(map(str, cmd))} did not finish within {timeout} s\n"
                    f"stdout:\n{out}\nstderr:\n{err}")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def run_mpi(n: int, args, *, timeout: float = 60, env=None, cwd=None) -> subprocess.CompletedProcess:
    """``run(mpi_command(n, args))``."""
    return run(mpi_command(n, args), timeout=timeout, env=env, cwd=cwd)
