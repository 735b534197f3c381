"""Names that a package loads on first use (PEP 562), so that what the command's start-up does not
need (the algorithms' teaching flows, the state and declared operators) is not compiled or run
by ``import distscan.cli``."""

from __future__ import annotations

import importlib
import sys


def lazy_names(package: str, names: dict) -> tuple:
    """``(__getattr__, __dir__)`` for the package ``package`` whose ``names`` (name -> module
    relative to it) load on first use; a loaded name then stays in the package's namespace."""
    def __getattr__(name):
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__():
        return sorted(set(vars(sys.modules[package])) | set(names))

    return __getattr__, __dir__
