"""Files the tests make and look for: ``.npy`` inputs, and the temporary outputs a run must not leave."""

from __future__ import annotations

import glob
import os

import numpy as np

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0  # root writes into folders without write permission


def save_npy(path, a, **kw):
    """``np.save(path, a)``; the path as a string."""
    np.save(path, a, **kw)
    return str(path)


def leftover_temps(folder):
    """The temporary outputs (``*.part``, hidden or not) left in ``folder``, sorted."""
    return sorted(glob.glob(os.path.join(str(folder), "*.part")) + glob.glob(os.path.join(str(folder), ".*.part")))
