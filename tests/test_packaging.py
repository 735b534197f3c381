"""The dependency floors that pyproject.toml declares are the ones CI tests (.ci/floors.txt)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _floors_tested():
    pins = {}
    for line in (ROOT / ".ci" / "floors.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, version = line.split("==")
            pins[name.lower()] = version
    return pins


def _declared():
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    specs = list(project["dependencies"])
    for extra in ("mpi", "test"):
        specs += project["optional-dependencies"][extra]
    floors = {}
    for spec in specs:
        m = re.fullmatch(r"([A-Za-z0-9_.-]+)>=([0-9.]+)", spec.replace(" ", ""))
        assert m, f"{spec!r}: every dependency states its floor as name>=version"
        floors[m.group(1).lower()] = m.group(2)
    return floors, project["requires-python"]


def _norm(v):
    parts = [int(p) for p in v.split(".")]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return parts


def test_declared_floors_are_the_tested_ones():
    declared, python = _declared()
    tested = _floors_tested()
    assert sorted(declared) == sorted(tested)
    for name, version in declared.items():
        assert _norm(version) == _norm(tested[name]), f"{name}: pyproject says >={version}, CI tests {tested[name]}"
    assert python == ">=3.10"


def test_every_kernel_folder_ships():
    """Each folder of kernels/ is a package of pyproject.toml (distscan.kernels.<folder>), so its
    headers go into the wheel with the entry file."""
    tomllib = pytest.importorskip("tomllib")
    packages = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    folders = {p.parent.relative_to(ROOT / "kernels") for p in (ROOT / "kernels").rglob("*.cuh")}
    assert folders, "kernels/ has headers"
    for folder in folders:
        assert "distscan.kernels" + "".join("." + part for part in folder.parts) in packages, folder


def test_import_is_light_and_the_command_sets_one_blas_thread():
    """``import distscan`` loads no NumPy (its names come on first use), so that the command can ask
    for one BLAS thread per rank before NumPy starts its pool; a user's own setting wins."""
    import subprocess
    import sys

    code = ("import sys, os, distscan; assert 'numpy' not in sys.modules; distscan.cumsum; "
            "assert 'numpy' in sys.modules; import distscan.cli; print(os.environ['OPENBLAS_NUM_THREADS'])")
    env = {k: v for k, v in __import__("os").environ.items() if k != "OPENBLAS_NUM_THREADS"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "1"
    env["OPENBLAS_NUM_THREADS"] = "4"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "4"
