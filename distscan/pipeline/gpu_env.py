"""What a rank can tell of its GPU without starting CUDA: the staging the environment asks for,
whether a GPU is likely visible, and how many.  Cheap (no CuPy import, no driver call), so the
command checks its environment and ``--backend auto`` decides before CUDA's start-up code loads
(:mod:`distscan.pipeline.gpu_start`, only where a rank takes its GPU)."""

from __future__ import annotations

import importlib.util
import os
from typing import Optional

#: ``DISTSCAN_GPU_STAGING``: how host rows reach the GPU.  ``register`` (default): each host buffer
#: page-locked once (``cudaHostRegister``), then copied directly; ``pageable``: copies from the
#: buffers as they are (the driver stages them).  Measured on the H200 host (2026-11-23,
#: benchmarks/probe_command_io.py): registering 16 MiB 0.73 ms, then 54.5 GB/s each way, against
#: 7.3 GB/s (to the device) and 13.7 GB/s (back) from pageable memory.
STAGING_ENV = "DISTSCAN_GPU_STAGING"
STAGINGS = ("pageable", "register")
DEFAULT_STAGING = "register"


def staging_from_env(env=None) -> str:
    """The ``DISTSCAN_GPU_STAGING`` value, checked (``ValueError`` names the variable)."""
    value = ((os.environ if env is None else env).get(STAGING_ENV) or "").strip().lower()
    if not value:
        return DEFAULT_STAGING
    if value not in STAGINGS:
        raise ValueError(f"{STAGING_ENV} must be one of {', '.join(STAGINGS)}, got {value!r}")
    return value


def gpu_visible(env=None) -> tuple:
    """``(likely, why)``: whether this process will probably find a GPU, asked without starting CUDA
    (what ``--backend auto`` looks at: CuPy importable, an NVIDIA driver loaded, and
    ``CUDA_VISIBLE_DEVICES`` not empty).  A wrong guess costs nothing but time: the rank then
    scans on the host and the report says why."""
    env = os.environ if env is None else env
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1", "none", "NoDevFiles"):
        return False, f"CUDA_VISIBLE_DEVICES={visible!r} hides every GPU"
    if not (os.path.exists("/dev/nvidiactl") or os.path.exists("/proc/driver/nvidia/version")):
        return False, "no NVIDIA driver on this node"
    if importlib.util.find_spec("cupy") is None:
        return False, "CuPy is not installed (pip install 'distscan[gpu]')"
    return True, "a GPU is visible"


def gpu_count_guess(env=None) -> Optional[int]:
    """How many GPUs this process would see, without starting CUDA (None: cannot tell):
    ``CUDA_VISIBLE_DEVICES``' entries, else the driver's GPUs in ``/proc/driver/nvidia/gpus``."""
    env = os.environ if env is None else env
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return len([v for v in visible.split(",") if v.strip() and v.strip() != "-1"])
    try:
        return len(os.listdir("/proc/driver/nvidia/gpus"))
    except OSError:
        return None
