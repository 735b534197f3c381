// distscan/kernels/agent/agent_policy.cuh -- the launch shapes of the kernels: the template
// arguments the host picks per item size (distscan/backends/cuda/compile.py: Tuning, names()),
// grouped so that each kernel takes only the ones it uses.
#pragma once
#include "../block/block_scan.cuh"

namespace distscan {

// Threads per block of the reduce, add and column kernels.
constexpr int REDUCE_THREADS = 256;

// Threads of the service warp a look-ahead block is launched with beyond BLOCK_THREADS
// (agent_lookahead.cuh; Tuning.launch_threads on the host mirrors it).
constexpr int LOOKAHEAD_SERVICE_THREADS = 32;

// Shared memory an SM holds for its blocks (the CUDA programming guide's table of compute
// capabilities), and what the system reserves of it for each block (from compute capability
// 8.0): the look-ahead fits its blocks' rings and static slots into it (agent_lookahead.cuh).
__host__ __device__ constexpr int sm_shared_bytes() {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ == 900 || __CUDA_ARCH__ == 1000 || __CUDA_ARCH__ == 1030
    return 228 * 1024;
#elif __CUDA_ARCH__ == 800 || __CUDA_ARCH__ == 870
    return 164 * 1024;
#elif __CUDA_ARCH__ == 750
    return 64 * 1024;
#elif __CUDA_ARCH__ < 800
    return 96 * 1024;
#else
    return 100 * 1024;  // 8.6, 8.9, 12.x
#endif
}
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
constexpr int BLOCK_RESERVED_SHARED_BYTES = 1024;
#else
constexpr int BLOCK_RESERVED_SHARED_BYTES = 0;
#endif

// The tile shape of scan_tiles_kernel (one block of BLOCK_THREADS per tile; the look-ahead's
// persistent blocks add their service warp through LookaheadPolicy):
//   BLOCK_THREADS  threads per scan block that load, scan and store a tile
//   ITEMS          items per thread (ITEMS * sizeof(item) must be a multiple of 16)
//   WINDOW         look-back window in tiles, 32 * (1..32)
//   MIN_BLOCKS     scan blocks per SM the register allocation must allow
//   BLOCK_ALGO     the scan inside a tile (block_scan.cuh)
template <int BLOCK_THREADS_, int ITEMS_, int WINDOW_, int MIN_BLOCKS_, BlockAlgorithm BLOCK_ALGO_>
struct TilePolicy {
    static constexpr int BLOCK_THREADS = BLOCK_THREADS_;
    static constexpr int ITEMS = ITEMS_;
    static constexpr int WINDOW = WINDOW_;
    static constexpr int MIN_BLOCKS = MIN_BLOCKS_;
    static constexpr BlockAlgorithm BLOCK_ALGO = BLOCK_ALGO_;
    static constexpr int WARPS = BLOCK_THREADS / 32;
    static constexpr int TILE_ITEMS = BLOCK_THREADS * ITEMS;
    static constexpr int SERVICE_THREADS = 0;                               // none beyond BLOCK_THREADS
    static constexpr int LAUNCH_THREADS = BLOCK_THREADS + SERVICE_THREADS;  // threads per block (launch bounds)
};

// "lookahead" (agent_lookahead.cuh): a TilePolicy and the ring of each persistent block:
//   STAGES  shared-memory stages per block (the launch gives AgentLookahead::SMEM_BYTES of
//           dynamic shared memory and a persistent grid)
//   DEPTH   how many of its own tiles a block reduces ahead of its scan (STAGES - DEPTH
//           tiles' loads in flight)
//   BEHIND  how the service warp publishes window words: iterations from a tile's reduction
//           to the sub-window or window total it completes
// Blocks are launched with a service warp beyond BLOCK_THREADS.
template <typename TILE_POLICY, int STAGES_, int DEPTH_, int BEHIND_>
struct LookaheadPolicy : TILE_POLICY {
    static constexpr int STAGES = STAGES_;
    static constexpr int DEPTH = DEPTH_;
    static constexpr int BEHIND = BEHIND_;
    static constexpr int SERVICE_THREADS = LOOKAHEAD_SERVICE_THREADS;
    static constexpr int LAUNCH_THREADS = TILE_POLICY::BLOCK_THREADS + SERVICE_THREADS;
};

}  // namespace distscan
