"""Kernel launches as programmatic dependents (PDL, compute capability 9.0 and newer).

A kernel launched with the attribute CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION may
start while the kernel before it on the stream is still draining: its blocks take the SMs that
kernel leaves and wait (``griddepcontrol.wait``, kernels/tile/tile_state.cuh) until it has ended and
its memory is visible, so the launch's latency overlaps the other kernel's tail.  CuPy's launches
take no attributes, so this calls ``cuLaunchKernelEx`` through ctypes: about 0.6 us more host
time per launch than CuPy's ``launchKernel`` (benchmarks/logs/probe-pdl-graph-h100.txt), paid
only where the GPU, not the host, bounds a loop of calls.
"""

from __future__ import annotations

import ctypes

# CUlaunchAttributeID (cuda.h)
_PROGRAMMATIC_STREAM_SERIALIZATION = 6


class _Attribute(ctypes.Structure):
    """CUlaunchAttribute: an id and a 64-byte value union."""
    _fields_ = [("id", ctypes.c_uint32), ("pad", ctypes.c_uint32), ("value", ctypes.c_ubyte * 64)]


class _Config(ctypes.Structure):
    """CUlaunchConfig."""
    _fields_ = [("grid_x", ctypes.c_uint), ("grid_y", ctypes.c_uint), ("grid_z", ctypes.c_uint),
                ("block_x", ctypes.c_uint), ("block_y", ctypes.c_uint), ("block_z", ctypes.c_uint),
                ("smem", ctypes.c_uint), ("stream", ctypes.c_void_p), ("attrs", ctypes.POINTER(_Attribute)),
                ("num_attrs", ctypes.c_uint)]


def _launch_kernel_ex():
    """The driver's cuLaunchKernelEx (CUDA 12.0+), or None."""
    try:
        fn = ctypes.CDLL("libcuda.so.1").cuLaunchKernelEx
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.POINTER(_Config), ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    fn.restype = ctypes.c_int
    return fn


_LAUNCH_EX = _launch_kernel_ex()


def available() -> bool:
    return _LAUNCH_EX is not None


class DependentLaunch:
    """Launches of one kernel (1-D grid, ``block_threads`` threads) as programmatic dependents:
    ``launch(grid, smem, stream_ptr, params_ptr)`` with ``params_ptr`` the kernel's ``void*[]``
    of arguments, as cuLaunchKernel takes them."""

    def __init__(self, kernel_ptr: int, block_threads: int):
        self._attribute = _Attribute(_PROGRAMMATIC_STREAM_SERIALIZATION)
        self._attribute.value[0] = 1  # allowed
        self._config = _Config(1, 1, 1, block_threads, 1, 1, 0, None, ctypes.pointer(self._attribute), 1)
        self._config_ref = ctypes.byref(self._config)
        self._kernel = ctypes.c_void_p(kernel_ptr)

    def __call__(self, grid: int, smem: int, stream_ptr: int, params_ptr: int) -> None:
        config = self._config
        config.grid_x, config.smem, config.stream = grid, smem, stream_ptr
        status = _LAUNCH_EX(self._config_ref, self._kernel, params_ptr, None)
        if status:
            from cupy.cuda.driver import CUDADriverError

            raise CUDADriverError(status)
