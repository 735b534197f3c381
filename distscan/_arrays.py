"""Array interop: the caller's array -> (NumPy or CuPy array, backend name, restore).

(CPU part; the GPU engineer extends this with CuPy/PyTorch/DLPack inputs.)
"""

from __future__ import annotations

import numpy as np


def to_native(x):
    """Return ``(array, backend_name, restore)`` for the caller's ``x``."""
    if isinstance(x, np.ndarray):
        return x, "cpu", _identity
    return np.asarray(x), "cpu", _identity


def _identity(result):
    return result
