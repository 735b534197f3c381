"""One rank per GPU: which device this rank uses.

:func:`bind_gpu` is collective over ``comm``: it finds this rank's position on its
node (``Split_type(COMM_TYPE_SHARED)``), picks a visible GPU, makes it CuPy's
current device, and agrees on the outcome so that every rank raises the same clear
error or none does.  Order of precedence for the device:

1. the ``gpu`` argument (the command's ``--gpu``);
2. the environment variable ``DISTSCAN_GPU`` (``launch/gpu_bind.sh`` sets it to 0
   after narrowing ``CUDA_VISIBLE_DEVICES`` to one GPU per rank);
3. the rank's index on its node: local rank ``i`` takes visible GPU ``i``.

A node with more ranks than visible GPUs is an error unless sharing is allowed
(``allow_shared=True`` or ``DISTSCAN_ALLOW_SHARED_GPU=1``): then local rank ``i``
takes GPU ``i % count`` (correct, slower: ranks on one GPU take turns).

:func:`ensure_device` is the non-collective variant used by :func:`distscan.scan`
when a host array is the part sent to ``backend="cuda"`` (host flags or coefficients beside a
GPU part go to the part's device, without it): it keeps a device bound earlier,
otherwise applies (1)-(2) or the launcher's local-rank variable
(``OMPI_COMM_WORLD_LOCAL_RANK``, ``MPI_LOCALRANKID``, ``SLURM_LOCALID``, ...).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional

from .dist.agree import agree, default_comm
from .dist.arguments import group_of

GPU_ENV = "DISTSCAN_GPU"
SHARED_ENV = "DISTSCAN_ALLOW_SHARED_GPU"
# Local-rank variables set by common launchers (Open MPI, MPICH/Hydra, Slurm, PMIx, MVAPICH).
LOCAL_RANK_ENVS = ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", "PMIX_LOCAL_RANK",
                   "MV2_COMM_WORLD_LOCAL_RANK", "PALS_LOCAL_RANKID")


@dataclass(frozen=True)
class Binding:
    """The GPU a rank uses, and why."""

    device: int          # CUDA device id among the visible devices
    visible: int         # number of visible devices
    local_rank: int      # rank on this node
    local_size: int      # ranks on this node
    source: str          # "argument", "environment", "local rank", "local rank (shared)"
    shared: bool         # another rank on this node uses the same device


_bound: list = []


def current() -> Optional[Binding]:
    """The binding made by :func:`bind_gpu` or :func:`ensure_device` in this process, if any."""
    return _bound[0] if _bound else None


def _truthy(text: Optional[str]) -> bool:
    return (text or "").strip().lower() in ("1", "true", "yes", "on")


def _parse_gpu(value, what: str) -> int:
    try:
        dev = int(str(value).strip())
    except ValueError:
        raise ValueError(f"{what} must be a GPU index (an integer >= 0), got {value!r}") from None
    if dev < 0:
        raise ValueError(f"{what} must be a GPU index (an integer >= 0), got {value!r}")
    return dev


def _device_count() -> int:
    try:
        import cupy
    except Exception as exc:  # noqa: BLE001
        raise RuntimeError(f"--backend cuda needs CuPy and an NVIDIA GPU (import cupy failed: {exc})") from None
    try:
        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception as exc:  # noqa: BLE001 - no driver, no device
        raise RuntimeError(f"no usable CUDA GPU on this node ({exc})") from None


def choose_device(local_rank: int, local_size: int, visible: int, *, gpu=None, allow_shared=None,
                  env=None) -> Binding:
    """Pure rule (no CUDA, no MPI): the device for ``local_rank`` of ``local_size`` ranks and ``visible`` GPUs.

    Raises
    ------
    ValueError
        A bad ``gpu``/``DISTSCAN_GPU`` value, or more ranks than GPUs on the node without sharing.
    RuntimeError
        No GPU visible.
    """
    env = os.environ if env is None else env
    if visible < 1:
        raise RuntimeError("no CUDA GPU is visible to this rank (check CUDA_VISIBLE_DEVICES)")
    if allow_shared is None:
        allow_shared = _truthy(env.get(SHARED_ENV))
    if gpu is not None:
        dev, source = _parse_gpu(gpu, "--gpu"), "argument"
    elif env.get(GPU_ENV, "").strip():
        dev, source = _parse_gpu(env[GPU_ENV], GPU_ENV), "environment"
    else:
        if local_size > visible and not allow_shared:
            raise ValueError(
                f"{local_size} ranks on this node but only {visible} GPU{'s' if visible > 1 else ''} visible: "
                f"start at most {visible} rank{'s' if visible > 1 else ''} per node, or let ranks share GPUs with "
                f"{SHARED_ENV}=1 (slower), or choose devices with {GPU_ENV} / --gpu")
        dev = local_rank % visible
        source = "local rank" if local_size <= visible else "local rank (shared)"
        return Binding(dev, visible, local_rank, local_size, source, local_size > visible)
    if dev >= visible:
        raise ValueError(f"{'--gpu' if source == 'argument' else GPU_ENV}={dev} but only {visible} "
                         f"GPU{'s are' if visible > 1 else ' is'} visible to this rank (indices 0..{visible - 1})")
    return Binding(dev, visible, local_rank, local_size, source, False)


def device_or_host(local_rank: int, local_size: int, visible: int, *, gpu=None, allow_shared=None,
                   env=None) -> tuple:
    """The file command's rule: ``(Binding, why)``, or ``(None, why)`` for a rank that scans on the host.

    As :func:`choose_device`, except that a node with more ranks than visible GPUs is not an
    error: local ranks ``0 .. visible-1`` take one GPU each and the others scan on the host
    (their engine is the CPU's; no collective depends on it), unless sharing is allowed
    (``allow_shared`` or ``DISTSCAN_ALLOW_SHARED_GPU=1``: local rank ``i`` on GPU ``i % visible``).
    No GPU visible gives ``(None, why)``.

    Raises
    ------
    ValueError
        A bad ``gpu``/``DISTSCAN_GPU`` value.
    """
    env = os.environ if env is None else env
    if visible < 1:
        return None, "no CUDA GPU is visible to this rank"
    explicit = gpu is not None or bool(env.get(GPU_ENV, "").strip())
    shared = _truthy(env.get(SHARED_ENV)) if allow_shared is None else allow_shared
    if not explicit and not shared and local_size > visible:
        if local_rank >= visible:
            return None, (f"local rank {local_rank} of {local_size} on a node with {visible} "
                          f"GPU{'s' if visible > 1 else ''}: scans on the host ({SHARED_ENV}=1 shares the GPUs)")
        return Binding(local_rank, visible, local_rank, local_size, "local rank", False), f"GPU {local_rank} (local rank)"
    binding = choose_device(local_rank, local_size, visible, gpu=gpu, allow_shared=True, env=env)
    return binding, f"GPU {binding.device} ({binding.source})"


def _use(binding: Binding) -> Binding:
    import cupy
    cupy.cuda.Device(binding.device).use()
    _bound[:] = [binding]
    return binding


def node_position(comm) -> tuple:
    """``(rank on this node, ranks on this node)``: collective (``Split_type``) over ``comm``
    (one no collective can run over, ``COMM_NULL`` say, is refused here: ``group_of``)."""
    if group_of(comm) is None:
        return 0, 1
    from mpi4py import MPI

    node = comm.Split_type(MPI.COMM_TYPE_SHARED, key=comm.Get_rank())
    try:
        return node.Get_rank(), node.Get_size()
    finally:
        node.Free()


def bind_gpu(comm=None, gpu=None, allow_shared=None) -> Binding:
    """Collective over ``comm``: choose this rank's GPU and make it the current device.

    Parameters
    ----------
    comm : mpi4py communicator, optional
        Default ``COMM_WORLD`` (a single process without mpi4py).
    gpu : int or str, optional
        Use this visible device (overrides ``DISTSCAN_GPU`` and the local rank).
    allow_shared : bool, optional
        Allow more ranks than GPUs on a node (default: ``DISTSCAN_ALLOW_SHARED_GPU``).

    Returns
    -------
    Binding

    Raises
    ------
    ValueError
        More ranks than GPUs on some node without sharing, or a bad device index; raised on every rank.
    RuntimeError, DistScanError
        No CuPy / no GPU on some rank; raised on every rank.
    """
    comm = default_comm(comm)
    local_rank, local_size = node_position(comm)
    error, binding = None, None
    try:
        binding = _use(choose_device(local_rank, local_size, _device_count(), gpu=gpu, allow_shared=allow_shared))
    except Exception as exc:  # noqa: BLE001 - agreed on every rank
        error = exc
    agree(comm, error)
    return binding


def local_rank_from_env(env) -> Optional[tuple]:
    for name in LOCAL_RANK_ENVS:
        if env.get(name, "").strip().isdigit():
            size = None
            for sname in ("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"):
                if env.get(sname, "").strip().isdigit():
                    size = int(env[sname])
                    break
            rank = int(env[name])
            return rank, size if size is not None else rank + 1
    return None


def ensure_device(env=None) -> Optional[Binding]:
    """Non-collective: keep an earlier binding, else bind from the argument-free rules.

    Used where a collective is not allowed (inside :func:`distscan.scan`, before its
    agreement).  Without an earlier :func:`bind_gpu`, ``DISTSCAN_GPU``, or a launcher's
    local-rank variable, the current CuPy device stays (returns None).
    """
    if _bound:
        return _bound[0]
    env = os.environ if env is None else env
    has_gpu_env = bool(env.get(GPU_ENV, "").strip())
    local = local_rank_from_env(env)
    if not has_gpu_env and local is None:
        return None
    local_rank, local_size = local if local is not None else (0, 1)
    return _use(choose_device(local_rank, local_size, _device_count(), env=env))
