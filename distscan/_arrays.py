"""Array interop: any supported array in, the backend's native array out, and back.

:func:`to_native` maps what a caller passes to a NumPy array (backend ``"cpu"``) or a
CuPy array (backend ``"cuda"``) without copying where the data already lives on the
right device (DLPack / ``__cuda_array_interface__``), and returns a ``restore`` that
turns a result back into the caller's kind of array:

=============================================  ==========  ===========================
input                                          backend     result
=============================================  ==========  ===========================
``numpy.ndarray``, lists, scalars              cpu         ``numpy.ndarray``
``cupy.ndarray``                               cuda        ``cupy.ndarray``
``torch.Tensor`` on a CUDA device              cuda        ``torch.Tensor``, same device
``torch.Tensor`` on the CPU                    cpu         ``torch.Tensor`` (CPU)
object with ``__cuda_array_interface__``       cuda        ``cupy.ndarray``
object with ``__dlpack__`` (CUDA device)       cuda        ``cupy.ndarray``
object with ``__dlpack__`` (CPU)               cpu         ``numpy.ndarray``
=============================================  ==========  ===========================

CuPy and torch are imported only when the input is one of theirs (or a generic
CUDA array, which needs CuPy), so CPU users need neither.
"""

from __future__ import annotations

import sys

import numpy as np

# DLPack device types
_DL_CPU = 1
_DL_CUDA = 2
_DL_CUDA_HOST = 3
_DL_CUDA_MANAGED = 13


def _module_of(x) -> str:
    return type(x).__module__.split(".", 1)[0]


def _need_cupy():
    try:
        import cupy
    except Exception as exc:  # noqa: BLE001
        raise RuntimeError(f"GPU arrays need CuPy (pip install cupy-cuda13x): {exc}") from exc
    return cupy


def as_is(r):
    """The ``restore`` of arrays that come back as they are (NumPy, CuPy)."""
    return r


def to_native(x):
    """Return ``(array, backend_name, restore)`` for any supported input.

    Raises
    ------
    RuntimeError
        If ``x`` lives on a GPU and CuPy is not installed.
    TypeError
        If ``x`` is a GPU array of a kind CuPy cannot import.
    """
    if isinstance(x, np.ndarray):
        return x, "cpu", as_is
    mod = _module_of(x)
    if mod == "cupy":
        return x, "cuda", as_is
    if mod == "torch" and "torch" in sys.modules:
        import torch

        if isinstance(x, torch.Tensor):
            t = x.detach()
            if t.is_cuda:
                cupy = _need_cupy()
                arr = cupy.from_dlpack(t)
                return arr, "cuda", lambda r: torch.from_dlpack(r)
            arr = t.resolve_conj().resolve_neg().numpy()
            return arr, "cpu", lambda r: torch.from_numpy(np.ascontiguousarray(r))
    if hasattr(x, "__cuda_array_interface__"):
        cupy = _need_cupy()
        return cupy.asarray(x), "cuda", as_is
    if hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__"):
        dev_type, _ = x.__dlpack_device__()
        if int(dev_type) in (_DL_CUDA, _DL_CUDA_MANAGED):
            cupy = _need_cupy()
            return cupy.from_dlpack(x), "cuda", as_is
        if int(dev_type) in (_DL_CPU, _DL_CUDA_HOST):
            return np.from_dlpack(x), "cpu", np.asarray
        raise TypeError(f"arrays on DLPack device type {dev_type} are not supported (CPU and CUDA are)")
    return np.asarray(x), "cpu", np.asarray


def current_device_id(arr) -> int | None:
    """CUDA device id of a native array (None for NumPy)."""
    if isinstance(arr, np.ndarray):
        return None
    dev = getattr(arr, "device", None)
    return getattr(dev, "id", None)


def foreign_device(x):
    """The CuPy ``Device`` of a GPU array that is not on the current device, for the call to make
    current (the work runs where the data is, as in torch); None for any other input."""
    mod = _module_of(x)
    if mod == "cupy":
        dev_id = current_device_id(x)
    elif mod == "torch" and "torch" in sys.modules:
        dev_id = x.device.index if getattr(x, "is_cuda", False) else None
    elif isinstance(x, np.ndarray):
        return None
    else:
        try:
            if hasattr(x, "__cuda_array_interface__"):
                dev_id = _need_cupy().asarray(x).data.device_id
            elif hasattr(x, "__dlpack_device__"):
                dev_type, dev_id = x.__dlpack_device__()
                if int(dev_type) not in (_DL_CUDA, _DL_CUDA_MANAGED):
                    return None
            else:
                return None
        except Exception:  # noqa: BLE001 - to_native, inside the call's agreement, reports it
            return None
    if dev_id is None:
        return None
    cupy = _need_cupy()
    return None if int(dev_id) == cupy.cuda.runtime.getDevice() else cupy.cuda.Device(int(dev_id))


# np.may_share_memory without its __array_function__ dispatch (the arrays here are plain ndarrays,
# which the dispatch would hand to this same function; it is most of the check's time).
ndarrays_may_share_memory = getattr(np.may_share_memory, "_implementation", np.may_share_memory)


def may_overlap(a, b) -> bool:
    """Whether two arrays of one backend may share memory (bounds only: cheap and safe)."""
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and ndarrays_may_share_memory(a, b)
    import cupy
    return isinstance(b, cupy.ndarray) and cupy.may_share_memory(a, b)
