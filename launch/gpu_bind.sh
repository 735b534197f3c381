#!/usr/bin/env bash
# One GPU per rank: narrow CUDA_VISIBLE_DEVICES to the GPU of this rank's index on its node,
# then run the command.  Works under mpirun/mpiexec (Open MPI, MPICH/Hydra, MVAPICH) and srun.
#
#   mpirun -n 4 launch/gpu_bind.sh python -m distscan big.npy --backend cuda
#   srun --ntasks-per-node=4 launch/gpu_bind.sh python -m distscan big.npy --backend cuda
#
# GPUS_PER_NODE (default: the number of GPUs nvidia-smi lists, or the entries of an
# inherited CUDA_VISIBLE_DEVICES) sets how many GPUs a node offers; local rank i takes GPU
# i % GPUS_PER_NODE.  More ranks than GPUs is refused unless DISTSCAN_ALLOW_SHARED_GPU=1.
# distscan then sees one GPU and uses it (DISTSCAN_GPU=0).  Without this script distscan
# binds by itself (local rank via MPI_Comm_split_type); the script is for launchers or
# codes that initialise CUDA before distscan runs.
set -euo pipefail

local_rank=${OMPI_COMM_WORLD_LOCAL_RANK:-${MPI_LOCALRANKID:-${SLURM_LOCALID:-${PMIX_LOCAL_RANK:-${MV2_COMM_WORLD_LOCAL_RANK:-${PALS_LOCAL_RANKID:-}}}}}}
local_size=${OMPI_COMM_WORLD_LOCAL_SIZE:-${MPI_LOCALNRANKS:-${SLURM_NTASKS_PER_NODE:-${MV2_COMM_WORLD_LOCAL_SIZE:-}}}}
if [ -z "$local_rank" ]; then
    echo "gpu_bind.sh: no local rank in the environment (start it with mpirun, mpiexec or srun)" >&2
    exit 2
fi

if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
    IFS=',' read -r -a gpus <<< "$CUDA_VISIBLE_DEVICES"
else
    count=${GPUS_PER_NODE:-$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)}
    gpus=()
    for ((i = 0; i < ${count:-0}; i++)); do gpus+=("$i"); done
fi
n=${GPUS_PER_NODE:-${#gpus[@]}}
if [ "$n" -lt 1 ]; then
    echo "gpu_bind.sh: rank $local_rank: no GPU visible on $(hostname)" >&2
    exit 1
fi
if [ -n "$local_size" ] && [ "$local_size" -gt "$n" ] && [ "${DISTSCAN_ALLOW_SHARED_GPU:-0}" != "1" ]; then
    echo "gpu_bind.sh: $local_size ranks on $(hostname) but only $n GPUs: start at most $n ranks per node," \
         "or set DISTSCAN_ALLOW_SHARED_GPU=1 to let ranks share GPUs" >&2
    exit 1
fi
export CUDA_VISIBLE_DEVICES=${gpus[$((local_rank % n))]}
export DISTSCAN_GPU=0
# Never let NCCL or PyTorch use NVLink multicast on shared machines.
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
exec "$@"
