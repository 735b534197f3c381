// distscan/kernels/agent/agent_policy.cuh -- the launch shapes of the kernels (template
// arguments the host picks: distscan/backends/_cuda_compile.py).
#pragma once

namespace distscan {

// Threads per block of the reduce, add and column kernels.
constexpr int REDUCE_THREADS = 256;

}  // namespace distscan
