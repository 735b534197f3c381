"""The package's layout, checked: layers import one way (import-linter's contracts in
.importlinter), no import circles, no module takes another module's underscore names, and no
module grows past about 400 lines."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "distscan"
MAX_LINES = 420


def _modules():
    """``{module name: path}`` of every module of the package."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


MODULES = _modules()


def _is_package(name):
    return MODULES[name].name == "__init__.py"


def _resolve(module, level, target):
    """The absolute name of ``from <level dots><target> import ...`` in ``module``."""
    if not level:
        return target
    base = module.split(".") if _is_package(module) else module.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def _imports(module):
    """``[(imported module, names or None, line)]`` of every import in ``module`` (functions too)."""
    tree = ast.parse(MODULES[module].read_text())
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, None, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            out.append((_resolve(module, node.level, node.module or ""), [(a.name, a.asname) for a in node.names],
                        node.lineno))
    return out


def test_layers_import_one_way():
    """import-linter's contracts (.importlinter): the layers, no MPI in the backends, no CuPy in the
    distributed layer."""
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    if exe is None:
        pytest.skip("import-linter is not installed (pip install -e '.[test]')")
    proc = subprocess.run([exe, "--config", str(ROOT / ".importlinter"), "--no-logo", "--no-cache"], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def test_no_import_circles():
    """No module imports (directly or through others, at the top or inside a function) one that
    imports it back."""
    graph = {m: set() for m in MODULES}
    for m in MODULES:
        for target, names, _ in _imports(m):
            submodules = [f"{target}.{name}" for name, _ in names or () if f"{target}.{name}" in MODULES]
            graph[m].update(submodules)
            # "from . import x" of a submodule x imports x, not a name of the package
            if target in MODULES and (names is None or len(submodules) < len(names)):
                graph[m].add(target)
    # a package imports its submodules to re-export them; a submodule importing its own package
    # (or an ancestor) for a name is the circle that counts
    cycles = _cycles(graph)
    assert not cycles, "import circles: " + "; ".join(" -> ".join(c) for c in cycles)


def _cycles(graph):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_no_module_takes_another_modules_underscore_names():
    """``from .x import _name`` and ``x._name`` across modules: a name that starts with an
    underscore belongs to its module (private modules themselves, like ``distscan._call``, may
    be imported)."""
    bad = []
    for m in MODULES:
        tree = ast.parse(MODULES[m].read_text())
        aliases = {}
        for target, names, line in _imports(m):
            for name, asname in names or ():
                if f"{target}.{name}" in MODULES:
                    aliases[asname or name] = f"{target}.{name}"
                elif name.startswith("_") and target != m:
                    bad.append(f"{m}:{line} takes {target}.{name}")
            if names is None and target in MODULES:
                aliases[target.split(".")[0]] = target
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                    and node.attr.startswith("_") and not node.attr.startswith("__")
                    and f"{aliases[node.value.id]}.{node.attr}" not in MODULES):
                bad.append(f"{m}:{node.lineno} takes {aliases[node.value.id]}.{node.attr}")
    assert not bad, "\n".join(bad)


def test_no_module_over_about_400_lines():
    long = {m: n for m, p in MODULES.items()
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"
