"""Whether this machine has a CUDA GPU that CuPy can use."""

from __future__ import annotations

import pytest


def _gpu_available() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - no CuPy, no driver, no device: all mean "no GPU"
        return False


HAVE_GPU = _gpu_available()


def require_gpu():
    """CuPy, or skip the calling test module: no CuPy, no driver or no device."""
    cp = pytest.importorskip("cupy")
    if not HAVE_GPU:
        pytest.skip("needs a CUDA GPU", allow_module_level=True)
    return cp
